#include "mold/net/sse.hpp"

#include <fmt/format.h>

#include <mold/base/error.hpp>

namespace mold::net {

std::string format_sse(std::string_view event, std::string_view data) {
  std::string out = fmt::format("event: {}\n", event);
  std::size_t start = 0;
  while (true) {
    const std::size_t end = data.find('\n', start);
    out += "data: ";
    out +=
        data.substr(start, end == std::string_view::npos ? end : end - start);
    out += '\n';
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  out += '\n';
  return out;
}

std::string sse_comment(std::string_view text) {
  return fmt::format(": {}\n\n", text);
}

SseParser::SseParser(std::size_t max_event_bytes) : max_(max_event_bytes) {}

void SseParser::feed(std::string_view bytes,
                     const std::function<void(const SseEvent&)>& on_event) {
  std::size_t start = 0;
  while (start < bytes.size()) {
    const std::size_t end = bytes.find('\n', start);
    if (end == std::string_view::npos) {
      partial_.append(bytes.substr(start));
      if (partial_.size() > max_)
        throw ParseError(
            fmt::format("event stream: a line longer than {} bytes", max_));
      return;
    }
    std::string_view text = bytes.substr(start, end - start);
    std::string joined;
    if (!partial_.empty()) {
      joined = std::move(partial_);
      partial_.clear();
      joined.append(text);
      text = joined;
    }
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    line(text, on_event);
    start = end + 1;
  }
}

void SseParser::line(std::string_view text,
                     const std::function<void(const SseEvent&)>& on_event) {
  if (text.empty()) {
    if (has_data_) on_event(current_);
    current_ = SseEvent();
    has_data_ = false;
    return;
  }
  if (text.front() == ':') return;  // a comment
  const std::size_t colon = text.find(':');
  const std::string_view field = text.substr(0, colon);
  std::string_view value = colon == std::string_view::npos
                               ? std::string_view()
                               : text.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "event") {
    current_.event = std::string(value);
  } else if (field == "data") {
    if (has_data_) current_.data += '\n';
    current_.data.append(value);
    has_data_ = true;
    if (current_.data.size() > max_)
      throw ParseError(
          fmt::format("event stream: an event larger than {} bytes", max_));
  }
  // id, retry and unknown fields: not used by mold.
}

}  // namespace mold::net
