// Weights kept quantized in a module: ggml's Q4_0 / Q8_0 quantizers on
// hand-made blocks, a seeded model's q4 variant, a GGUF file of the tiny
// Qwen-Image transformer loaded with its matrices still as blocks (resident
// bytes = the file's tensor bytes) and run, the model cache's size of such
// a component, and the errors of a GGUF that does not fit the model.
#include <catch2/catch.hpp>
#include <cmath>
#include <mold/base/error.hpp>
#include <mold/device/cpu_backend.hpp>
#include <mold/model/denoiser.hpp>
#include <mold/runtime/module_component.hpp>
#include <mold/tensor/ggml_quant.hpp>
#include <mold/tensor/gguf_file.hpp>
#include <mold/tensor/linear_from_blocks.hpp>
#include <mold/tensor/quantized_tensor.hpp>
#include <random>

#include "support/aten_for_tests.hpp"
#include "support/gguf_writer.hpp"
#include "support/process.hpp"
#include "support/tensor_compare.hpp"
#include "support/test_registry.hpp"

using namespace mold;

using mold::test::relative_l2;

namespace {

std::unique_ptr<Denoiser> tiny_transformer() {
  const ModelFamily* f = mold::test::real_plugins().family("qwen_image");
  REQUIRE(f);
  return f->make_transformer(ArchSpec::parse("tiny"));
}

DenoiserInput input() {
  at::manual_seed(3);
  DenoiserInput in;
  in.latents = at::randn({1, 16, 8, 6});
  in.timestep = at::full({1}, 0.4);
  in.text = at::randn({1, 7, 64});
  in.text_mask = at::ones({1, 7}, at::kBool);
  return in;
}

/// Every parameter of `model` as a GGUF tensor: quantized ones as their
/// blocks, the others as F32.
void write_gguf(const Module& model, const std::string& path,
                const std::string& skip = "") {
  mold::test::GgufWriter writer;
  writer.metadata_string("general.architecture", "qwen_image");
  for (const auto& [name, t] : model.parameters()) {
    if (name == skip) continue;
    std::vector<std::uint64_t> dims;
    for (auto it = t.sizes().rbegin(); it != t.sizes().rend(); ++it)
      dims.push_back(std::uint64_t(*it));
    if (model.is_quantized(name)) {
      const QuantizedTensor& q = model.quantized().at(name);
      const at::Tensor blocks = q.blocks.contiguous();
      const auto* p = blocks.data_ptr<std::uint8_t>();
      writer.tensor(name, dims, std::uint32_t(q.type),
                    std::vector<std::uint8_t>(p, p + blocks.numel()));
    } else {
      const at::Tensor values = t.contiguous().to(at::kFloat);
      const auto* p =
          reinterpret_cast<const std::uint8_t*>(values.data_ptr<float>());
      writer.tensor(name, dims, std::uint32_t(GgmlType::f32),
                    std::vector<std::uint8_t>(p, p + values.nbytes()));
    }
  }
  writer.write(path);
}

}  // namespace

