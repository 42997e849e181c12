#include "support/fp8_checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace mold::test {

namespace {

bool ends(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() &&
         s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

/// The nearest float8 byte to `value` (its magnitude clamped to the largest
/// finite value): the positive bytes 0x00..(largest) are ascending in
/// value, so a binary search over their values finds it.
std::uint8_t encode(float value, Float8Format format) {
  const auto& table = float8_table(format);
  const int largest = format == Float8Format::e4m3fn ? 0x7E : 0x7B;
  const float magnitude = std::min(std::fabs(value), table[largest]);
  const float* begin = table.data();
  const float* at = std::lower_bound(begin, begin + largest + 1, magnitude);
  int byte = int(at - begin);
  if (byte > 0 && (byte > largest ||
                   magnitude - table[byte - 1] <= table[byte] - magnitude))
    --byte;
  return std::uint8_t(byte | (std::signbit(value) ? 0x80 : 0));
}

std::vector<std::uint8_t> float_bytes(const at::Tensor& values) {
  const at::Tensor t = values.to(at::kCPU, at::kFloat).contiguous();
  std::vector<std::uint8_t> out(std::size_t(t.numel()) * 4);
  if (!out.empty()) std::memcpy(out.data(), t.data_ptr<float>(), out.size());
  return out;
}

}  // namespace

void write_raw_safetensors(const std::filesystem::path& path,
                           const std::vector<RawTensor>& tensors,
                           const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::size_t offset = 0;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t size = text.size();
  for (int i = 0; i < 8; ++i) out.put(char((size >> (8 * i)) & 0xFF));
  out << text;
  for (const auto& t : tensors)
    out.write(reinterpret_cast<const char*>(t.bytes.data()),
              std::streamsize(t.bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

NamedTensors write_fp8_safetensors(const std::filesystem::path& path,
                                   const NamedTensors& tensors,
                                   Fp8Scales scales, Float8Format format,
                                   const std::string& prefix) {
  const auto& table = float8_table(format);
  const float largest = table[format == Float8Format::e4m3fn ? 0x7E : 0x7B];
  const std::string dtype(float8_dtype_name(format));
  std::vector<RawTensor> raw;
  NamedTensors decoded;
  if (scales == Fp8Scales::scale_weight)
    raw.push_back({prefix + "scaled_fp8", dtype, {0}, {}});
  for (const auto& [name, tensor] : tensors) {
    const at::Tensor t = tensor.to(at::kCPU, at::kFloat).contiguous();
    if (t.dim() < 2 || !ends(name, ".weight")) {
      raw.push_back({name, "F32", t.sizes().vec(), float_bytes(t)});
      decoded.emplace_back(name, t);
      continue;
    }
    const std::int64_t rows = t.size(0), columns = t.numel() / rows;
    // One scale for the tensor, or one per row: its largest magnitude maps
    // to the format's largest value.
    std::vector<float> scale(std::size_t(rows), 1.0f);
    if (scales != Fp8Scales::none) {
      const at::Tensor peak = scales == Fp8Scales::weight_scale
                                  ? t.abs().reshape({rows, -1}).amax(1)
                                  : t.abs().max().expand({rows});
      for (std::int64_t r = 0; r < rows; ++r) {
        const float p = peak[r].item<float>();
        scale[std::size_t(r)] = p > 0 ? p / largest : 1.0f;
      }
    }
    std::vector<std::uint8_t> bytes(std::size_t(rows * columns));
    at::Tensor values = at::empty(t.sizes(), at::kFloat);
    const float* in = t.data_ptr<float>();
    float* out = values.data_ptr<float>();
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < columns; ++c) {
        const std::size_t i = std::size_t(r * columns + c);
        bytes[i] = encode(in[i] / scale[std::size_t(r)], format);
        out[i] = table[bytes[i]] * scale[std::size_t(r)];
      }
    raw.push_back({name, dtype, t.sizes().vec(), std::move(bytes)});
    decoded.emplace_back(name, values);
    const std::string layer = name.substr(0, name.size() - 7);
    const at::Tensor one = at::ones({}, at::kFloat);
    if (scales == Fp8Scales::scale_weight) {
      raw.push_back({layer + ".scale_weight",
                     "F32",
                     {},
                     float_bytes(at::full({}, scale[0], at::kFloat))});
      raw.push_back({layer + ".scale_input", "F32", {}, float_bytes(one)});
    } else if (scales == Fp8Scales::weight_scale) {
      const at::Tensor per_row =
          at::from_blob(scale.data(), {rows, 1}, at::kFloat).clone();
      raw.push_back(
          {layer + ".weight_scale", "F32", {rows, 1}, float_bytes(per_row)});
      raw.push_back({layer + ".input_scale", "F32", {}, float_bytes(one)});
      const std::string tag = R"({"format": "float8_e4m3fn"})";
      raw.push_back({layer + ".comfy_quant",
                     "U8",
                     {std::int64_t(tag.size())},
                     {tag.begin(), tag.end()}});
    }
  }
  write_raw_safetensors(path, raw);
  return decoded;
}

}  // namespace mold::test
