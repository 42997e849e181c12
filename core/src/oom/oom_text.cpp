#include "mold/oom/oom_text.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

namespace mold {

namespace {
bool is_number_char(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == ',';
}
bool is_alpha(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0;
}

/// "<number> <unit>" as bytes. A unit word that is a unit decides: a number
/// too large for it, or a negative one, is absent (nullopt), never read as
/// something else; a following word that is not a unit leaves a bare number,
/// which is bytes.
std::optional<Bytes> number_with_unit(const std::string& number,
                                      std::string_view unit) {
  if (number.empty() || number.front() == '-') return std::nullopt;
  if (is_byte_unit(unit)) return try_parse_bytes(number + std::string(unit));
  return try_parse_bytes(number);
}
}  // namespace

std::optional<Bytes> bytes_after(std::string_view text,
                                 std::string_view marker) {
  const auto at = text.find(marker);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t i = at + marker.size();
  while (i < text.size() && text[i] == ' ') ++i;
  const std::size_t number_start = i;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  while (i < text.size() && is_number_char(text[i])) ++i;
  // A scientific exponent: "1e308", "2.5E+3".
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
    const std::size_t digits = j;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])))
      ++j;
    if (j > digits) i = j;
  }
  std::size_t number_end = i;
  while (number_end > number_start &&
         !std::isdigit(static_cast<unsigned char>(text[number_end - 1])))
    --number_end;  // "1.2," at the end of a clause
  if (number_end == number_start) return std::nullopt;
  std::size_t unit_start = i;
  while (unit_start < text.size() && text[unit_start] == ' ') ++unit_start;
  std::size_t unit_end = unit_start;
  while (unit_end < text.size() && is_alpha(text[unit_end])) ++unit_end;
  return number_with_unit(
      std::string(text.substr(number_start, number_end - number_start)),
      text.substr(unit_start, unit_end - unit_start));
}

std::optional<Bytes> bytes_before(std::string_view text,
                                  std::string_view marker) {
  const auto at = text.find(marker);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t end = at;
  while (end > 0 && text[end - 1] == ' ') --end;
  std::size_t unit_start = end;
  while (unit_start > 0 && is_alpha(text[unit_start - 1])) --unit_start;
  std::size_t number_end = unit_start;
  while (number_end > 0 && text[number_end - 1] == ' ') --number_end;
  std::size_t number_start = number_end;
  auto scientific = [&](std::size_t k) {
    const char c = text[k];
    return is_number_char(c) || c == 'e' || c == 'E' || c == '+' || c == '-';
  };
  while (number_start > 0 && scientific(number_start - 1)) --number_start;
  // Only what can start a number: "here5" gives "5", "-5" stays negative.
  while (number_start < number_end &&
         !std::isdigit(static_cast<unsigned char>(text[number_start])) &&
         text[number_start] != '-' && text[number_start] != '.')
    ++number_start;
  if (number_start == number_end) return std::nullopt;
  return number_with_unit(
      std::string(text.substr(number_start, number_end - number_start)),
      text.substr(unit_start, end - unit_start));
}

OomReport start_report(const ErrorContext& error, std::string backend) {
  OomReport report;
  report.backend = std::move(backend);
  report.origin = error.origin;
  report.raw_message = error.message;
  report.message = strip_backtrace(error.message);
  return report;
}

