#pragma once
// The images that POST /v1/images/generations answered by address
// (response_format "url"): kept in memory for an hour, at most 64 images and
// 256 MiB (the oldest go first), each under an unguessable id (128 random
// bits), so that an address works without the API key, as OpenAI's do.

#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

namespace mold_cli {

class ImageStore {
 public:
  using Clock = std::chrono::steady_clock;
  struct Limits {
    std::size_t images = 64;
    std::size_t bytes = 256u << 20;
    std::chrono::seconds kept{3600};
  };
  ImageStore() = default;
  explicit ImageStore(Limits limits) : limits_(limits) {}

  /// Keeps `png`; returns its id (32 hex digits).
  std::string put(std::string png);
  /// The image kept under `id`, or nothing (unknown, expired or evicted).
  std::optional<std::string> get(const std::string& id);

 private:
  struct Kept {
    std::string id;
    std::string png;
    Clock::time_point until;
  };
  void evict_locked(Clock::time_point now);

  Limits limits_;
  std::mutex mutex_;
  std::deque<Kept> kept_;  ///< oldest first
  std::size_t bytes_ = 0;
};

}  // namespace mold_cli
