#include "mold/tensor/gguf_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>

#include "mold/base/file_io.hpp"
#include "mold/base/text.hpp"

namespace mold {

struct GgufFile::Mapping {
  void* address = nullptr;
  std::size_t size = 0;
  int fd = -1;  // kept open for read()
  ~Mapping() {
    if (address && address != MAP_FAILED) munmap(address, size);
    if (fd >= 0) ::close(fd);
  }
};

std::optional<std::uint64_t> GgufValue::as_unsigned() const {
  if (const auto* u = std::get_if<std::uint64_t>(&value)) return *u;
  if (const auto* i = std::get_if<std::int64_t>(&value))
    if (*i >= 0) return std::uint64_t(*i);
  return std::nullopt;
}

const std::string* GgufValue::as_string() const {
  return std::get_if<std::string>(&value);
}

std::vector<std::int64_t> GgufTensorInfo::torch_shape() const {
  std::vector<std::int64_t> shape;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it)
    shape.push_back(std::int64_t(*it));
  return shape;
}

namespace {

/// Reads the header from a bounded buffer; every read checks what is left.
class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size, std::string file)
      : data_(data), size_(size), file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw GgufError(fmt::format("GGUF {}: {} (at byte {})", file_, what, at_));
  }

  std::size_t at() const { return at_; }
  std::size_t left() const { return size_ - at_; }

  /// Counts metadata values: a file holds at most kMaxValues of them (a
  /// tokenizer's vocabulary and merges are ~300,000), so a header cannot
  /// make mold hold gigabytes of parsed values.
  void count_values(std::uint64_t n) {
    constexpr std::uint64_t kMaxValues = std::uint64_t(1) << 22;
    if (n > kMaxValues - values_)
      fail(
          fmt::format("its metadata holds more than {} values (an array of "
                      "{} more): no model file needs that many",
                      kMaxValues, n));
    values_ += n;
  }

  const std::uint8_t* take(std::size_t n, const char* what) {
    if (n > left())
      fail(
          fmt::format("the file ends inside {} (it needs {} more bytes, {} "
                      "are left): is it truncated?",
                      what, n, left()));
    const std::uint8_t* p = data_ + at_;
    at_ += n;
    return p;
  }
  template <class T> T number(const char* what) {
    T value;
    std::memcpy(&value, take(sizeof(T), what), sizeof(T));
    return value;
  }
  std::string string(const char* what) {
    const auto length = number<std::uint64_t>(what);
    if (length > left())
      fail(fmt::format("{} claims {} bytes, more than the {} left in the file",
                       what, length, left()));
    const auto* p = take(std::size_t(length), what);
    return std::string(reinterpret_cast<const char*>(p), std::size_t(length));
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::string file_;
  std::size_t at_ = 0;
  std::uint64_t values_ = 0;
};

GgufValue read_value(Reader& r, std::uint32_t type, int depth) {
  using Type = GgufValue::Type;
  GgufValue v;
  v.type = Type(type);
  switch (Type(type)) {
  case Type::u8:
    v.value = std::uint64_t(r.number<std::uint8_t>("a value"));
    break;
  case Type::i8:
    v.value = std::int64_t(r.number<std::int8_t>("a value"));
    break;
  case Type::u16:
    v.value = std::uint64_t(r.number<std::uint16_t>("a value"));
    break;
  case Type::i16:
    v.value = std::int64_t(r.number<std::int16_t>("a value"));
    break;
  case Type::u32:
    v.value = std::uint64_t(r.number<std::uint32_t>("a value"));
    break;
  case Type::i32:
    v.value = std::int64_t(r.number<std::int32_t>("a value"));
    break;
  case Type::u64:
    v.value = r.number<std::uint64_t>("a value");
    break;
  case Type::i64:
    v.value = r.number<std::int64_t>("a value");
    break;
  case Type::f32:
    v.value = double(r.number<float>("a value"));
    break;
  case Type::f64:
    v.value = r.number<double>("a value");
    break;
  case Type::boolean: {
    const auto b = r.number<std::uint8_t>("a value");
    if (b > 1) r.fail(fmt::format("a boolean is {}, not 0 or 1", b));
    v.value = b == 1;
    break;
  }
  case Type::string:
    v.value = r.string("a string value");
    break;
  case Type::array: {
    if (depth >= 4) r.fail("arrays nest more than 4 deep");
    const auto element = r.number<std::uint32_t>("an array's type");
    const auto count = r.number<std::uint64_t>("an array's length");
    // Each element takes at least a byte: a count beyond what is left is
    // a lie, refused before anything is allocated.
    if (count > r.left())
      r.fail(
          fmt::format("an array claims {} elements, more than the {} "
                      "bytes left in the file",
                      count, r.left()));
    r.count_values(count);
    std::vector<GgufValue> items;
    items.reserve(std::size_t(std::min<std::uint64_t>(count, 1 << 16)));
    for (std::uint64_t i = 0; i < count; ++i)
      items.push_back(read_value(r, element, depth + 1));
    v.value = std::move(items);
    break;
  }
  default:
    r.fail(fmt::format("unknown metadata value type {}", type));
  }
  return v;
}

}  // namespace

