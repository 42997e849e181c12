#pragma once
/// The weights of one model component as published: a single safetensors
/// file, or shards listed by a `*.safetensors.index.json` (the layout of
/// diffusers and transformers checkpoints). Every file is memory-mapped;
/// nothing is read until a tensor is asked for.

#include <ATen/ATen.h>

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "mold/tensor/safetensors.hpp"
#include "mold/tensor/tensor_listing.hpp"

namespace mold {

class WeightSet {
 public:
  /// `path` is a `.safetensors` file, a `*.safetensors.index.json`, or a
  /// directory holding one index or one or more `.safetensors` files (shards
  /// without an index are taken together). A tensor named by the index that
  /// its shard lacks, a shard that is missing, or a tensor in two files is a
  /// SafetensorsError naming the file and the tensor.
  static WeightSet open(const std::filesystem::path& path);
  /// One file already open.
  static WeightSet single(SafetensorsFile file);

  /// What was opened, for messages (the directory, index or file).
  const std::filesystem::path& origin() const { return origin_; }
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const {
    return where_.count(name) > 0;
  }
  const SafetensorsEntry& entry(const std::string& name) const;
  const SafetensorsFile& file_of(const std::string& name) const;
  /// The tensor on the mapping (no copy); SafetensorsError when absent.
  at::Tensor view(const std::string& name) const;
  /// See SafetensorsFile::read_into().
  void read_into(const std::string& name, at::Tensor& destination) const;
  /// The tensors named, in the order their bytes lie on disk (file by file,
  /// offset by offset): the order that reads a checkpoint sequentially.
  std::vector<std::string> in_file_order(std::vector<std::string> names) const;
  std::size_t files() const { return files_.size(); }
  /// Adds every tensor to `listing`, shard by shard (mold/tensor/
  /// tensor_listing.hpp).
  void add_to(TensorListing& listing) const;
  /// Bytes of the largest tensor, as stored.
  std::size_t largest_tensor_bytes() const;

 private:
  std::filesystem::path origin_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, std::size_t> where_;  // tensor -> index in files_
};

}  // namespace mold