TEST_CASE(
    "Q8_0 and Q4_0 blocks are made as ggml's reference quantizers make "
    "them",
    "[gguf][quantize]") {
  // One block each: 32 values from -3.0 to 3.2, the largest magnitude last
  // and positive.
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = -3.0f + 6.2f * float(j) / 31.0f;
  std::vector<std::uint8_t> q8(34), q4(18);
  quantize_blocks(GgmlType::q8_0, x.data(), 32, q8.data());
  quantize_blocks(GgmlType::q4_0, x.data(), 32, q4.data());

  // Q8_0: d = amax / 127 as fp16, q = round(x / d).
  const float d8 = x[31] / 127;
  std::uint16_t h = 0;
  std::memcpy(&h, q8.data(), 2);
  CHECK(h == float_to_half(d8));
  for (int j = 0; j < 32; ++j) {
    INFO(j);
    CHECK(std::int8_t(q8[2 + j]) == int(std::roundf(x[j] * (1.0f / d8))));
  }
  // Q4_0: d = max / -8 (max the value of largest magnitude, signed), q =
  // min(15, trunc(x / d + 8.5)), low nibbles the first 16, high the rest.
  const float d4 = x[31] / -8;
  std::memcpy(&h, q4.data(), 2);
  CHECK(h == float_to_half(d4));
  for (int j = 0; j < 16; ++j) {
    INFO(j);
    const int lo = std::min(15, int(std::int8_t(x[j] * (1.0f / d4) + 8.5f)));
    const int hi =
        std::min(15, int(std::int8_t(x[j + 16] * (1.0f / d4) + 8.5f)));
    CHECK(q4[2 + j] == std::uint8_t(lo | (hi << 4)));
  }
  // Round trips through the dequantizer stay within half a step.
  std::vector<float> back(32);
  dequantize_blocks(GgmlType::q8_0, q8.data(), 32, back.data());
  for (int j = 0; j < 32; ++j) CHECK(std::fabs(back[j] - x[j]) <= d8 * 0.51f);
  dequantize_blocks(GgmlType::q4_0, q4.data(), 32, back.data());
  for (int j = 0; j < 32; ++j)
    CHECK(std::fabs(back[j] - x[j]) <= std::fabs(d4) * 0.51f);
  // An all-zero block has scale 0 and dequantizes to 0.
  std::vector<float> zeros(32, 0.0f);
  quantize_blocks(GgmlType::q4_0, zeros.data(), 32, q4.data());
  dequantize_blocks(GgmlType::q4_0, q4.data(), 32, back.data());
  for (float v : back) CHECK(v == 0.0f);
  CHECK_THROWS_WITH(quantize_blocks(GgmlType::q6_k, x.data(), 32, q4.data()),
                    Catch::Contains("Q4_0, Q8_0 and Q4_K only"));
  CHECK_THROWS_WITH(quantize_blocks(GgmlType::q8_0, x.data(), 31, q8.data()),
                    Catch::Contains("whole blocks"));
}

TEST_CASE(
    "a q4 tiny Qwen-Image transformer holds its matrices as blocks and "
    "a GGUF of it loads them as they are",
    "[gguf][quantize][qwen_image]") {
  auto dense = tiny_transformer();
  dense->init_from_seed(9);
  auto q4 = tiny_transformer();
  q4->init_from_seed(9, c10::Device(c10::kCPU), at::kFloat, GgmlType::q4_0);
  CHECK(q4->materialized());
  // Every matrix whose rows are whole blocks is quantized: all of them here.
  std::size_t matrices = 0;
  for (const auto& [name, t] : dense->parameters())
    if (t.dim() == 2) {
      ++matrices;
      CHECK(q4->is_quantized(name));
    }
  CHECK(q4->quantized().size() == matrices);
  // ~4.5 bits a weight for the matrices.
  Bytes matrix_floats = 0, blocks = 0;
  for (const auto& [name, q] : q4->quantized()) {
    matrix_floats += Bytes(q.numel()) * 4;
    blocks += q.bytes();
  }
  CHECK(double(blocks) / double(matrix_floats) == Approx(18.0 / 128.0));
  const DenoiserInput in = input();
  const at::Tensor reference = dense->forward(in);
  const at::Tensor quantized = q4->forward(in);
  CHECK(relative_l2(quantized, reference) < 0.15);
  CHECK(relative_l2(quantized, reference) > 1e-4);  // it is quantized

  mold::test::TempDir dir;
  const std::string path = dir.path() + "/transformer.gguf";
  write_gguf(*q4, path);
  const GgufFile file = GgufFile::open(path);
  auto loaded = tiny_transformer();
  const LoadReport report =
      loaded->load_gguf(file, c10::Device(c10::kCPU), at::kFloat);
  CHECK(report.unexpected_count == 0);
  CHECK(report.tensors == dense->parameters().size());
  CHECK(loaded->quantized().size() == matrices);
  // Resident bytes are the file's tensor bytes (F32 vectors stay F32).
  CHECK(loaded->resident_bytes() == Bytes(file.tensor_bytes()));
  CHECK(std::abs(double(loaded->resident_bytes()) -
                 double(file.tensor_bytes())) <=
        0.02 * double(file.tensor_bytes()));
  CHECK(relative_l2(loaded->forward(in), quantized) == 0);
  // In bfloat16 the vectors halve, the blocks stay.
  auto half = tiny_transformer();
  half->load_gguf(file, c10::Device(c10::kCPU), at::kBFloat16);
  CHECK(half->resident_bytes() < loaded->resident_bytes());
  CHECK(half->resident_bytes() > blocks);
  CHECK(half->forward(in).scalar_type() == at::kBFloat16);
}

