// The profiler's HTML report opened in a real browser, as a person would:
// headless Chromium (Debian's chromium, installed by scripts/install-deps.sh)
// parses it into the charts' elements and renders it; the screenshot shows
// the charts' lines and the verdict's colour.

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <mold/runtime/png.hpp>
#include <string>
#include <vector>

#include "support/paths.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using mold::test::TempDir;

using mold::test::run_molddiag_measured;

namespace {

/// molddiag, its process memory measured as it is (measured_memory_env).
const char* kChromium = "/usr/bin/chromium";

/// chromium --headless ARGS file://PAGE, within two minutes.
mold::test::ProcessResult chromium(const TempDir& home,
                                   std::vector<std::string> args,
                                   const std::string& page) {
  std::vector<std::string> all = {
      "120",
      kChromium,
      "--headless",
      "--no-sandbox",  // CI runs as root
      "--disable-gpu",
      "--hide-scrollbars",
      "--user-data-dir=" + home.path() + "/profile"};
  all.insert(all.end(), args.begin(), args.end());
  all.push_back("file://" + page);
  return mold::test::run_process("/usr/bin/timeout", all,
                                 mold::test::isolated_env(home));
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1))
    ++n;
  return n;
}

}  // namespace

TEST_CASE("the HTML report opens in headless Chromium with its charts",
          "[cli][leak][browser]") {
  INFO("the browser tests need Debian's chromium: run scripts/install-deps.sh");
  REQUIRE(fs::exists(kChromium));
  TempDir dir;
  const std::string page = dir.path() + "/report.html";
  const auto r =
      run_molddiag_measured({"leak", "faulty-leak:denoise", "--tiny",
                             "--plugin-dir", mold::test::kFaultyPluginDir,
                             "--images", "12", "--html", page, "--quiet"});
  INFO(r.err);
  REQUIRE(r.exit_code == 3);

  // The DOM the browser built from it: every chart an SVG with its series.
  const auto dom = chromium(dir, {"--dump-dom"}, page);
  INFO(dom.err);
  REQUIRE(dom.exit_code == 0);
  for (const char* id : {"memory-per-image", "host-per-image", "peak-per-phase",
                         "unaccounted-per-phase", "estimate-vs-measured"})
    CHECK_THAT(dom.out, Catch::Contains(std::string("<svg id=\"") + id));
  CHECK(count(dom.out, "<polyline") >= 3 + 3 + 3);  // memory, host, phases x 2
  CHECK(count(dom.out, "class=\"bar ") == 6);       // 3 phases x 2 bars
  CHECK_THAT(dom.out, Catch::Contains("class=\"verdict leak\""));

  // What it looks like: the allocated line's blue and the verdict's red.
  const std::string shot = dir.path() + "/report.png";
  const auto png =
      chromium(dir, {"--window-size=1000,2600", "--screenshot=" + shot}, page);
  INFO(png.err);
  REQUIRE(png.exit_code == 0);
  const mold::PngImage image = mold::read_png(shot);
  REQUIRE(image.height == 2600);
  REQUIRE(image.width == 1000);
  auto pixels_near = [&](int r0, int g0, int b0) {
    std::size_t n = 0;
    for (std::size_t i = 0; i + 2 < image.rgb.size(); i += 3)
      if (std::abs(image.rgb[i] - r0) + std::abs(image.rgb[i + 1] - g0) +
              std::abs(image.rgb[i + 2] - b0) <
          30)
        ++n;
    return n;
  };
  CHECK(pixels_near(0x1a, 0x73, 0xe8) > 2000u);  // lines and bars
  CHECK(pixels_near(0xfc, 0xe8, 0xe6) > 5000u);  // the leak verdict's box
}
