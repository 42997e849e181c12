// mold run with the Qwen-Image family, the real binary: text-to-image, the
// incident's edit model (qwen-image-edit-2511:q4, tiny, seeded) with source
// images and a batch, its plan (vision_encode, vae_encode and the quantized
// transformer's bytes), true CFG, and the failure paths of --image.

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mold/runtime/png.hpp>
#include <nlohmann/json.hpp>

#include "support/process.hpp"
#include "support/source_images.hpp"

namespace fs = std::filesystem;
using mold::test::run_mold;
using mold::test::TempDir;

namespace {

std::vector<std::string> edit_args(const TempDir& out,
                                   const std::vector<std::string>& images,
                                   std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"run",      "qwen-image-edit-2511:q4",
                                   "--tiny",   "make it blue",
                                   "--steps",  "2",
                                   "--output", out.path()};
  for (const auto& image : images) {
    args.push_back("--image");
    args.push_back(image);
  }
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

TEST_CASE("mold run qwen-image --tiny makes an image from text",
          "[mold][run][qwen_image]") {
  TempDir out;
  const auto r = run_mold({"run", "qwen-image", "a red fox in the snow",
                           "--tiny", "--width", "64", "--height", "48",
                           "--steps", "2", "--output", out.path()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto image = mold::read_png(fs::path(out.path()) / "qwen-image-0.png");
  CHECK(image.width == 64);
  CHECK(image.height == 48);
  CHECK(image.text.at("model") == "qwen-image");
  CHECK(image.text.at("seeded_weights") == "true");
  CHECK_THAT(r.err, Catch::Contains("text_encode: done") &&
                        Catch::Contains("after the template's") &&
                        Catch::Contains("denoise: step 2/2") &&
                        Catch::Contains("vae_decode: done"));
  CHECK_THAT(r.err, !Catch::Contains("vae_encode"));
}

TEST_CASE(
    "mold run qwen-image-edit-2511:q4 --tiny --image x.png --batch 2 writes "
    "two edits",
    "[mold][run][qwen_image]") {
  TempDir out;
  const std::string source =
      mold::test::write_source_png(out.path(), "x.png", 100, 164);
  const auto r = run_mold(edit_args(out, {source}, {"--batch", "2"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* name :
       {"qwen-image-edit-2511-0.png", "qwen-image-edit-2511-1.png"}) {
    INFO(name);
    const auto image = mold::read_png(fs::path(out.path()) / name);
    // The size follows the source image: 100x164 at 256^2 (the tiny
    // architecture's VAE area) is 192x320.
    CHECK(image.width == 192);
    CHECK(image.height == 320);
    CHECK(image.text.at("variant") == "q4");
  }
  // Image 2 reuses the conditioning image 1 encoded (the same prompt and
  // source image), and is the image a run of its seed alone makes.
  CHECK_THAT(r.err, Catch::Contains("[1/2] vision_encode: done") &&
                        Catch::Contains("[1/2] vae_encode: done") &&
                        Catch::Contains("[2/2] vision_encode: reused (kept "
                                        "from the last image with this "
                                        "prompt and these images") &&
                        Catch::Contains("[2/2] text_encode: reused") &&
                        Catch::Contains("[2/2] vae_encode: reused") &&
                        Catch::Contains("[2/2] vae_decode: done"));
  TempDir single;
  const auto alone = run_mold(edit_args(single, {source}, {"--seed", "1"}));
  REQUIRE(alone.exit_code == 0);
  CHECK(
      mold::read_png(fs::path(single.path()) / "qwen-image-edit-2511-1.png")
          .rgb ==
      mold::read_png(fs::path(out.path()) / "qwen-image-edit-2511-1.png").rgb);
}

TEST_CASE(
    "mold run --plan of the edit shows vision_encode, vae_encode and the q4 "
    "transformer's bytes",
    "[mold][run][qwen_image]") {
  TempDir out;
  const std::string a =
      mold::test::write_source_png(out.path(), "a.png", 100, 164);
  const std::string b =
      mold::test::write_source_png(out.path(), "b.png", 80, 60);
  auto plan = [&](const std::string& variant) {
    auto args = edit_args(out, {a, b}, {"--plan", "--json"});
    args[1] = "qwen-image-edit-2511:" + variant;
    const auto r = run_mold(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out);
  };
  const auto q4 = plan("q4");
  std::vector<std::string> phases;
  std::uint64_t q4_transformer = 0;
  for (const auto& p : q4["phases"]) {
    phases.push_back(p["phase"]);
    if (p["phase"] == "denoise") q4_transformer = p["weights_to_load_bytes"];
  }
  CHECK(phases == std::vector<std::string>{"vision_encode", "text_encode",
                                           "vae_encode", "vae_encode",
                                           "denoise", "vae_decode"});
  for (const auto& p : q4["phases"])
    if (p["phase"] == "vae_encode") CHECK(p["estimate_bytes"] > 0);
  // The q4 transformer is ~4.5 bits a weight where bf16 (float32 in --tiny)
  // is 32: well under a quarter.
  const auto dense = plan("bf16");
  std::uint64_t dense_transformer = 0;
  for (const auto& p : dense["phases"])
    if (p["phase"] == "denoise") dense_transformer = p["weights_to_load_bytes"];
  CHECK(q4_transformer > 0);
  CHECK(q4_transformer * 4 < dense_transformer);
  // The q4 transformer's matrices are dequantized into a buffer as large as
  // the largest (the tiny modulation's 6 x 64 by 64, float32), added as
  // counted: the only difference between the two denoise plans.
  const auto denoise = [](const nlohmann::json& plan) {
    for (const auto& p : plan["phases"])
      if (p["phase"] == "denoise") return p;
    return nlohmann::json();
  };
  CHECK(denoise(q4)["workload"]["quantized"] == true);
  CHECK(denoise(dense)["workload"]["quantized"] == false);
  const double buffer = 6 * 64 * 64 * 4;
  CHECK(std::abs(denoise(q4)["estimate_bytes"].get<double>() -
                 denoise(dense)["estimate_bytes"].get<double>() - buffer) < 2);

  const auto text = run_mold(edit_args(out, {a}, {"--plan"}));
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.out,
             Catch::Contains("vae_encode") && Catch::Contains("vision_encode"));
}

TEST_CASE("true CFG runs the negative prompt's passes",
          "[mold][run][qwen_image]") {
  TempDir out;
  const std::string source =
      mold::test::write_source_png(out.path(), "x.png", 64, 64);
  auto text_encodes = [&](std::vector<std::string> more) {
    more.push_back("--json");
    const auto r = run_mold(edit_args(out, {source}, more));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    int encodes = 0;
    const nlohmann::json report = nlohmann::json::parse(r.out);
    for (const auto& p : report["phases"])
      if (p["phase"] == "text_encode") ++encodes;
    return encodes;
  };
  CHECK(text_encodes({"--negative", "blurry", "--guidance", "4"}) == 2);
  // As diffusers: an empty negative prompt is a negative prompt (true CFG
  // with it); none given, no true CFG; a scale of 1 or less, none either.
  CHECK(text_encodes({"--negative", "", "--guidance", "4"}) == 2);
  CHECK(text_encodes({"--guidance", "4"}) == 1);
  CHECK(text_encodes({"--negative", "", "--guidance", "1"}) == 1);
}

TEST_CASE("mold run: --image failures name the file and what to do",
          "[mold][run][qwen_image]") {
  TempDir out;
  auto r = run_mold(edit_args(out, {}));
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("--image: ") &&
                        Catch::Contains("edits images: give at least one"));

  r = run_mold(edit_args(out, {out.path() + "/missing.png"}));
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err,
             Catch::Contains("--image") && Catch::Contains("missing.png"));

  const std::string text = out.path() + "/notes.png";
  std::ofstream(text) << "not a png";
  r = run_mold(edit_args(out, {text}));
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err,
             Catch::Contains("notes.png") && Catch::Contains("not a PNG"));

  const std::string truncated =
      mold::test::write_source_png(out.path(), "cut.png", 40, 40);
  fs::resize_file(truncated, fs::file_size(truncated) / 2);
  r = run_mold(edit_args(out, {truncated}));
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("cut.png"));
  CHECK_THAT(r.err, !Catch::Contains("libc10") && !Catch::Contains("frame #"));

