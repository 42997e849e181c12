#include "mold/oom_text.hpp"

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
}  // namespace

std::optional<Bytes> bytes_after(std::string_view text,
                                 std::string_view marker) {
  const auto at = text.find(marker);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t i = at + marker.size();
  while (i < text.size() && text[i] == ' ') ++i;
  const std::size_t number_start = i;
  while (i < text.size() && is_number_char(text[i])) ++i;
  std::size_t number_end = i;
  while (number_end > number_start &&
         !std::isdigit(static_cast<unsigned char>(text[number_end - 1])))
    --number_end;  // "1.2," at the end of a clause
  if (number_end == number_start) return std::nullopt;
  std::size_t unit_start = i;
  while (unit_start < text.size() && text[unit_start] == ' ') ++unit_start;
  std::size_t unit_end = unit_start;
  while (unit_end < text.size() && is_alpha(text[unit_end])) ++unit_end;
  const std::string number(
      text.substr(number_start, number_end - number_start));
  if (auto with_unit = try_parse_bytes(
          number + std::string(text.substr(unit_start, unit_end - unit_start))))
    return with_unit;
  return try_parse_bytes(number);
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
  while (number_start > 0 && is_number_char(text[number_start - 1]))
    --number_start;
  if (number_start == number_end) return std::nullopt;
  return try_parse_bytes(
      std::string(text.substr(number_start, number_end - number_start)) +
      std::string(text.substr(unit_start, end - unit_start)));
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
