#include "mold/tensor/safetensors.hpp"

#include <ATen/core/grad_mode.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

#include "mold/base/file_io.hpp"

namespace mold {

namespace fs = std::filesystem;

namespace {

struct DtypeInfo {
  const char* name;
  at::ScalarType type;  ///< float32 for fp8: the type its values are read in
  std::size_t size;
};

// The dtypes parse_safetensors_header() accepts, with their libtorch types.
// libtorch 1.13 has no float8: fp8 bytes are decoded (mold/tensor/float8.hpp).
constexpr DtypeInfo kDtypes[] = {
    {"F32", at::kFloat, 4},     {"F16", at::kHalf, 2},
    {"BF16", at::kBFloat16, 2}, {"F64", at::kDouble, 8},
    {"I64", at::kLong, 8},      {"I32", at::kInt, 4},
    {"I16", at::kShort, 2},     {"I8", at::kChar, 1},
    {"U8", at::kByte, 1},       {"BOOL", at::kBool, 1},
    {"F8_E4M3", at::kFloat, 1}, {"F8_E5M2", at::kFloat, 1},
};

const DtypeInfo* dtype_by_name(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

const DtypeInfo* dtype_by_type(at::ScalarType type) {
  for (const auto& d : kDtypes)
    if (type == d.type && !float8_format(d.name)) return &d;
  return nullptr;
}

/// `count` fp8 bytes decoded into float32.
void decode_float8(Float8Format format, const std::uint8_t* in,
                   std::size_t count, float* out) {
  const auto& table = float8_table(format);
  for (std::size_t i = 0; i < count; ++i) out[i] = table[in[i]];
}

}  // namespace

struct SafetensorsFile::Mapping {
  void* address = nullptr;
  std::size_t size = 0;
  const char* data = nullptr;  // start of the data section
  std::size_t data_size = 0;
  std::size_t data_offset = 0;  // where the data section starts in the file
  int fd = -1;                  // kept open for read_into()
  ~Mapping() {
    if (address && address != MAP_FAILED) munmap(address, size);
    if (fd >= 0) ::close(fd);
  }
};

SafetensorsFile SafetensorsFile::open(const fs::path& path) {
  auto fail = [&](const std::string& what) {
    return SafetensorsError(fmt::format("{}: {}", path.string(), what));
  };
  const OpenSafetensors opened = open_safetensors_file(path.string());
  const int fd = opened.fd;
  SafetensorsFile file;
  file.path_ = path;
  file.mapping_ = std::make_shared<Mapping>();
  const std::size_t size = std::size_t(opened.size);
  if (size < 8) {  // too short to map usefully: the parser says why
    ::close(fd);
    const char nothing[8] = {};
    parse_safetensors_header(nothing, size, path.string());
  }
  file.mapping_->size = size;
  file.mapping_->fd = fd;  // closed with the mapping
  file.mapping_->address =
      mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (file.mapping_->address == MAP_FAILED)
    throw fail("cannot be memory-mapped");
  const char* bytes = static_cast<const char*>(file.mapping_->address);
  SafetensorsHeader header =
      parse_safetensors_header(bytes, size, path.string());
  file.mapping_->data = bytes + header.data_offset;
  file.mapping_->data_offset = header.data_offset;
  file.mapping_->data_size = header.data_size;
  file.entries_ = std::move(header.entries);
  file.metadata_ = std::move(header.metadata);
  return file;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) out.push_back(name);
  return out;
}

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end())
    throw SafetensorsError(
        fmt::format("{}: no tensor '{}' ({} tensors in the file); is it a "
                    "checkpoint of this model?",
                    path_.string(), name, entries_.size()));
  return it->second;
}

