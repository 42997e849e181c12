// This machine's own matrix-product speed at the shapes of the published
// Z-Image transformer (dim 3840, SwiGLU 10240, 30 layers and 2 + 2 refiner
// layers; Tongyi-MAI/Z-Image-Turbo), through libtorch's at::linear in float32
// (the BLAS that libblas.so.3 resolves to) and bfloat16 (oneDNN), side by side
// in one run. Then a denoise step's matrix products at those rates: the time a
// step cannot beat on this machine, to read a measured step against (its
// FLOPs / its time is the rate it achieved; bench/published/ measures it).
//
//   ./build/bin/gemm_bench [image tokens] [caption tokens] [seconds per shape]
//   (default: 256 image tokens (256 x 256 px), 32 caption tokens, 0.5 s)

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <mold/device/blas_library.hpp>
#include <mold/device/cpu_matmul_kernel.hpp>
#include <mold/tensor/gemm_rate.hpp>
#include <string>
#include <vector>

#include "zimage_shapes.hpp"

int main(int argc, char** argv) {
  const std::int64_t image_tokens = argc > 1 ? std::stoll(argv[1]) : 256;
  const std::int64_t caption_tokens = argc > 2 ? std::stoll(argv[2]) : 32;
  const double seconds = argc > 3 ? std::stod(argv[3]) : 0.5;
  if (image_tokens < 1 || caption_tokens < 1 || seconds <= 0) {
    fmt::print(stderr,
               "gemm_bench: give image tokens >= 1, caption tokens >= 1 and "
               "seconds > 0\n");
    return 2;
  }
  const std::int64_t layers = mold_bench::kZImageLayers,
                     refiners = mold_bench::kZImageRefiners;
  const mold::BlasLibrary blas = mold::loaded_blas_library();
  fmt::print("libtorch threads {}; BLAS {} ({})\n", at::get_num_threads(),
             mold::to_string(blas.kind), blas.path);
  if (blas.slow()) fmt::print("warning: {}\n", mold::blas_advice(blas));
  const auto cpu = mold::host_cpu_features();
  if (const auto advice =
          mold::openblas_core_advice(blas, cpu.avx512_core, cpu.avx2);
      !advice.empty())
    fmt::print("warning: {}\n", advice);
  fmt::print("bfloat16 products: {}\n",
             mold::to_string(mold::host_cpu_matmul_kernel()));

  // The main layers see every token; the refiners see the image tokens (noise
  // refiner) or the caption tokens (context refiner) alone.
  const std::int64_t tokens = image_tokens + caption_tokens;
  fmt::print(
      "\nat::linear, {} tokens ({} image + {} caption), median of >= {} s:\n",
      tokens, image_tokens, caption_tokens, seconds);
  fmt::print("{:<26} {:>14} {:>12} {:>12} {:>8}\n", "shape", "[rows,in,out]",
             "f32 GFLOP/s", "bf16 GFLOP/s", "bf16/f32");
  double step_flops = 0, step_f32 = 0, step_bf16 = 0;
  for (const mold_bench::ZImageLinear& linear : mold_bench::zimage_linears()) {
    const mold::GemmShape main{tokens, linear.in, linear.out};
    const mold::GemmRate f32 = mold::measure_gemm(main, at::kFloat, seconds);
    const mold::GemmRate bf16 =
        mold::measure_gemm(main, at::kBFloat16, seconds);
    fmt::print("{:<26} {:>14} {:12.1f} {:12.1f} {:8.2f}\n", linear.name,
               fmt::format("[{},{},{}]", tokens, linear.in, linear.out),
               f32.gflops, bf16.gflops, bf16.gflops / f32.gflops);
    // Per step: the main layers at these rates, the refiners' fewer tokens at
    // the same rate (a lower bound on their time: fewer rows run no faster).
    const double count = double(linear.per_layer);
    const double refiner_flops =
        double(refiners) * count *
        (mold::GemmShape{image_tokens, linear.in, linear.out}.flops() +
         mold::GemmShape{caption_tokens, linear.in, linear.out}.flops());
    const double flops = double(layers) * count * main.flops() + refiner_flops;
    step_flops += flops;
    step_f32 += flops / (f32.gflops * 1e9);
    step_bf16 += flops / (bf16.gflops * 1e9);
  }
  fmt::print(
      "\none denoise step's layer matrix products: {:.1f} GFLOP; at these "
      "rates {:.2f} s in float32, {:.2f} s in bfloat16\n"
      "(a step's measured time above these is spent outside the matrix "
      "products: attention, norms, rotary embedding, conversions)\n",
      step_flops / 1e9, step_f32, step_bf16);
  return 0;
}
