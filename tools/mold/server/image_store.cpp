#include "image_store.hpp"

#include <fmt/format.h>

#include <random>
#include <utility>

namespace mold_cli {

namespace {

std::string random_id() {
  static std::mutex mutex;
  static std::random_device device;
  std::lock_guard<std::mutex> lock(mutex);
  std::string id;
  for (int i = 0; i < 4; ++i) id += fmt::format("{:08x}", device());
  return id;
}

}  // namespace

std::string ImageStore::put(std::string png) {
  const auto now = Clock::now();
  std::string id = random_id();
  std::lock_guard<std::mutex> lock(mutex_);
  bytes_ += png.size();
  kept_.push_back({id, std::move(png), now + limits_.kept});
  evict_locked(now);
  return id;
}

std::optional<std::string> ImageStore::get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  evict_locked(Clock::now());
  for (const auto& kept : kept_)
    if (kept.id == id) return kept.png;
  return std::nullopt;
}

void ImageStore::evict_locked(Clock::time_point now) {
  // The oldest go first: expired, or over a limit. The newest stays even
  // when it alone is over the byte limit: it was just promised to a client.
  const auto over = [&] {
    return kept_.size() > 1 &&
           (kept_.size() > limits_.images || bytes_ > limits_.bytes);
  };
  while (!kept_.empty() && (kept_.front().until <= now || over())) {
    bytes_ -= kept_.front().png.size();
    kept_.pop_front();
  }
}

}  // namespace mold_cli
