#pragma once
// The single files people download for one component, written with random
// values from a listing: a GGUF of ggml blocks (Q8_0, Q4_0, Q4_K, as city96's
// and llama.cpp's converters write them) or a ComfyUI scaled fp8 safetensors
// (`scaled_fp8` marker, F8_E4M3 weights with their `scale_weight` and
// `scale_input`). Each matrix (a 2-D "*.weight" whose rows hold whole blocks)
// gets the format; every other tensor is float32 (norm scales 1, biases 0,
// the rest normal / sqrt(fan_in)). Random values keep the spread
// 1/sqrt(fan_in) so activations stay finite through every layer. Written one
// tensor at a time: a 6 GiB file never sits in memory.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "listing.hpp"

namespace mold_bench {

enum class FileFormat { q8_0, q4_0, q4_k, fp8_scaled };

/// "q8_0", "q4_0", "q4_k", "fp8" (any case); nullopt for another name.
std::optional<FileFormat> file_format(std::string_view name);
std::string_view file_format_name(FileFormat format);
/// Q8_0, Q4_0 and Q4_K are GGUFs; fp8 a safetensors file.
bool is_gguf(FileFormat format);

/// The file's size in bytes (data only), for the disk check.
std::uint64_t random_file_bytes(const std::vector<Listed>& tensors,
                                FileFormat format);

/// Writes `tensors` as one file of `format`; `architecture` is the GGUF's
/// general.architecture ("" writes none). Returns the bytes written.
std::uint64_t write_random_file(const std::filesystem::path& file,
                                const std::vector<Listed>& tensors,
                                FileFormat format,
                                const std::string& architecture,
                                std::uint64_t seed);

}  // namespace mold_bench
