// What mold serve adds to a generation, side by side: the tiny Z-Image made
// in this process (runner + PNG encoding, as the server does it) and the same
// request through a real mold serve on loopback (HTTP, JSON, the queue, the
// worker thread, the PNG sent back), alternating rounds of N images with the
// model warm in both. The ratio of the medians is the overhead (target:
// <= 1.05).
//
//   ./build/bin/serve_overhead_bench [rounds] [images] [size]
//   (default: 7 rounds of 4 images of 128x128, 4 steps)

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <mold/cache/cache.hpp>
#include <mold/plugin/plugin_loader.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/runtime/pipeline.hpp>
#include <mold/runtime/png.hpp>
#include <mold/runtime/runner.hpp>
#include <nlohmann/json.hpp>

#include "bench_paths.hpp"
#include "bench_server.hpp"
#include "tiny_zimage.hpp"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  const int images = argc > 2 ? std::max(1, std::atoi(argv[2])) : 4;
  const int size = argc > 3 ? std::max(16, std::atoi(argv[3]) / 16 * 16) : 128;
  const int steps = 4;

  std::unique_ptr<mold_bench::TinyZImage> model;
  try {
    model = std::make_unique<mold_bench::TinyZImage>(mold_bench::kPluginDir);
  } catch (const std::exception& e) {
    fmt::print(stderr, "serve_overhead_bench: {}\n", e.what());
    return 1;
  }
  mold::Runner& runner = *model->runner;
  mold::GenerateRequest request;
  request.prompt = "a red fox in the snow";
  request.width = request.height = size;
  request.steps = steps;

  mold_bench::BenchServer server({"--tiny"});
  mold_bench::Connection connection(server.port());
  auto http_image =
      [&](int seed) {
        const std::string body = nlohmann::json{
            {"model", "z-image-turbo"},
            {"prompt", request.prompt},
            {"width", size},
            {"height", size},
            {"steps", steps},
            {"seed", seed}}.dump();
        const std::string text = fmt::format(
            "POST /api/generate HTTP/1.1\r\nHost: bench\r\nContent-Type: "
            "application/json\r\nContent-Length: {}\r\n\r\n{}",
            body.size(), body);
        std::string png;
        if (connection.exchange(text, &png) != 200 || png.size() < 8)
          throw std::runtime_error("the server did not make the image");
      };
  auto local_image = [&](int seed) {
    mold::GenerateRequest r = request;
    r.seed = std::uint64_t(seed);
    runner.run(
        model->pipeline->resolve_request(r),
        [&](mold::ImageRecord&, const mold::GeneratedImage& image) {
          const at::Tensor pixels = image.rgb.permute({1, 2, 0}).contiguous();
          mold::encode_png("bench", pixels.data_ptr<std::uint8_t>(), size, size,
                           {{"prompt", request.prompt}});
        });
  };
  // Warm both: the models load once and stay resident.
  local_image(0);
  http_image(0);

  std::vector<double> local, served;
  for (int round = 0; round < rounds; ++round) {
    auto t = std::chrono::steady_clock::now();
    for (int i = 0; i < images; ++i) local_image(i);
    local.push_back(seconds_since(t) / images);
    t = std::chrono::steady_clock::now();
    for (int i = 0; i < images; ++i) http_image(i);
    served.push_back(seconds_since(t) / images);
  }
  const double l = median(local), s = median(served);
  fmt::print(
      "tiny Z-Image {}x{}, {} steps, {} rounds of {} images, alternating\n"
      "  in process (runner + PNG):        {:8.2f} ms per image (median)\n"
      "  through mold serve (HTTP, queue):  {:8.2f} ms per image (median)\n"
      "  ratio served / in process: {:.3f}  (target <= 1.05)\n",
      size, size, steps, rounds, images, l * 1000, s * 1000, s / l);
  return 0;
}