at::Tensor SafetensorsFile::view(const std::string& name) const {
  const SafetensorsEntry& e = entry(name);
  const DtypeInfo* dtype = dtype_by_name(e.dtype);
  if (float8_format(e.dtype)) return tensor(name);  // decoded: no view
  void* data = const_cast<char*>(mapping_->data + e.begin);
  if (reinterpret_cast<std::uintptr_t>(data) % dtype->size != 0)
    return tensor(name);  // misaligned for its type: a copy instead of a view
  auto keep = mapping_;
  return at::from_blob(
      data, e.shape, [keep](void*) mutable { keep.reset(); },
      at::TensorOptions().dtype(dtype->type));
}

at::Tensor SafetensorsFile::tensor(const std::string& name) const {
  const SafetensorsEntry& e = entry(name);
  const DtypeInfo* dtype = dtype_by_name(e.dtype);
  at::Tensor out = at::empty(e.shape, at::TensorOptions().dtype(dtype->type));
  if (const auto format = float8_format(e.dtype)) {
    decode_float8(
        *format,
        reinterpret_cast<const std::uint8_t*>(mapping_->data + e.begin),
        e.end - e.begin, out.data_ptr<float>());
    return out;
  }
  if (e.end > e.begin)
    std::memcpy(out.data_ptr(), mapping_->data + e.begin, e.end - e.begin);
  return out;
}

void SafetensorsFile::copy_into(const std::string& name,
                                at::Tensor& destination) const {
  const SafetensorsEntry& e = entry(name);
  if (destination.sizes() != at::IntArrayRef(e.shape))
    throw SafetensorsError(
        fmt::format("{}: tensor '{}' has shape {}, the model expects {}",
                    path_.string(), name, c10::str(at::IntArrayRef(e.shape)),
                    c10::str(destination.sizes())));
  at::NoGradGuard no_grad;
  destination.copy_(view(name));
}

std::size_t SafetensorsFile::file_offset(const std::string& name) const {
  return mapping_->data_offset + entry(name).begin;
}

void SafetensorsFile::read_into(const std::string& name,
                                at::Tensor& destination,
                                std::size_t chunk_bytes) const {
  const SafetensorsEntry& e = entry(name);
  if (destination.sizes() != at::IntArrayRef(e.shape))
    throw SafetensorsError(
        fmt::format("{}: tensor '{}' has shape {}, the model expects {}",
                    path_.string(), name, c10::str(at::IntArrayRef(e.shape)),
                    c10::str(destination.sizes())));
  read_range_into(name, 0, destination, chunk_bytes);
}

void SafetensorsFile::read_range_into(const std::string& name,
                                      std::int64_t first,
                                      at::Tensor& destination,
                                      std::size_t chunk_bytes) const {
  const SafetensorsEntry& e = entry(name);
  if (!destination.device().is_cpu() || !destination.is_contiguous())
    throw InvalidArgument(
        fmt::format("{}: tensor '{}' can only be read into a contiguous cpu "
                    "tensor",
                    path_.string(), name));
  const DtypeInfo* stored = dtype_by_name(e.dtype);
  if (!stored)
    throw SafetensorsError(fmt::format(
        "{}: tensor '{}' is {}, which mold does not read as numbers",
        path_.string(), name, e.dtype));
  const std::size_t stored_elements = (e.end - e.begin) / stored->size;
  const auto count = std::size_t(destination.numel());
  if (first < 0 || std::size_t(first) > stored_elements ||
      count > stored_elements - std::size_t(first))
    throw InvalidArgument(fmt::format(
        "{}: tensor '{}' has {} elements; elements {}..{} were asked for",
        path_.string(), name, stored_elements, first,
        std::size_t(first) + count));
  const std::size_t bytes = count * stored->size;
  if (bytes == 0) return;
  const auto offset = off_t(mapping_->data_offset + e.begin +
                            std::size_t(first) * stored->size);
  // Sequential: the kernel reads ahead in large pieces.
  posix_fadvise(mapping_->fd, offset, off_t(bytes), POSIX_FADV_SEQUENTIAL);
  auto read_bytes = [&](void* into, std::size_t n, std::size_t from) {
    try {
      read_at(mapping_->fd, into, n, offset + off_t(from));
    } catch (const Error& error) {
      throw SafetensorsError(fmt::format("{}: tensor '{}': {}", path_.string(),
                                         name, error.what()));
    }
  };
  at::NoGradGuard no_grad;
  const auto float8 = float8_format(e.dtype);
  if (destination.scalar_type() == stored->type && !float8) {
    read_bytes(destination.data_ptr(), bytes, 0);
    return;
  }
  // Another dtype: a bounded buffer in the stored dtype, converted into the
  // destination piece by piece.
  const auto elements = std::int64_t(count);
  const std::int64_t chunk = std::max<std::int64_t>(
      1, std::int64_t(chunk_bytes / c10::elementSize(stored->type)));
  at::Tensor buffer = at::empty({std::min(chunk, elements)},
                                at::TensorOptions().dtype(stored->type));
  // fp8: the bytes land at the end of the float buffer and are decoded in
  // place, front to back (each float is written after its byte is read).
  at::Tensor flat = destination.view({-1});
  for (std::int64_t done = 0; done < elements; done += chunk) {
    const std::int64_t n = std::min(chunk, elements - done);
    at::Tensor piece = buffer.narrow(0, 0, n);
    if (float8) {
      auto* values = piece.data_ptr<float>();
      auto* raw = reinterpret_cast<std::uint8_t*>(values + n) - n;
      read_bytes(raw, std::size_t(n), std::size_t(done));
      decode_float8(*float8, raw, std::size_t(n), values);
    } else {
      read_bytes(piece.data_ptr(), std::size_t(n) * stored->size,
                 std::size_t(done) * stored->size);
    }
    flat.narrow(0, done, n).copy_(piece);
  }
}

