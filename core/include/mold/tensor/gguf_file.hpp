#pragma once
/// GGUF files (ggml's format for quantized checkpoints, version 2 and 3): the
/// header, the metadata key-values, the tensor infos, and the tensor data,
/// memory-mapped. Torch-free: a tensor's bytes are handed over as they are
/// (mold/tensor/quantized_tensor.hpp keeps them quantized on a device).
///
/// The layout: "GGUF", version (u32), tensor count (u64), metadata count
/// (u64); each metadata entry a string key, a value type (u32) and the value;
/// each tensor info a string name, n_dims (u32), the dims (u64 each,
/// innermost first), the ggml type (u32) and the data offset (u64, relative
/// to the data section); the data section starts at the next multiple of
/// `general.alignment` (default 32). Strings are a u64 length and bytes;
/// everything is little-endian.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "mold/base/error.hpp"
#include "mold/tensor/ggml_quant.hpp"

namespace mold {

/// A file that is not a GGUF file mold can read. The message names the
/// file, what is wrong and where (the byte offset, the key or the tensor).
class GgufError : public Error {
 public:
  using Error::Error;
};

/// One metadata value. Arrays keep their element type; nested arrays are
/// read and kept as arrays of values.
struct GgufValue {
  enum class Type : std::uint32_t {
    u8 = 0,
    i8 = 1,
    u16 = 2,
    i16 = 3,
    u32 = 4,
    i32 = 5,
    f32 = 6,
    boolean = 7,
    string = 8,
    array = 9,
    u64 = 10,
    i64 = 11,
    f64 = 12,
  };
  Type type = Type::u32;
  std::variant<std::uint64_t, std::int64_t, double, bool, std::string,
               std::vector<GgufValue>>
      value;

  /// The value as a whole number (any integer type); nullopt otherwise.
  std::optional<std::uint64_t> as_unsigned() const;
  /// The string value; nullptr for another type.
  const std::string* as_string() const;
};

struct GgufTensorInfo {
  std::string name;
  /// ggml's order: innermost (contiguous) dimension first.
  std::vector<std::uint64_t> dims;
  std::uint32_t type = 0;    ///< the ggml type id (GgmlType for known ones)
  std::uint64_t offset = 0;  ///< in the data section
  std::uint64_t bytes = 0;   ///< of its data
  std::uint64_t elements = 0;
  /// The shape as PyTorch orders it (outermost first): dims reversed.
  std::vector<std::int64_t> torch_shape() const;
};

class GgufFile {
 public:
  /// Maps and validates the whole file: the magic and version, every string
  /// and count against the file's size (a hostile count never allocates),
  /// the alignment, each tensor's type, dims (each >= 1, at most 4, the
  /// element count without overflow, whole blocks along the innermost one),
  /// its data inside the file and aligned, and no two tensors sharing a name
  /// or overlapping. Throws GgufError naming the file and the problem.
  static GgufFile open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  std::uint32_t version() const { return version_; }
  std::uint64_t alignment() const { return alignment_; }
  /// Where the data section starts in the file: a tensor's offset counts
  /// from here.
  std::uint64_t data_start() const { return data_start_; }
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const {
    return metadata_;
  }
  /// The metadata value of `key`; nullptr when absent.
  const GgufValue* find(const std::string& key) const;
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  /// The tensor named `name`; nullptr when absent.
  const GgufTensorInfo* tensor(const std::string& name) const;
  /// The first byte of a tensor's data in the mapping (valid while this
  /// file, or a copy of it, lives).
  const std::uint8_t* data(const GgufTensorInfo& tensor) const;
  /// Reads a tensor's bytes (tensor.bytes of them) from the file into `into`:
  /// large sequential reads instead of page faults over the mapping. A file
  /// that shrank or fails to read is a GgufError naming the file and tensor.
  void read(const GgufTensorInfo& tensor, void* into) const;
  /// Reads `count` bytes of a tensor's data from byte `from` of it (a block
  /// of whole rows). GgufError when they are not all in the tensor.
  void read(const GgufTensorInfo& tensor, void* into, std::uint64_t from,
            std::uint64_t count) const;
  /// Bytes of every tensor's data.
  std::uint64_t tensor_bytes() const;

 private:
  struct Mapping;
  std::filesystem::path path_;
  std::shared_ptr<Mapping> mapping_;
  std::uint32_t version_ = 0;
  std::uint64_t alignment_ = 32;
  std::uint64_t data_start_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<GgufTensorInfo> tensors_;
};

}  // namespace mold
