#include "mold/tensor/safetensors_header.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "config/json_document.hpp"
#include "mold/base/bytes.hpp"
#include "mold/base/file_io.hpp"
#include "mold/base/text.hpp"

namespace mold {

namespace {

struct DtypeSize {
  const char* name;
  std::size_t size;
};

constexpr DtypeSize kDtypeSizes[] = {
    {"F32", 4}, {"F16", 2},  {"BF16", 2},    {"F64", 8},
    {"I64", 8}, {"I32", 4},  {"I16", 2},     {"I8", 1},
    {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
};

// Integers only: nlohmann would truncate 8.5 to 8 silently.
bool whole_numbers(const nlohmann::json& array) {
  if (!array.is_array()) return false;
  for (const auto& v : array)
    if (!v.is_number_integer()) return false;
  return true;
}

// Whole numbers from 0 to 2^63 - 1: what get<int64_t>() and
// get<std::size_t>() take without wrapping.
bool counts(const nlohmann::json& array) {
  for (const auto& v : array)
    if (!v.is_number_unsigned() ||
        v.get<std::uint64_t>() > std::uint64_t(INT64_MAX))
      return false;
  return true;
}

}  // namespace

std::size_t safetensors_dtype_size(const std::string& dtype) {
  for (const auto& d : kDtypeSizes)
    if (dtype == d.name) return d.size;
  return 0;
}

OpenSafetensors open_safetensors_file(const std::string& path) {
  auto fail = [&](const std::string& what) {
    return SafetensorsError(fmt::format("{}: {}", path, what));
  };
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is then refused
  // as not a regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw fail(
        fmt::format("cannot open: {}. Check the path", std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw fail("cannot read its size");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw fail(fmt::format("is {}, not a regular file: give a safetensors file",
                           describe_file_type(path)));
  }
  return {fd, std::uint64_t(st.st_size)};
}

SafetensorsHeader parse_safetensors_header(const char* bytes, std::size_t size,
                                           const std::string& origin) {
  auto fail = [&](const std::string& what) {
    return SafetensorsError(fmt::format("{}: {}", origin, what));
  };
  if (size < 8)
    throw fail(fmt::format(
        "truncated: {} bytes, a safetensors file starts with an 8-byte "
        "header length",
        size));
  std::uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i)
    header_size = (header_size << 8) | std::uint8_t(bytes[i]);
  if (header_size > size - 8)
    throw fail(fmt::format(
        "truncated, or not a safetensors file: the header says {} bytes "
        "of JSON but only {} follow",
        header_size, size - 8));
  if (const std::size_t depth = json_nesting_depth(
          std::string_view(bytes + 8, std::size_t(header_size)));
      depth > kMaxJsonNesting)
    throw fail(
        fmt::format("the JSON header nests {} deep (a safetensors "
                    "header nests 3): the file is damaged or hostile",
                    depth));
  nlohmann::json json;
  // The parser keeps the last of two entries of one name, and a file that
  // names a tensor twice is damaged whichever it meant: refused naming it.
  std::set<std::string> names;
  const nlohmann::json::parser_callback_t once =
      [&](int depth, nlohmann::json::parse_event_t event,
          nlohmann::json& parsed) {
        if (depth == 1 && event == nlohmann::json::parse_event_t::key &&
            !names.insert(parsed.get<std::string>()).second)
          throw fail(fmt::format(
              "the header names {} '{}' twice: the file is damaged (which "
              "entry is meant cannot be told); write it again",
              parsed == "__metadata__" ? "the section" : "tensor",
              escape_control(parsed.get<std::string>())));
        return true;
      };
  try {
    json = nlohmann::json::parse(bytes + 8, bytes + 8 + header_size, once);
  } catch (const nlohmann::json::exception& e) {
    throw fail(fmt::format("the JSON header is invalid: {}", e.what()));
  }
  if (!json.is_object()) throw fail("the JSON header is not an object");
  SafetensorsHeader header;
  header.data_offset = 8 + header_size;
  header.data_size = size - 8 - header_size;

  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for (const auto& [name, value] : json.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) throw fail("__metadata__ is not an object");
      for (const auto& [k, v] : value.items())
        header.metadata[k] = v.is_string() ? v.get<std::string>() : v.dump();
      continue;
    }
    const std::string tensor_name = name;  // no capture of a binding (C++17)
    auto bad = [&](const std::string& what) {
      return fail(fmt::format("tensor '{}': {}", tensor_name, what));
    };
    if (!value.is_object() || !value.contains("dtype") ||
        !value.contains("shape") || !value.contains("data_offsets"))
      throw bad("needs dtype, shape and data_offsets");
    SafetensorsEntry e;
    e.name = name;
    if (!whole_numbers(value["shape"]))
      throw bad(fmt::format("shape {} must be an array of whole numbers",
                            json_document::shown(value["shape"])));
    if (!counts(value["shape"]))
      throw bad(fmt::format(
          "shape {} has a dimension below 0 or above 2^63 - 1: the header "
          "is corrupt",
          json_document::shown(value["shape"])));
    if (!whole_numbers(value["data_offsets"]))
      throw bad("data_offsets must be [begin, end], two whole numbers");
    if (!counts(value["data_offsets"]))
      throw bad(fmt::format(
          "data_offsets {} must be byte offsets from 0 to 2^63 - 1: the "
          "header is corrupt",
          json_document::shown(value["data_offsets"])));
    try {
      e.dtype = value["dtype"].get<std::string>();
      e.shape = value["shape"].get<std::vector<int64_t>>();
      const auto offsets =
          value["data_offsets"].get<std::vector<std::size_t>>();
      if (offsets.size() != 2) throw bad("data_offsets must be [begin, end]");
      e.begin = offsets[0];
      e.end = offsets[1];
    } catch (const nlohmann::json::exception&) {
      throw bad(
          "dtype must be a string, shape and data_offsets arrays of integers");
    }
    const std::size_t element = safetensors_dtype_size(e.dtype);
    if (element == 0)
      throw bad(fmt::format(
          "unsupported dtype '{}' (mold reads F32, F16, BF16, F8_E4M3, "
          "F8_E5M2, F64, I64, I32, I16, I8, U8, BOOL){}",
          e.dtype,
          e.dtype.rfind("F8", 0) == 0 || e.dtype.rfind("F4", 0) == 0 ||
                  e.dtype.rfind("F6", 0) == 0
              ? "; this low-precision format is not one mold decodes: use "
                "the model's bf16, fp8_e4m3fn or GGUF file"
              : ""));
    Bytes count = 1;
    for (auto d : e.shape) {  // 0 <= d < 2^63 (counts())
      if (Bytes(d) > kMaxBytes / std::max<Bytes>(count, 1) ||
          count * Bytes(d) > kMaxBytes / element)
        throw bad(
            fmt::format("shape {} of {} is more bytes than any file holds "
                        "(2^63 or more): the header is corrupt",
                        list_text(e.shape), e.dtype));
      count *= Bytes(d);
    }
    if (e.end < e.begin || e.end > header.data_size)
      throw bad(fmt::format(
          "data_offsets [{}, {}] out of range: the data section has {} bytes "
          "(is the file truncated?)",
          e.begin, e.end, header.data_size));
    if (e.end - e.begin != count * element)
      throw bad(fmt::format("{} bytes for shape {} of {}: expected {}",
                            e.end - e.begin, list_text(e.shape), e.dtype,
                            count * element));
    ranges.emplace_back(e.begin, e.end);
    header.entries.emplace(name, std::move(e));
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      throw fail(fmt::format("tensor data overlaps at bytes {}..{}",
                             ranges[i].first, ranges[i - 1].second));
  return header;
}

}  // namespace mold