TEST_CASE("the model cache counts a GGUF component as its file stores it",
          "[gguf][quantize][qwen_image]") {
  auto q4 = tiny_transformer();
  q4->init_from_seed(4, c10::Device(c10::kCPU), at::kFloat, GgmlType::q4_0);
  mold::test::TempDir dir;
  write_gguf(*q4, dir.path() + "/qwen-image-Q4_0.gguf");
  WeightSource source;
  source.checkpoint = dir.path();  // a transformer/ folder with its GGUF
  ModuleComponent component("transformer", tiny_transformer(), source,
                            at::kFloat);
  const Bytes planned = component.device_bytes();
  CHECK(planned < tiny_transformer()->parameter_bytes(at::kFloat) / 4);
  component.load(*CpuBackend::instance());
  CHECK(component.module().resident_bytes() == planned);

  // A seeded q4 component says the same before it is made.
  WeightSource seeded;
  seeded.seed = 4;
  seeded.quantize = GgmlType::q4_0;
  ModuleComponent made("transformer", tiny_transformer(), seeded, at::kFloat);
  CHECK(made.device_bytes() == planned);
  made.load(*CpuBackend::instance());
  CHECK(made.module().resident_bytes() == planned);
}

TEST_CASE("a GGUF that is not the model's is refused naming the tensor",
          "[gguf][quantize][qwen_image]") {
  auto q4 = tiny_transformer();
  q4->init_from_seed(2, c10::Device(c10::kCPU), at::kFloat, GgmlType::q8_0);
  mold::test::TempDir dir;
  write_gguf(*q4, dir.path() + "/missing.gguf", "proj_out.weight");
  auto model = tiny_transformer();
  CHECK_THROWS_WITH(
      model->load_gguf(GgufFile::open(dir.path() + "/missing.gguf"),
                       c10::Device(c10::kCPU), at::kFloat),
      Catch::Contains("proj_out.weight") && Catch::Contains("missing"));
  CHECK_FALSE(model->materialized());  // nothing loaded

  // Two GGUF files in one folder: which to run is the user's to say.
  write_gguf(*q4, dir.path() + "/other.gguf");
  CHECK_THROWS_WITH(gguf_checkpoint(dir.path()),
                    Catch::Contains("2 GGUF files"));
}

namespace {

/// Two matrices of Q8_0 blocks, the second four times the first.
class TwoMatrices final : public Module {
 public:
  TwoMatrices() {
    add("small.weight", {64, 64});
    add("large.weight", {256, 64});
    add("norm.weight", {64});  // kept in the dtype: the module's dtype()
  }
  std::string describe() const override { return "two matrices"; }
  bool reads_quantized_weights() const override { return true; }
  /// Dequantizes the small one, then the large one, into one scratch.
  void dequantize_both() const {
    at::Tensor scratch;
    weight("small.weight", scratch);
    weight("large.weight", scratch);
  }
  /// A forward pass as the denoisers run one: the large matrix into the
  /// module's weight buffer, released as the pass ends.
  void pass() const {
    const WeightBufferRelease release{*this};
    weight("large.weight", weight_buffer_);
  }
  /// A denoiser's layer with the large matrix.
  at::Tensor layer(const at::Tensor& x, const at::Tensor& bias) const {
    const WeightBufferRelease release{*this};
    return linear_with(x, "large.weight", bias);
  }
};

}  // namespace

