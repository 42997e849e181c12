// The cost of a quantized variant's denoiser step: the Qwen-Image
// transformer at its published width (24 heads of 128, text 3584), one
// dual-stream block, over a step's tokens, with bf16 weights against the
// same model with its matrices kept as Q8_0, Q4_0 and Q4_K blocks (the q8
// and q4 variants, the published q4 files' type), each dequantized to bf16
// as its layer runs, or multiplied from its blocks where it takes a few rows
// (the modulation). Every block of the published model's 60 is alike, so
// the ratio of one block's step is the step's. Rounds alternate; the ratio
// of the medians is the overhead (target: <= 1.2, issue 42). Weights are
// seeded (the model's own init).
//
//   ./build/bin/quantized_step_bench [rounds] [image tokens] [text tokens]
//   (default: 3 rounds, 1024 image tokens (a 512x512 image), 64 text)

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mold/device/cpu_backend.hpp>
#include <mold/model/denoiser.hpp>
#include <mold/plugin/plugin_loader.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/tensor/linear_from_blocks.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench_paths.hpp"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The step's extra work, timed alone: every matrix that takes a step's
// tokens dequantized into one buffer (as the forward does), and the ones
// that take a row per image (the modulations, the timestep's MLP, the
// output norm's) multiplied from their blocks by one bf16 row.
void where_time_goes(const char* name, const mold::Module& model, int rounds) {
  const auto per_image = [](const std::string& m) {
    return m.find("_mod.") != std::string::npos ||
           m.rfind("time_text_embed.", 0) == 0 || m.rfind("norm_out.", 0) == 0;
  };
  std::vector<double> dequantized, from_blocks;
  std::size_t dequantized_weights = 0, from_block_weights = 0;
  at::Tensor buffer, sink;
  for (int r = 0; r < rounds; ++r) {
    double d = 0, f = 0;
    dequantized_weights = from_block_weights = 0;
    for (const auto& [matrix, q] : model.quantized()) {
      const auto t = std::chrono::steady_clock::now();
      if (per_image(matrix)) {
        sink = mold::linear_from_blocks(
            at::ones({1, q.shape[1]}, at::kBFloat16), q, at::Tensor());
        f += std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
                 .count();
        from_block_weights += std::size_t(q.numel());
        continue;
      }
      if (!buffer.defined() || buffer.numel() < q.numel())
        buffer = at::empty({q.numel()}, at::kBFloat16);
      at::Tensor out = buffer.narrow(0, 0, q.numel());
      mold::dequantize_into(q, out);
      d += std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
               .count();
      dequantized_weights += std::size_t(q.numel());
    }
    dequantized.push_back(d);
    from_blocks.push_back(f);
  }
  fmt::print(
      "  {:5} dequantized: {:.1f} M weights in {:6.1f} ms; from the blocks "
      "(a row per image): {:.1f} M weights in {:5.1f} ms\n",
      name, double(dequantized_weights) / 1e6, median(dequantized) * 1000,
      double(from_block_weights) / 1e6, median(from_blocks) * 1000);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const int image_tokens = argc > 2 ? std::max(4, std::atoi(argv[2])) : 1024;
  const int text_tokens = argc > 3 ? std::max(1, std::atoi(argv[3])) : 64;
  // The tracking allocator, installed before any tensor: its counts.
  const auto cpu = mold::CpuBackend::instance();
  mold::Registry registry;
  mold::PluginLoader(registry).load_directory(mold_bench::kPluginDir);
  const mold::ModelFamily* family = registry.family("qwen_image");
  if (!family || !family->make_transformer) {
    std::fprintf(stderr, "no qwen_image plugin in %s\n",
                 mold_bench::kPluginDir);
    return 1;
  }
  const std::string config = "quantized_step_bench_config.json";
  std::ofstream(config)
      << R"({"_class_name": "QwenImageTransformer2DModel", "num_layers": 1})";
  const mold::ArchSpec arch = mold::ArchSpec::from_config(config);

  // A square-ish latent with image_tokens 2x2 patches.
  const int rows = int(std::sqrt(double(image_tokens)));
  const int cols = image_tokens / rows;
  at::manual_seed(0);
  mold::DenoiserInput in;
  in.latents = at::randn({1, 16, 2 * rows, 2 * cols}).to(at::kBFloat16);
  in.timestep = at::full({1}, 0.5);
  in.text = at::randn({1, text_tokens, 3584}).to(at::kBFloat16);
  in.text_mask = at::ones({1, text_tokens}, at::kBool);

  struct Variant {
    const char* name;
    std::optional<mold::GgmlType> type;
    std::unique_ptr<mold::Denoiser> model;
    std::vector<double> times;
  };
  std::vector<Variant> variants;
  variants.push_back({"bf16", std::nullopt, nullptr, {}});
  variants.push_back({"Q8_0", mold::GgmlType::q8_0, nullptr, {}});
  variants.push_back({"Q4_0", mold::GgmlType::q4_0, nullptr, {}});
  variants.push_back({"Q4_K", mold::GgmlType::q4_k, nullptr, {}});
  for (auto& v : variants) {
    v.model = family->make_transformer(arch);
    v.model->init_from_seed(1, c10::Device(c10::kCPU), at::kBFloat16, v.type);
  }
  std::remove(config.c_str());
  fmt::print(
      "qwen_image transformer block, width 3072, {} image + {} text tokens, "
      "bf16 activations, {} threads; resident: {}\n",
      rows * cols, text_tokens, at::get_num_threads(), [&] {
        std::string s;
        for (const auto& v : variants)
          s += fmt::format("{}{} {:.1f} MiB", s.empty() ? "" : ", ", v.name,
                           double(v.model->resident_bytes()) / (1 << 20));
        return s;
      }());
  at::NoGradGuard no_grad;
  // As a pipeline's denoise phase runs its steps: each model's weight buffer
  // kept from one forward to the next.
  std::vector<std::unique_ptr<mold::Module::KeepWeightBuffer>> kept;
  for (auto& v : variants)
    kept.push_back(std::make_unique<mold::Module::KeepWeightBuffer>(*v.model));
  // Warm up; what each forward leaves allocated is its kept dequantization
  // buffer: the largest matrix it dequantized (the estimates'
  // dequantized_weights term on the cpu, `molddiag estimate --quantized`).
  std::string buffers;
  for (auto& v : variants) {
    const mold::Bytes before = cpu->stats().allocated;
    v.model->forward(in);
    buffers +=
        fmt::format("{}{} {:.1f} MiB", buffers.empty() ? "" : ", ", v.name,
                    double(cpu->stats().allocated - before) / (1 << 20));
  }
  fmt::print("kept dequantization buffer: {}\n", buffers);
  for (int r = 0; r < rounds; ++r)
    for (auto& v : variants) {
      const auto t = std::chrono::steady_clock::now();
      v.model->forward(in);
      v.times.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
              .count());
    }
  const double dense = median(variants[0].times);
  for (const auto& v : variants)
    fmt::print("  {:5} step {:7.3f} s (median of {}), {:.3f}x of bf16\n",
               v.name, median(v.times), rounds, median(v.times) / dense);
  fmt::print(
      "where a quantized step's time goes beyond the products (medians of "
      "{}):\n",
      rounds);
  for (const auto& v : variants)
    if (v.type) where_time_goes(v.name, *v.model, rounds);
  return 0;
}
