#pragma once
/// Server-sent events (the WHATWG "text/event-stream" format): what
/// POST /api/generate/stream writes and the client reads back.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace mold::net {

struct SseEvent {
  std::string event = "message";  ///< the `event:` field
  std::string data;               ///< `data:` lines joined with '\n'
};

/// "event: NAME\ndata: LINE\n...\n\n": one `data:` line per line of `data`.
std::string format_sse(std::string_view event, std::string_view data);
/// ": TEXT\n\n", a comment (a heartbeat that keeps proxies from timing out).
std::string sse_comment(std::string_view text);

/// Reads a stream fed in pieces of any size; lines end with "\n" or "\r\n".
class SseParser {
 public:
  /// An event (or a line) larger than `max_event_bytes` throws ParseError.
  explicit SseParser(std::size_t max_event_bytes = std::size_t(512) << 20);
  void feed(std::string_view bytes,
            const std::function<void(const SseEvent&)>& on_event);

 private:
  void line(std::string_view text,
            const std::function<void(const SseEvent&)>& on_event);
  std::size_t max_;
  std::string partial_;
  SseEvent current_;
  bool has_data_ = false;
};

}  // namespace mold::net