TEST_CASE("Q4_K blocks round-trip within a step of each sub-block's range",
          "[gguf][quantize]") {
  // Two super-blocks: sub-blocks of different ranges, one all positive
  // (its min is 0), one all zero, one constant negative.
  std::vector<float> x(512);
  std::mt19937 random(5);
  std::normal_distribution<float> normal;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t sub = i / 32;
    x[i] = sub == 3   ? 0.0f
           : sub == 9 ? -0.75f
           : sub == 5 ? std::fabs(normal(random)) * 2
                      : normal(random) * float(1 + sub % 4);
  }
  std::vector<std::uint8_t> blocks(2 * 144);
  quantize_blocks(GgmlType::q4_k, x.data(), x.size(), blocks.data());
  std::vector<float> back(x.size());
  dequantize_blocks(GgmlType::q4_k, blocks.data(), x.size(), back.data());
  // Each sub-block's step (its range [min(0, lowest), highest] in 15) and
  // min (-lowest, at least 0).
  std::vector<float> step(16), min(16);
  for (std::size_t sub = 0; sub < 16; ++sub) {
    float lo = 0, hi = x[32 * sub];
    for (int l = 0; l < 32; ++l)
      lo = std::min(lo, x[32 * sub + l]), hi = std::max(hi, x[32 * sub + l]);
    step[sub] = (hi - lo) / 15, min[sub] = -lo;
  }
  for (std::size_t sub = 0; sub < 16; ++sub) {
    INFO("sub-block " << sub);
    // Half a step, and what 6-bit multiples of the super-block's largest
    // step and min lose (half of 1/63 of each; the step's loss times the
    // 15 levels).
    const auto super = std::ptrdiff_t(sub / 8 * 8);
    const float largest_step = *std::max_element(step.begin() + super,
                                                 step.begin() + super + 8),
                largest_min = *std::max_element(min.begin() + super,
                                                min.begin() + super + 8);
    const float bound = 0.5f * step[sub] +
                        (15 * largest_step + largest_min) / 126 * 1.01f + 1e-4f;
    for (int l = 0; l < 32; ++l)
      CHECK(std::fabs(back[32 * sub + l] - x[32 * sub + l]) <= bound);
    if (sub == 3)
      for (int l = 0; l < 32; ++l) CHECK(back[32 * sub + l] == 0.0f);
  }
  // Rounding to steps of a 32-value range in 15 errs by step / sqrt(12)
  // (root mean square): the range of 32 normal values is about 4 sigma, so
  // about 0.08 of the values' size.
  CHECK(relative_l2(at::from_blob(back.data(), {512}),
                    at::from_blob(x.data(), {512})) < 0.1);
  CHECK_THROWS_WITH(
      quantize_blocks(GgmlType::q4_k, x.data(), 32, blocks.data()),
      Catch::Contains("whole blocks of 256"));
}

TEST_CASE(
    "a scratch that grows frees the smaller buffer before it allocates the "
    "larger one",
    "[gguf][quantize]") {
  auto cpu = CpuBackend::instance();
  TwoMatrices model;
  model.init_from_seed(1);
  model.quantize(GgmlType::q8_0);
  REQUIRE(model.is_quantized("large.weight"));
  const Bytes before = cpu->stats().allocated;
  cpu->reset_peak();
  model.dequantize_both();
  // float32: the large matrix's 256 x 64 x 4 bytes, never beside the
  // small one's 64 x 64 x 4.
  CHECK(cpu->stats().peak_allocated - before == 256 * 64 * 4);
  CHECK(cpu->stats().allocated == before);
}

