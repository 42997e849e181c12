#pragma once
/// The header of a safetensors file, parsed and validated without libtorch: an
/// 8-byte little-endian length, then a JSON object {name: {dtype, shape,
/// data_offsets: [begin, end]}, "__metadata__": {...}}, then the tensor bytes.
/// The torch library's SafetensorsFile (mold/tensor/safetensors.hpp) maps a
/// file and reads it through this parser; tools that only list a file's
/// tensors, and the fuzzer, use it alone.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "mold/base/error.hpp"

namespace mold {

/// A file that is not a valid safetensors file, or a tensor that is absent or
/// does not fit what was asked. The message names the file and the tensor.
class SafetensorsError : public Error {
 public:
  using Error::Error;
};

struct SafetensorsEntry {
  std::string name;
  std::string dtype;  ///< as in the file: "F32", "F16", "BF16", ...
  std::vector<int64_t> shape;
  std::size_t begin = 0;  ///< offset in the data section
  std::size_t end = 0;
};

/// The bytes of one element of a safetensors dtype ("F32" -> 4), or 0 for a
/// dtype mold does not read.
std::size_t safetensors_dtype_size(const std::string& dtype);

struct SafetensorsHeader {
  std::map<std::string, SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;
  std::size_t data_offset = 0;  ///< where the data section starts in the file
  std::size_t data_size = 0;    ///< its bytes
};

/// A safetensors file opened read-only: its descriptor (the caller closes
/// it) and its size.
struct OpenSafetensors {
  int fd = -1;
  std::uint64_t size = 0;
};
/// Opens `path` without blocking (a FIFO is never waited on) and checks, on
/// the descriptor, that it is a regular file: SafetensorsError naming the
/// path and what it is instead otherwise. What every safetensors reader opens
/// files with.
OpenSafetensors open_safetensors_file(const std::string& path);

/// Parses the header of a file of `size` bytes that starts at `bytes`: a
/// truncated file, bad JSON, an unknown dtype, a size that disagrees with the
/// shape, or offsets out of range or overlapping are SafetensorsErrors that
/// start with `origin` (the file's path) and name the tensor.
SafetensorsHeader parse_safetensors_header(const char* bytes, std::size_t size,
                                           const std::string& origin);

}  // namespace mold
