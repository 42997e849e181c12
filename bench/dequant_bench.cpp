// The cost of keeping a layer's weight quantized: a linear layer of the
// Qwen-Image transformer's width (3072 x 3072) over a step's tokens, with
// its weight in bf16 against the same layer whose weight is GGUF blocks
// dequantized to bf16 as it runs (what a q4 variant does for every layer of
// every step). Rounds alternate; the ratio of the medians is the overhead
// (target: <= 1.3). Weights are random blocks with finite scales.
//
//   ./build/bin/dequant_bench [rounds] [tokens] [width]
//   (default: 5 rounds, 1024 tokens, 3072)

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <mold/tensor/ggml_quant.hpp>
#include <mold/tensor/linear_from_blocks.hpp>
#include <mold/tensor/quantized_tensor.hpp>
#include <random>
#include <vector>

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

at::Tensor random_blocks(mold::GgmlType type, std::int64_t elements,
                         std::mt19937& random) {
  const mold::GgmlTypeInfo& info = *mold::ggml_type_info(std::uint32_t(type));
  const std::int64_t blocks = elements / std::int64_t(info.block_elements);
  std::vector<std::uint8_t> bytes(std::size_t(blocks) * info.block_bytes);
  for (auto& b : bytes) b = std::uint8_t(random());
  const std::size_t scale_at = type == mold::GgmlType::q6_k ? 208 : 0;
  for (std::int64_t i = 0; i < blocks; ++i) {
    std::uint8_t* block = bytes.data() + std::size_t(i) * info.block_bytes;
    const std::uint16_t small = at::Half(0.001f).x;
    std::memcpy(block + scale_at, &small, 2);
    if (type != mold::GgmlType::q6_k && type != mold::GgmlType::q4_0 &&
        type != mold::GgmlType::q8_0 && type != mold::GgmlType::q5_0)
      std::memcpy(block + 2, &small, 2);
  }
  return at::from_blob(bytes.data(), {std::int64_t(bytes.size())}, at::kByte)
      .clone();
}

double seconds(const std::function<void()>& f) {
  const auto t = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

// A modulation layer (6 x width outputs) over 1 to 32 activation rows: the
// bf16 product, the kept buffer's dequantization and product, and the
// product straight from the blocks (what a model uses up to
// kMaxRowsFromBlocks rows).
void few_rows(int rounds, std::int64_t width, std::mt19937& random) {
  const std::int64_t outputs = 6 * width;
  fmt::print(
      "modulation {} x {}, few rows: ms for bf16 / dequantized into the kept "
      "buffer + product / from the blocks (used up to {} rows)\n",
      outputs, width, mold::kMaxRowsFromBlocks);
  for (const mold::GgmlType type :
       {mold::GgmlType::q4_0, mold::GgmlType::q8_0, mold::GgmlType::q4_k}) {
    const mold::QuantizedTensor q = mold::make_quantized(
        type, {outputs, width}, random_blocks(type, outputs * width, random));
    const at::Tensor w = mold::dequantize(q, at::kBFloat16);
    at::Tensor scratch = at::empty({outputs * width}, at::kBFloat16);
    std::string line;
    for (const std::int64_t rows : {1, 2, 4, 8, 16}) {
      const at::Tensor x = at::randn({rows, width}).to(at::kBFloat16);
      std::vector<double> plain, buffered, direct;
      at::Tensor sink;
      for (int r = 0; r < rounds; ++r) {
        plain.push_back(seconds([&] { sink = at::linear(x, w); }));
        buffered.push_back(seconds([&] {
          mold::dequantize_into(q, scratch);
          sink = at::linear(x, scratch.view({outputs, width}));
        }));
        direct.push_back(seconds(
            [&] { sink = mold::linear_from_blocks(x, q, at::Tensor()); }));
      }
      line += fmt::format(" | {} rows {:.1f} / {:.1f} / {:.1f}", rows,
                          median(plain) * 1000, median(buffered) * 1000,
                          median(direct) * 1000);
    }
    fmt::print("  {:<5}{}\n", mold::ggml_type_name(std::uint32_t(type)), line);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const std::int64_t tokens = argc > 2 ? std::max(1, std::atoi(argv[2])) : 1024;
  const std::int64_t width =
      argc > 3 ? std::max(256, std::atoi(argv[3]) / 256 * 256) : 3072;
  std::mt19937 random(1);
  const at::Tensor x = at::randn({tokens, width}).to(at::kBFloat16);
  fmt::print(
      "linear {} x {} over {} tokens (bf16 compute), {} rounds, alternating\n",
      width, width, tokens, rounds);
  for (const mold::GgmlType type :
       {mold::GgmlType::q4_0, mold::GgmlType::q8_0, mold::GgmlType::q4_k,
        mold::GgmlType::q5_k, mold::GgmlType::q6_k}) {
    const mold::QuantizedTensor q = mold::make_quantized(
        type, {width, width}, random_blocks(type, width * width, random));
    const at::Tensor w = mold::dequantize(q, at::kBFloat16);
    // The models' way: one buffer per layer, reused (Module::weight(name,
    // scratch)); the dequantization alone, then the product on it.
    at::Tensor scratch = at::empty({width * width}, at::kBFloat16);
    mold::dequantize_into(q, scratch);
    std::vector<double> plain, quantized, ops, alone, reused;
    at::Tensor sink;
    for (int r = 0; r < rounds; ++r) {
      alone.push_back(seconds([&] { mold::dequantize_into(q, scratch); }));
      reused.push_back(seconds([&] {
        mold::dequantize_into(q, scratch);
        sink = at::linear(x, scratch.view({width, width}));
      }));
      plain.push_back(seconds([&] { sink = at::linear(x, w); }));
      quantized.push_back(seconds(
          [&] { sink = at::linear(x, mold::dequantize(q, at::kBFloat16)); }));
      ops.push_back(seconds([&] {
        sink = at::linear(x, mold::dequantize_by_tensor_ops(q, at::kBFloat16));
      }));
    }
    const double p = median(plain), d = median(quantized), o = median(ops);
    fmt::print(
        "  {:<5} {:5.2f} bits/weight: bf16 {:7.1f} ms; dequantized per call "
        "{:7.1f} ms, ratio {:.3f} (target <= 1.3); by tensor ops {:7.1f} ms, "
        "ratio {:.3f}\n",
        mold::ggml_type_name(std::uint32_t(type)),
        double(q.bytes()) * 8 / double(width * width), p * 1000, d * 1000,
        d / p, o * 1000, o / p);
    const double a = median(alone), u = median(reused);
    fmt::print(
        "        into a reused buffer: dequantize {:6.1f} ms ({:.2f} ns a "
        "weight), with the product {:6.1f} ms, ratio {:.3f}\n",
        a * 1000, a * 1e9 / double(width * width), u * 1000, u / p);
  }
  few_rows(rounds, width, random);
  return 0;
}