void SafetensorsFile::read_bytes_into(const std::string& name,
                                      std::size_t first, std::size_t count,
                                      void* destination) const {
  const SafetensorsEntry& e = entry(name);
  if (first > e.end - e.begin || count > e.end - e.begin - first)
    throw InvalidArgument(fmt::format(
        "{}: tensor '{}' has {} bytes; bytes {}..{} were asked for",
        path_.string(), name, e.end - e.begin, first, first + count));
  if (count == 0) return;
  const auto offset = off_t(mapping_->data_offset + e.begin + first);
  posix_fadvise(mapping_->fd, offset, off_t(count), POSIX_FADV_SEQUENTIAL);
  try {
    read_at(mapping_->fd, destination, count, offset);
  } catch (const Error& error) {
    throw SafetensorsError(
        fmt::format("{}: tensor '{}': {}", path_.string(), name, error.what()));
  }
}

void save_safetensors(
    const fs::path& path,
    const std::vector<std::pair<std::string, at::Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> contiguous;
  std::size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const DtypeInfo* dtype = dtype_by_type(t.scalar_type());
    if (!dtype)
      throw SafetensorsError(
          fmt::format("{}: tensor '{}' has dtype {}, which safetensors "
                      "cannot store",
                      path.string(), name, c10::toString(t.scalar_type())));
    if (header.contains(name))
      throw SafetensorsError(
          fmt::format("{}: tensor '{}' given twice", path.string(), name));
    at::Tensor c = t.detach().to(at::kCPU).contiguous();
    const std::size_t bytes = c.nbytes();
    header[name] = {{"dtype", dtype->name},
                    {"shape", c.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    contiguous.push_back(std::move(c));
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned

  try {
    write_file_atomically(path, "safetensors output", [&](std::ostream& out) {
      std::uint64_t n = json.size();
      char length[8];
      for (int i = 0; i < 8; ++i) length[i] = char((n >> (8 * i)) & 0xff);
      out.write(length, 8);
      out.write(json.data(), std::streamsize(json.size()));
      for (const auto& c : contiguous)
        out.write(static_cast<const char*>(c.data_ptr()),
                  std::streamsize(c.nbytes()));
    });
  } catch (const SafetensorsError&) {
    throw;
  } catch (const Error& e) {
    throw SafetensorsError(e.what());
  }
}

}  // namespace mold
