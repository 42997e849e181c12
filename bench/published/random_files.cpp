#include "random_files.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <mold/base/text.hpp>
#include <mold/tensor/float8.hpp>
#include <mold/tensor/ggml_quant.hpp>
#include <nlohmann/json.hpp>

#include "support/gguf_writer.hpp"

namespace mold_bench {

namespace {

/// splitmix64: fast, seedable, and good enough for random weights.
struct SplitMix {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  void fill(std::uint8_t* out, std::size_t n) {
    for (std::size_t i = 0; i < n; i += 8) {
      const std::uint64_t r = next();
      std::memcpy(out + i, &r, std::min<std::size_t>(8, n - i));
    }
  }
};

struct Blocks {
  std::uint32_t ggml_type;
  std::uint64_t elements;  ///< per block
  std::uint64_t bytes;     ///< per block
};

Blocks blocks_of(FileFormat format) {
  switch (format) {
  case FileFormat::q8_0:
    return {8, 32, 34};
  case FileFormat::q4_0:
    return {2, 32, 18};
  case FileFormat::q4_k:
    return {12, 256, 144};
  case FileFormat::fp8_scaled:
    return {0, 1, 1};
  }
  return {0, 1, 4};
}

constexpr std::uint32_t kGgmlF32 = 0;
// The standard deviation of a uniform integer on 0..15 and on -128..127.
const double kNibbleSpread = std::sqrt(255.0 / 12.0);
const double kByteSpread = std::sqrt((256.0 * 256.0 - 1) / 12.0);

bool in_format(const Listed& l, FileFormat format) {
  return l.shape.size() == 2 && mold::ends_with(l.name, ".weight") &&
         std::uint64_t(l.shape[1]) % blocks_of(format).elements == 0;
}

std::uint64_t tensor_bytes(const Listed& l, FileFormat format) {
  if (!in_format(l, format)) return 4 * l.elements();
  const Blocks b = blocks_of(format);
  return l.elements() / b.elements * b.bytes;
}

/// A float32 tensor as the header says: norm scales 1, biases 0, the rest
/// normal / sqrt(fan_in).
void write_float32(const Listed& l, std::ostream& out) {
  at::Tensor t;
  if (mold::ends_with(l.name, ".bias"))
    t = at::zeros(l.shape, at::kFloat);
  else if (l.shape.size() <= 1)
    t = at::ones(l.shape, at::kFloat);
  else
    t = at::randn(l.shape) / std::sqrt(l.fan_in());
  t = t.contiguous();
  out.write(static_cast<const char*>(t.data_ptr()),
            std::streamsize(4 * t.numel()));
}

/// One block of `format` with random values of spread 1/sqrt(fan_in).
void fill_block(FileFormat format, double fan_in, SplitMix& random,
                std::uint8_t* block) {
  const double spread = 1.0 / std::sqrt(fan_in);
  switch (format) {
  case FileFormat::q8_0: {  // d, then 32 int8: d x q
    const std::uint16_t d = mold::float_to_half(float(spread / kByteSpread));
    std::memcpy(block, &d, 2);
    random.fill(block + 2, 32);
    return;
  }
  case FileFormat::q4_0: {  // d, then 32 nibbles: d x (q - 8)
    const std::uint16_t d = mold::float_to_half(float(spread / kNibbleSpread));
    std::memcpy(block, &d, 2);
    random.fill(block + 2, 16);
    return;
  }
  case FileFormat::q4_k: {
    // d, dmin, 8 sub-blocks' 6-bit scales and mins packed in 12 bytes,
    // then 256 nibbles: d x sc x q - dmin x m. Every sc and m is 32 (the
    // bytes A0 x 8, 00 x 4) and dmin = 7.5 d, so a value is
    // 32 d (q - 7.5): centred, with the spread 32 d x kNibbleSpread.
    const double d = spread / (32 * kNibbleSpread);
    const std::uint16_t dh = mold::float_to_half(float(d));
    const std::uint16_t mh = mold::float_to_half(float(7.5 * d));
    std::memcpy(block, &dh, 2);
    std::memcpy(block + 2, &mh, 2);
    std::memset(block + 4, 0xA0, 8);
    std::memset(block + 12, 0x00, 4);
    random.fill(block + 16, 128);
    return;
  }
  case FileFormat::fp8_scaled:
    return;
  }
}

void write_blocks(const Listed& l, FileFormat format, std::uint64_t seed,
                  std::ostream& out) {
  const Blocks b = blocks_of(format);
  SplitMix random{seed};
  std::vector<std::uint8_t> chunk;
  constexpr std::uint64_t kChunkBlocks = 1 << 16;
  for (std::uint64_t left = l.elements() / b.elements; left > 0;) {
    const std::uint64_t n = std::min(left, kChunkBlocks);
    chunk.resize(n * b.bytes);
    for (std::uint64_t i = 0; i < n; ++i)
      fill_block(format, l.fan_in(), random, chunk.data() + i * b.bytes);
    out.write(reinterpret_cast<const char*>(chunk.data()),
              std::streamsize(chunk.size()));
    left -= n;
  }
}

std::uint64_t write_gguf(const std::filesystem::path& file,
                         const std::vector<Listed>& tensors, FileFormat format,
                         const std::string& architecture, std::uint64_t seed) {
  mold::test::GgufWriter gguf;
  if (!architecture.empty())
    gguf.metadata_string("general.architecture", architecture);
  std::uint64_t total = 0;
  for (const Listed& l : tensors) {
    std::vector<std::uint64_t> dims(l.shape.rbegin(), l.shape.rend());
    gguf.tensor_streamed(
        l.name, dims,
        in_format(l, format) ? blocks_of(format).ggml_type : kGgmlF32,
        tensor_bytes(l, format));
    total += tensor_bytes(l, format);
  }
  gguf.write_streamed(file.string(), [&](std::size_t i, std::ostream& out) {
    const Listed& l = tensors[i];
    if (in_format(l, format))
      write_blocks(l, format, seed * 1000003 + i, out);
    else
      write_float32(l, out);
  });
  return total;
}

// fp8 e4m3fn bytes with bit 6 (the exponent's top bit) clear: exponents 0 to
// 7, magnitudes up to 1.875, never NaN. Their root mean square, from the
// format's table, sets each layer's scale_weight.
constexpr std::uint8_t kFp8Mask = 0xBF;

double fp8_spread() {
  const auto& table = mold::float8_table(mold::Float8Format::e4m3fn);
  double sum = 0;
  int n = 0;
  for (int b = 0; b < 256; ++b)
    if ((b & ~kFp8Mask) == 0) {
      sum += double(table[std::size_t(b)]) * double(table[std::size_t(b)]);
      ++n;
    }
  return std::sqrt(sum / n);
}

struct SafetensorsEntry {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t bytes;
  std::function<void(std::ostream&)> write;
};

std::vector<std::uint8_t> float_bytes(float value) {
  std::vector<std::uint8_t> out(4);
  std::memcpy(out.data(), &value, 4);
  return out;
}

std::uint64_t write_fp8(const std::filesystem::path& file,
                        const std::vector<Listed>& tensors,
                        std::uint64_t seed) {
  const double spread = fp8_spread();
  std::vector<SafetensorsEntry> entries;
  // ComfyUI's marker of a scaled fp8 file: an empty F8_E4M3 tensor.
  entries.push_back({"scaled_fp8", "F8_E4M3", {0}, 0, [](std::ostream&) {}});
  const auto constant = [&](const std::string& name, float value) {
    const auto bytes = float_bytes(value);
    entries.push_back({name, "F32", {}, 4, [bytes](std::ostream& out) {
                         out.write(reinterpret_cast<const char*>(bytes.data()),
                                   4);
                       }});
  };
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Listed& l = tensors[i];
    if (!in_format(l, FileFormat::fp8_scaled)) {
      entries.push_back({l.name, "F32", l.shape, 4 * l.elements(),
                         [&l](std::ostream& out) { write_float32(l, out); }});
      continue;
    }
    const std::uint64_t tensor_seed = seed * 1000003 + i;
    entries.push_back({l.name, "F8_E4M3", l.shape, l.elements(),
                       [&l, tensor_seed](std::ostream& out) {
                         SplitMix random{tensor_seed};
                         std::vector<std::uint8_t> chunk;
                         constexpr std::uint64_t kChunk = 1 << 22;
                         for (std::uint64_t left = l.elements(); left > 0;) {
                           const std::uint64_t n = std::min(left, kChunk);
                           chunk.resize(n);
                           random.fill(chunk.data(), n);
                           for (auto& byte : chunk) byte &= kFp8Mask;
                           out.write(
                               reinterpret_cast<const char*>(chunk.data()),
                               std::streamsize(n));
                           left -= n;
                         }
                       }});
    const std::string layer = l.name.substr(0, l.name.size() - 7);
    constant(layer + ".scale_weight",
             float(1.0 / (spread * std::sqrt(l.fan_in()))));
    constant(layer + ".scale_input", 1.0f);
  }
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}};
  std::uint64_t offset = 0;
  for (const auto& e : entries) {
    header[e.name] = {{"dtype", e.dtype},
                      {"shape", e.shape},
                      {"data_offsets", {offset, offset + e.bytes}}};
    offset += e.bytes;
  }
  std::string text = header.dump();
  while (text.size() % 8) text += ' ';
  std::ofstream out(file, std::ios::binary);
  const std::uint64_t size = text.size();
  out.write(reinterpret_cast<const char*>(&size), 8);
  out << text;
  for (const auto& e : entries) {
    const auto before = out.tellp();
    e.write(out);
    if (std::uint64_t(out.tellp() - before) != e.bytes)
      throw std::logic_error("write_fp8: " + e.name + " has another size");
  }
  if (!out.flush()) throw std::runtime_error("cannot write " + file.string());
  return offset;
}

}  // namespace

