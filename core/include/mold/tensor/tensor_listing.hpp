#pragma once
/// What a checkpoint holds, without its bytes: each tensor's name, shape,
/// stored type and place, over one or more files (safetensors shards, a GGUF,
/// a text GGUF with its mmproj). Layouts are detected and mapped on it
/// (mold/catalog/weight_layout.hpp); torch-free, so molddiag can inspect a
/// file without libtorch.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mold/tensor/safetensors_header.hpp"

namespace mold {

class GgufFile;

/// One tensor as a file stores it.
struct StoredTensor {
  std::string name;
  std::vector<std::int64_t> shape;  ///< PyTorch's order, outermost first
  /// "F32", "BF16", "F8_E4M3" (a safetensors dtype) or a ggml type name
  /// ("Q4_0", "Q3_K", "F16") for a GGUF tensor.
  std::string type;
  std::uint64_t bytes = 0;
  std::size_t file = 0;      ///< index in TensorListing::files()
  std::uint64_t offset = 0;  ///< in its file's data, for reading in order
  bool gguf = false;
  std::uint32_t ggml_type = 0;  ///< when gguf

  std::int64_t elements() const;
  /// Rows of dim 0 (1 for a scalar).
  std::int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
};

class TensorListing {
 public:
  /// Adds a file's tensors; a name already listed from another file is a
  /// SafetensorsError naming both files.
  void add_safetensors(const std::filesystem::path& file,
                       const std::map<std::string, SafetensorsEntry>& entries);
  /// The same for a header read from the file: its data section's start is
  /// kept (data_start()).
  void add_safetensors(const std::filesystem::path& file,
                       const SafetensorsHeader& header);
  /// The same for a GGUF file; its general.architecture is kept.
  void add_gguf(const GgufFile& file);
  /// Adds the tensors of one file read elsewhere (their `file` is set
  /// here); a GGUF one when `gguf_architecture` is given ("" for a GGUF
  /// without one).
  void add_file(const std::filesystem::path& file,
                std::optional<std::string> gguf_architecture,
                std::vector<StoredTensor> tensors);

  const std::vector<std::filesystem::path>& files() const { return files_; }
  /// Where file `file`'s data section starts (a tensor's offset counts from
  /// there); none for a listing given its tensors without the file's header
  /// (add_file, add_safetensors of entries alone).
  std::optional<std::uint64_t> data_start(std::size_t file) const {
    return file < data_starts_.size() ? data_starts_[file] : std::nullopt;
  }
  const std::vector<StoredTensor>& tensors() const { return tensors_; }
  /// The tensors set aside beside the weights of a safetensors file (fp8
  /// scales, input scales, markers: mold/tensor/weight_scales.hpp), by name;
  /// layouts never see them.
  const std::map<std::string, StoredTensor>& companions() const {
    return companions_;
  }
  /// The scale of fp8 weight `weight` (one value, or one per row); nullptr
  /// for a weight without one (its values are its fp8 values).
  const StoredTensor* scale_of(const StoredTensor& weight) const;
  /// Refuses, as a SafetensorsError naming the file and tensor, what mold
  /// cannot read as weights times their scales: a tensor of another
  /// quantization (nvfp4, bitsandbytes, ...), a scale of no weight, of a
  /// weight that is not fp8 (int8, packed 4-bit), two scales for one
  /// weight, or scales that are neither one per tensor nor one per row.
  /// Call it once every file is added (a scale may be in another shard).
  void check_scales() const;
  /// The tensor named `name`; nullptr when absent.
  const StoredTensor* find(const std::string& name) const;
  bool contains(const std::string& name) const { return find(name); }
  /// The general.architecture of the GGUF files in it ("lumina2", "qwen3",
  /// "clip"), in file order; empty for safetensors.
  const std::vector<std::string>& gguf_architectures() const {
    return gguf_architectures_;
  }
  bool has_gguf() const { return !gguf_architectures_.empty(); }
  /// "x.gguf" or "x.gguf + mmproj.gguf" (file names), for messages.
  std::string describe() const;
  /// Bytes of every tensor as stored.
  std::uint64_t bytes() const;

 private:
  void add(StoredTensor tensor, bool safetensors);
  std::vector<std::filesystem::path> files_;
  std::vector<std::optional<std::uint64_t>> data_starts_;  ///< per file
  std::map<std::string, StoredTensor> companions_;
  std::vector<std::string> gguf_architectures_;
  std::vector<StoredTensor> tensors_;
  std::map<std::string, std::size_t> index_;
};

/// The largest safetensors header read_tensor_listing() reads (the
/// format's own limit is 100 MB; the published ones are under 200 KiB).
inline constexpr std::uint64_t kMaxSafetensorsHeader = std::uint64_t(100) << 20;

/// The listing of `paths` without reading any tensor: each a `.gguf` file
/// (GgufFile::open), a `.safetensors` file (its header only, at most
/// kMaxSafetensorsHeader), or a directory (its `.safetensors` shards, or its
/// one `.gguf`). Only regular files are read. SafetensorsError/GgufError
/// naming the file for what is not one; check_scales() is run.
TensorListing read_tensor_listing(
    const std::vector<std::filesystem::path>& paths);

}  // namespace mold