GgufFile GgufFile::open(const std::filesystem::path& path) {
  try {
    require_regular_input(path, "GGUF");
  } catch (const InvalidArgument& e) {
    // A file that is missing, a FIFO or a folder is no GGUF: a failure
    // naming it, not a usage error.
    throw GgufError(e.what());
  }
  GgufFile file;
  file.path_ = path;
  const std::string name = path.string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw GgufError(
        fmt::format("GGUF {}: cannot open it: {}", name, std::strerror(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    throw GgufError(fmt::format("GGUF {}: cannot read its size", name));
  }
  file.mapping_ = std::make_shared<Mapping>();
  file.mapping_->size = std::size_t(st.st_size);
  if (file.mapping_->size < 24) {
    ::close(fd);
    throw GgufError(
        fmt::format("GGUF {}: {} bytes, too short for a GGUF header (24 bytes)",
                    name, file.mapping_->size));
  }
  file.mapping_->fd = fd;  // closed with the mapping
  file.mapping_->address =
      mmap(nullptr, file.mapping_->size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (file.mapping_->address == MAP_FAILED) {
    file.mapping_->address = nullptr;
    throw GgufError(
        fmt::format("GGUF {}: cannot map it: {}", name, std::strerror(errno)));
  }
  const auto* bytes = static_cast<const std::uint8_t*>(file.mapping_->address);
  Reader r(bytes, file.mapping_->size, name);
  if (std::memcmp(r.take(4, "the magic"), "GGUF", 4) != 0)
    throw GgufError(fmt::format(
        "GGUF {}: not a GGUF file (it does not start with \"GGUF\")", name));
  file.version_ = r.number<std::uint32_t>("the version");
  if (file.version_ != 2 && file.version_ != 3)
    r.fail(fmt::format("version {}; mold reads GGUF versions 2 and 3",
                       file.version_));
  const auto tensor_count = r.number<std::uint64_t>("the tensor count");
  const auto metadata_count = r.number<std::uint64_t>("the metadata count");
  // A metadata entry takes at least 12 bytes, a tensor info at least 24.
  if (metadata_count > r.left() / 12)
    r.fail(fmt::format("{} metadata entries cannot fit in the {} bytes left",
                       metadata_count, r.left()));
  std::set<std::string> keys;
  for (std::uint64_t i = 0; i < metadata_count; ++i) {
    std::string key = r.string("a metadata key");
    // As ggml's own reader: a key given twice (general.architecture "lumina2",
    // then "flux") leaves which value is meant unknown.
    if (!keys.insert(key).second)
      r.fail(
          fmt::format("the metadata key \"{}\" is given twice; which value "
                      "is meant cannot be told: the file is damaged",
                      escape_control(key)));
    const auto type = r.number<std::uint32_t>("a metadata type");
    GgufValue value;
    try {
      value = read_value(r, type, 0);
    } catch (const GgufError& e) {
      throw GgufError(
          fmt::format("{} (metadata \"{}\")", e.what(), escape_control(key)));
    }
    file.metadata_.emplace_back(std::move(key), std::move(value));
  }
  if (const GgufValue* a = file.find("general.alignment")) {
    const auto alignment = a->as_unsigned();
    if (!alignment || *alignment == 0 || *alignment > (1u << 20) ||
        (*alignment & (*alignment - 1)))
      r.fail("general.alignment is not a power of two from 1 to 1 MiB");
    file.alignment_ = *alignment;
  }
  if (tensor_count > r.left() / 24)
    r.fail(fmt::format("{} tensor infos cannot fit in the {} bytes left",
                       tensor_count, r.left()));
  std::set<std::string> names;
  for (std::uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensorInfo t;
    t.name = r.string("a tensor name");
    const std::string shown = escape_control(t.name);
    const auto n_dims = r.number<std::uint32_t>("a tensor's dimension count");
    if (n_dims < 1 || n_dims > 4)
      r.fail(fmt::format("tensor \"{}\" has {} dimensions; GGUF allows 1 to 4",
                         shown, n_dims));
    t.elements = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      const auto dim = r.number<std::uint64_t>("a tensor's dimension");
      if (dim == 0 || dim > (std::uint64_t(1) << 40) ||
          t.elements > (std::uint64_t(1) << 48) / dim)
        r.fail(fmt::format("tensor \"{}\" has a dimension of {}: out of range",
                           shown, dim));
      t.elements *= dim;
      t.dims.push_back(dim);
    }
    t.type = r.number<std::uint32_t>("a tensor's type");
    t.offset = r.number<std::uint64_t>("a tensor's offset");
    const GgmlTypeInfo* type = ggml_type_info(t.type);
    if (!type)
      r.fail(
          fmt::format("tensor \"{}\" {}", shown, unreadable_ggml_type(t.type)));
    if (t.dims[0] % type->block_elements)
      r.fail(
          fmt::format("tensor \"{}\": its innermost dimension {} is not a "
                      "whole number of {} blocks ({} elements)",
                      shown, t.dims[0], type->name, type->block_elements));
    t.bytes = *ggml_bytes(*type, t.elements);
    if (!names.insert(t.name).second)
      r.fail(fmt::format("two tensors are named \"{}\"", shown));
    file.tensors_.push_back(std::move(t));
  }
  const std::uint64_t header_end = r.at();
  file.data_start_ =
      (header_end + file.alignment_ - 1) / file.alignment_ * file.alignment_;
  const std::uint64_t size = file.mapping_->size;
  if (file.data_start_ > size && !file.tensors_.empty())
    r.fail("the file ends before its data section");
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const auto& t : file.tensors_) {
    const std::string shown = escape_control(t.name);
    if (t.offset % file.alignment_)
      throw GgufError(fmt::format(
          "GGUF {}: tensor \"{}\" starts at data offset {}, not a multiple "
          "of the alignment {}",
          name, shown, t.offset, file.alignment_));
    if (t.offset > size || t.bytes > size - file.data_start_ ||
        t.offset > size - file.data_start_ - t.bytes)
      throw GgufError(fmt::format(
          "GGUF {}: tensor \"{}\" ({}, {} bytes at data offset {}) goes past "
          "the end of the file ({} bytes): is it truncated?",
          name, shown, ggml_type_name(t.type), t.bytes, t.offset, size));
    ranges.emplace_back(t.offset, t.offset + t.bytes);
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      throw GgufError(
          fmt::format("GGUF {}: two tensors' data overlap (at data offset {})",
                      name, ranges[i].first));
  return file;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  for (const auto& [k, v] : metadata_)
    if (k == key) return &v;
  return nullptr;
}

const GgufTensorInfo* GgufFile::tensor(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

const std::uint8_t* GgufFile::data(const GgufTensorInfo& tensor) const {
  return static_cast<const std::uint8_t*>(mapping_->address) + data_start_ +
         tensor.offset;
}

void GgufFile::read(const GgufTensorInfo& tensor, void* into) const {
  read(tensor, into, 0, tensor.bytes);
}

void GgufFile::read(const GgufTensorInfo& tensor, void* into,
                    std::uint64_t from, std::uint64_t count) const {
  if (from > tensor.bytes || count > tensor.bytes - from)
    throw GgufError(fmt::format(
        "GGUF {}: tensor \"{}\" has {} bytes; bytes {}..{} were asked for",
        path_.string(), tensor.name, tensor.bytes, from, from + count));
  if (count == 0) return;
  const auto offset = std::int64_t(data_start_ + tensor.offset + from);
  posix_fadvise(mapping_->fd, off_t(offset), off_t(count),
                POSIX_FADV_SEQUENTIAL);
  try {
    read_at(mapping_->fd, into, std::size_t(count), offset);
  } catch (const Error& error) {
    throw GgufError(fmt::format("GGUF {}: tensor \"{}\": {}", path_.string(),
                                tensor.name, error.what()));
  }
}

std::uint64_t GgufFile::tensor_bytes() const {
  std::uint64_t total = 0;
  for (const auto& t : tensors_) total += t.bytes;
  return total;
}

}  // namespace mold