std::optional<FileFormat> file_format(std::string_view name) {
  std::string lower(name);
  for (auto& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "q8_0") return FileFormat::q8_0;
  if (lower == "q4_0") return FileFormat::q4_0;
  if (lower == "q4_k") return FileFormat::q4_k;
  if (lower == "fp8") return FileFormat::fp8_scaled;
  return std::nullopt;
}

std::string_view file_format_name(FileFormat format) {
  switch (format) {
  case FileFormat::q8_0:
    return "Q8_0";
  case FileFormat::q4_0:
    return "Q4_0";
  case FileFormat::q4_k:
    return "Q4_K";
  case FileFormat::fp8_scaled:
    return "fp8";
  }
  return "?";
}

bool is_gguf(FileFormat format) { return format != FileFormat::fp8_scaled; }

std::uint64_t random_file_bytes(const std::vector<Listed>& tensors,
                                FileFormat format) {
  std::uint64_t total = 0;
  for (const Listed& l : tensors) total += tensor_bytes(l, format);
  return total;
}

std::uint64_t write_random_file(const std::filesystem::path& file,
                                const std::vector<Listed>& tensors,
                                FileFormat format,
                                const std::string& architecture,
                                std::uint64_t seed) {
  if (file.has_parent_path())
    std::filesystem::create_directories(file.parent_path());
  return is_gguf(format) ? write_gguf(file, tensors, format, architecture, seed)
                         : write_fp8(file, tensors, seed);
}

}  // namespace mold_bench
