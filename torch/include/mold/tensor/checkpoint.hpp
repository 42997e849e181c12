#pragma once
/// A component's checkpoint as one set of tensors, whatever its files:
/// safetensors (one file, shards, an index) and GGUF files (a llama.cpp text
/// model with its mmproj), listed together (mold/tensor/tensor_listing.hpp)
/// and read piece by piece: whole tensors, blocks of rows of a fused tensor,
/// GGUF blocks kept quantized. What Module::load() streams a layout's
/// mapping from.

#include <ATen/ATen.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "mold/tensor/gguf_file.hpp"
#include "mold/tensor/quantized_tensor.hpp"
#include "mold/tensor/tensor_listing.hpp"
#include "mold/tensor/weight_set.hpp"

namespace mold {

class Checkpoint {
 public:
  /// Opens each path: a `.gguf` file, or a safetensors file, index or
  /// directory (WeightSet::open). A tensor name in two of them is an error
  /// naming both files; scales that mold cannot apply are refused
  /// (TensorListing::check_scales()).
  static Checkpoint open(const std::vector<std::filesystem::path>& paths);
  static Checkpoint of(WeightSet weights);
  static Checkpoint of(GgufFile file);

  const TensorListing& listing() const { return listing_; }
  /// What was opened, for messages: the paths, joined by " + ".
  const std::string& origin() const { return origin_; }
  /// The safetensors weights when they are all it holds; nullptr otherwise.
  const WeightSet* weights() const {
    return parts_.size() == 1 && parts_[0].weights ? &*parts_[0].weights
                                                   : nullptr;
  }
  /// Whether every file is a GGUF (its errors are GgufErrors).
  bool gguf_only() const { return gguf_only_; }

  /// Whether `t` is stored as ggml blocks (not F32, F16 or BF16 values) or
  /// as fp8 bytes: what a matrix keeps on the device as it is stored.
  static bool blocks(const StoredTensor& t);
  /// The dtype `t`'s values are stored in (F32, F16, BF16, F64, ...);
  /// SafetensorsError/GgufError naming it for one mold does not read as
  /// values (a ggml block type: read_blocks()).
  at::ScalarType stored_dtype(const StoredTensor& t) const;
  /// Reads destination.numel() values of `t` from element `first` (row-major)
  /// into `destination` (contiguous, on the host, any float dtype), through a
  /// bounded buffer when the dtype differs; a quantized GGUF tensor is read
  /// whole and dequantized.
  void read_values(const StoredTensor& t, std::int64_t first,
                   at::Tensor& destination) const;
  /// Rows [row_begin, row_end) of dim 0 of a tensor stored as ggml blocks or
  /// fp8 bytes, as stored, into `destination` (contiguous uint8 on the host,
  /// exactly their bytes: blocks never straddle rows).
  void read_block_rows(const StoredTensor& t, std::int64_t row_begin,
                       std::int64_t row_end, at::Tensor& destination) const;
  /// The scale of each row [row_begin, row_end) of fp8 weight `t` (float32;
  /// its one scale repeated, or ones when it has none).
  at::Tensor row_scales(const StoredTensor& t, std::int64_t row_begin,
                        std::int64_t row_end) const;

 private:
  struct Part {
    std::optional<WeightSet> weights;
    std::optional<GgufFile> gguf;
  };
  void add(Part part);
  const GgufFile& gguf_of(const StoredTensor& t) const;
  std::vector<Part> parts_;
  std::vector<std::size_t> part_of_file_;  // listing file index -> part
  TensorListing listing_;
  std::string origin_;
  bool gguf_only_ = true;
};

}  // namespace mold