  r = run_mold({"run", "qwen-image", "a fox", "--tiny", "--image",
                mold::test::write_source_png(out.path(), "y.png", 32, 32),
                "--output", out.path()});
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("--image: qwen-image makes images from "
                                    "text and takes no source image"));

  // A size the user did not give follows the image: the image is named,
  // not a --height that was never passed.
  r = run_mold(edit_args(
      out, {mold::test::write_source_png(out.path(), "wide.png", 20000, 1)}));
  CHECK(r.exit_code == 2);  // a usage error: the fix is --width/--height
  CHECK_THAT(r.err, Catch::Contains("--image #1 is 20000x1") &&
                        Catch::Contains("give --width and --height") &&
                        !Catch::Contains("--height 36192"));

  const std::string small =
      mold::test::write_source_png(out.path(), "s.png", 16, 16);
  r = run_mold(edit_args(out, std::vector<std::string>(9, small)));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--image is given 9 times") &&
                        Catch::Contains("at most 8"));
  // The count is checked before any file is read.
  r = run_mold(edit_args(
      out, std::vector<std::string>(
               9, (fs::path(out.path()) / "not_there.png").string())));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--image is given 9 times") &&
                        !Catch::Contains("not_there"));
  // Nothing was written by the failed runs.
  for (const auto& entry : fs::directory_iterator(out.path()))
    CHECK(entry.path().filename().string().rfind("qwen-image", 0) != 0);
}