std::string collapse_whitespace(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string pytorch_gpu_device(std::string_view text) {
  const auto at = text.find("GPU ");
  if (at == std::string_view::npos) return {};
  std::size_t begin = at + 4;
  while (begin < text.size() && text[begin] == ' ') ++begin;  // "GPU  0" (IPEX)
  std::size_t end = begin;
  while (end < text.size() &&
         std::isdigit(static_cast<unsigned char>(text[end])))
    ++end;
  return end > begin ? "GPU " + std::string(text.substr(begin, end - begin))
                     : std::string();
}

void read_pytorch_allocator_numbers(std::string_view text, OomReport& report) {
  auto set = [](std::optional<Bytes>& field, std::optional<Bytes> value) {
    if (value) field = value;
  };
  set(report.requested, bytes_after(text, "Tried to allocate "));
  if (text.find("total capacity of") != std::string_view::npos ||
      text.find("total capacty of") != std::string_view::npos) {
    // PyTorch >= 2.1 ("capacty" until 2.2): "GPU 0 has a total capacity
    // of 44.98 GiB of which 3.69 GiB is free. Process 3385 has 41.2 GiB memory
    // in use. Including non-PyTorch memory, this process has 41.2 GiB memory in
    // use. Of the allocated memory 38.1 GiB is allocated by PyTorch, and 2.48
    // GiB is reserved by PyTorch but unallocated."
    set(report.capacity, bytes_after(text, "total capacity of "));
    set(report.capacity, bytes_after(text, "total capacty of "));
    set(report.free, bytes_before(text, " is free"));
    set(report.allocated, bytes_before(text, " is allocated by PyTorch"));
    set(report.reserved_unallocated,
        bytes_before(text, " is reserved by PyTorch but unallocated"));
    const auto in_use = bytes_after(text, "this process has ");
    // A failed NVML query prints nonsense ("17179869184.00 GiB"): keep only a
    // use that fits on the device.
    if (in_use && (!report.capacity || *in_use <= *report.capacity))
      report.process_in_use = in_use;
    if (report.capacity && report.free && report.process_in_use &&
        *report.capacity >= *report.free + *report.process_in_use)
      report.other_processes =
          *report.capacity - *report.free - *report.process_in_use;
  } else if (text.find(" total capacity;") != std::string_view::npos) {
    // PyTorch < 2.1: "(GPU 0; 7.79 GiB total capacity; 5.47 GiB already
    // allocated; 1.2 GiB free; 6.02 GiB reserved in total by PyTorch)";
    // before 1.4 "... 4.68 MiB cached)", the allocator's unused cache.
    set(report.capacity, bytes_before(text, " total capacity;"));
    set(report.allocated, bytes_before(text, " already allocated"));
    set(report.free, bytes_before(text, " free;"));
    const auto reserved = bytes_before(text, " reserved in total by PyTorch");
    if (reserved && report.allocated && *reserved >= *report.allocated)
      report.reserved_unallocated = *reserved - *report.allocated;
    set(report.reserved_unallocated, bytes_before(text, " cached)"));
  }
  if (report.device.empty()) report.device = pytorch_gpu_device(text);
  assess_fragmentation(report);
}

bool contains_nocase(std::string_view text, std::string_view needle) {
  return std::search(text.begin(), text.end(), needle.begin(), needle.end(),
                     [](char a, char b) {
                       return std::tolower(static_cast<unsigned char>(a)) ==
                              std::tolower(static_cast<unsigned char>(b));
                     }) != text.end();
}

std::string strip_backtrace(std::string_view text) {
  std::vector<std::string> kept;
  std::istringstream in{std::string(text)};
  std::string line;
  bool in_frames = false;
  while (std::getline(in, line)) {
    std::string_view trimmed = line;
    while (!trimmed.empty() &&
           (trimmed.front() == ' ' || trimmed.front() == '\t'))
      trimmed.remove_prefix(1);
    const bool frame_start =
        trimmed.rfind("Exception raised from", 0) == 0 ||
        trimmed.rfind("Traceback (most recent call last)", 0) == 0 ||
        trimmed.rfind("Stack backtrace:", 0) == 0;
    if (frame_start) {
      in_frames = true;
      continue;
    }
    const bool frame_line =
        trimmed.rfind("frame #", 0) == 0 || trimmed.rfind("File \"", 0) == 0 ||
        trimmed.rfind("at ", 0) == 0 ||
        (!trimmed.empty() &&
         std::isdigit(static_cast<unsigned char>(trimmed.front())) &&
         trimmed.find(": ") != std::string_view::npos && in_frames);
    if (in_frames &&
        (frame_line || (line.size() > trimmed.size() && !trimmed.empty())))
      continue;  // indented lines belong to the frame list
    in_frames = false;
    if (frame_line && trimmed.rfind("frame #", 0) == 0) continue;
    kept.emplace_back(line);
  }
  while (!kept.empty() &&
         kept.back().find_first_not_of(" \t\r") == std::string::npos)
    kept.pop_back();
  std::size_t first = 0;
  while (first < kept.size() &&
         kept[first].find_first_not_of(" \t\r") == std::string::npos)
    ++first;
  std::string out;
  for (std::size_t i = first; i < kept.size(); ++i)
    out += (i == first ? "" : "\n") + kept[i];
  return out;
}

}  // namespace mold
