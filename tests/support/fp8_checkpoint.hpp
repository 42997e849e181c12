#pragma once
// fp8 checkpoints as ComfyUI and transformers write them, made from a model's
// float weights with rules written here (not the loader's): each "*.weight"
// of two or more dimensions rounded to the nearest float8 after dividing by its
// scale, the rest kept as F32, with the scale tensors and markers of each
// format. A test loads them and expects exactly the decoded values this writer
// returns.

#include <cstdint>
#include <filesystem>
#include <map>
#include <mold/tensor/float8.hpp>
#include <string>
#include <vector>

#include "support/foreign_layouts.hpp"

namespace mold::test {

/// One tensor as raw bytes with its safetensors dtype, for files mold's own
/// writer cannot make (fp8, hostile dtypes).
struct RawTensor {
  std::string name;
  std::string dtype;  ///< "F8_E4M3", "F32", "U8", ...
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> bytes;
};

/// Writes `tensors` as a safetensors file, in order.
void write_raw_safetensors(
    const std::filesystem::path& path, const std::vector<RawTensor>& tensors,
    const std::map<std::string, std::string>& metadata = {});

enum class Fp8Scales {
  none,          ///< plain fp8 weights (`*_fp8_e4m3fn.safetensors`)
  scale_weight,  ///< ComfyUI's scaled fp8: `scaled_fp8` marker, one
                 ///< `<layer>.scale_weight` per weight, `scale_input`
  weight_scale,  ///< ComfyUI's newer format with a per-row
                 ///< `<layer>.weight_scale` [rows, 1], `input_scale` and a
                 ///< `comfy_quant` tag
};

/// Writes `tensors` as an fp8 checkpoint in `format` with `scales` (the
/// scaled_fp8 marker after `prefix`), and returns every tensor's value as a
/// loader must make it: the float8 value times its scale, in float32 (the
/// other tensors as given).
NamedTensors write_fp8_safetensors(const std::filesystem::path& path,
                                   const NamedTensors& tensors,
                                   Fp8Scales scales,
                                   Float8Format format = Float8Format::e4m3fn,
                                   const std::string& prefix = "");

}  // namespace mold::test