TEST_CASE(
    "the weight buffer stays between passes while a phase keeps it, and goes "
    "when the phase ends",
    "[gguf][quantize]") {
  auto cpu = CpuBackend::instance();
  TwoMatrices model;
  model.init_from_seed(1);
  model.quantize(GgmlType::q8_0);
  const Bytes before = cpu->stats().allocated;
  const Bytes buffer = 256 * 64 * 4;  // float32
  model.pass();
  CHECK(cpu->stats().allocated == before);  // nobody keeps it: freed
  {
    const Module::KeepWeightBuffer steps(model);
    model.pass();
    CHECK(cpu->stats().allocated == before + buffer);
    cpu->reset_peak();
    model.pass();  // the same buffer again: nothing new allocated
    CHECK(cpu->stats().peak_allocated == before + buffer);
    {
      const Module::KeepWeightBuffer nested(model);
      model.pass();
    }
    CHECK(cpu->stats().allocated == before + buffer);  // the outer keeps it
  }
  CHECK(cpu->stats().allocated == before);
}

TEST_CASE(
    "a bfloat16 layer applied to a few rows multiplies from the blocks, never "
    "dequantizing the matrix; more rows, or float32, take the dequantized "
    "product",
    "[gguf][quantize]") {
  auto cpu = CpuBackend::instance();
  for (const GgmlType type : {GgmlType::q4_0, GgmlType::q8_0}) {
    INFO(ggml_type_name(std::uint32_t(type)));
    TwoMatrices model;
    model.init_from_seed(1, c10::Device(c10::kCPU), at::kBFloat16);
    model.quantize(type);
    const QuantizedTensor& large = model.quantized().at("large.weight");
    const at::Tensor w = dequantize(large, at::kFloat);  // exact
    const at::Tensor bias = at::randn({256}).to(at::kBFloat16);
    const Bytes matrix = 256 * 64 * 2;  // bfloat16, dequantized
    for (const std::int64_t rows : {1, 3, 4, 5, 9}) {
      INFO(rows << " rows");
      const at::Tensor x = at::randn({rows, 64}).to(at::kBFloat16);
      const bool from_blocks = rows <= std::int64_t(kMaxRowsFromBlocks);
      CHECK(linear_from_blocks_takes(x, large) == from_blocks);
      const Bytes before = cpu->stats().allocated;
      cpu->reset_peak();
      const at::Tensor got = model.layer(x, bias);
      const Bytes peak = cpu->stats().peak_allocated - before;
      REQUIRE(got.scalar_type() == at::kBFloat16);
      REQUIRE(got.sizes() == at::IntArrayRef({rows, 256}));
      if (from_blocks) {
        // The exact product, rounded once to bfloat16 (2^-9 relative).
        const at::Tensor exact =
            at::linear(x.to(at::kFloat), w, bias.to(at::kFloat));
        CHECK(relative_l2(got.to(at::kFloat), exact) < 4e-3);
        CHECK(peak < matrix);
      } else {
        CHECK(at::equal(got,
                        at::linear(x, dequantize(large, at::kBFloat16), bias)));
        CHECK(peak >= matrix);
      }
    }
    // float32 rows take the dequantized product: a dense twin's sums.
    CHECK_FALSE(linear_from_blocks_takes(at::randn({1, 64}), large));
    // Leading dimensions kept; any rows and dtype when asked directly.
    const at::Tensor x = at::randn({1, 2, 64}).to(at::kBFloat16);
    const at::Tensor got = linear_from_blocks(x, large, {});
    CHECK(got.scalar_type() == at::kBFloat16);
    CHECK(got.sizes() == at::IntArrayRef({1, 2, 256}));
    const at::Tensor many = at::randn({16, 64});
    CHECK(relative_l2(linear_from_blocks(many, large, {}),
                      at::linear(many, w)) < 1e-6);
    CHECK_THROWS_WITH(linear_from_blocks(at::randn({1, 63}), large, {}),
                      Catch::Contains("1 x 63"));
    CHECK_THROWS_WITH(
        linear_from_blocks(x, large, at::zeros({255}, at::kBFloat16)),
        Catch::Contains("255 values for 256 outputs"));
  }
}
