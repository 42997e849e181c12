#pragma once
/// safetensors files as tensors: read (memory-mapped) and write. The header is
/// parsed by mold/tensor/safetensors_header.hpp (the torch-free library).

#include <ATen/ATen.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mold/tensor/float8.hpp"
#include "mold/tensor/safetensors_header.hpp"

namespace mold {

/// The most read_into() buffers when it converts a dtype: the host memory a
/// load needs above the loaded tensors.
inline constexpr std::size_t kReadChunkBytes = std::size_t(64) << 20;

/// A memory-mapped safetensors file. Tensors from view() share the mapping
/// (copy-on-write: writing to them never changes the file); tensor() copies
/// into ordinary memory. fp8 tensors (F8_E4M3, F8_E5M2) read as their float32
/// values (view() copies them too), or as bytes through read_bytes_into().
class SafetensorsFile {
 public:
  /// Opens and validates the whole header: a truncated file, bad JSON, an
  /// unknown dtype, a size that disagrees with the shape, or offsets out of
  /// range or overlapping are SafetensorsErrors naming the file and tensor.
  static SafetensorsFile open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const {
    return entries_.count(name) > 0;
  }
  const SafetensorsEntry& entry(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const {
    return metadata_;
  }

  /// The tensor on the mapping, without copying (the file stays mapped while it
  /// lives).
  at::Tensor view(const std::string& name) const;
  /// A contiguous copy in ordinary (tracked) memory.
  at::Tensor tensor(const std::string& name) const;
  /// Copies the tensor into `destination`, converting the dtype; its shape must
  /// match.
  void copy_into(const std::string& name, at::Tensor& destination) const;
  /// Reads the tensor from the file into `destination`, a contiguous cpu
  /// tensor of its shape in any dtype: straight into it when the dtype is the
  /// stored one, else through a buffer of at most `chunk_bytes` converted
  /// piece by piece. Large sequential reads instead of page faults over the
  /// mapping: the disk's speed, and none of the file's pages left in this
  /// process. A file that shrank or fails to read is a SafetensorsError.
  void read_into(const std::string& name, at::Tensor& destination,
                 std::size_t chunk_bytes = kReadChunkBytes) const;
  /// Reads destination.numel() elements of the tensor, from element `first`
  /// in its row-major order (a block of rows of a fused tensor), as
  /// read_into() does. InvalidArgument when they are not all in it.
  void read_range_into(const std::string& name, std::int64_t first,
                       at::Tensor& destination,
                       std::size_t chunk_bytes = kReadChunkBytes) const;
  /// `count` bytes of the tensor as stored, from byte `first`, into
  /// `destination` (an fp8 weight kept as bytes). InvalidArgument when they
  /// are not all in it; SafetensorsError when the read fails.
  void read_bytes_into(const std::string& name, std::size_t first,
                       std::size_t count, void* destination) const;
  /// Every tensor's entry, by name.
  const std::map<std::string, SafetensorsEntry>& entries() const {
    return entries_;
  }
  /// Where the tensor's bytes start in the file, to read tensors in file order.
  std::size_t file_offset(const std::string& name) const;

 private:
  struct Mapping;
  std::filesystem::path path_;
  std::shared_ptr<Mapping> mapping_;
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

/// Writes tensors (any device, F32/F16/BF16/F64/I64/I32/I16/I8/U8/BOOL) to
/// `path` atomically: a temporary file beside it, then a rename, so a failure
/// never leaves a half-written file in its place. Throws SafetensorsError
/// naming the file.
void save_safetensors(
    const std::filesystem::path& path,
    const std::vector<std::pair<std::string, at::Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata = {});

}  // namespace mold
