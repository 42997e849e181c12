#include "plugin/shared_library.hpp"

#include <mutex>
#include <vector>

namespace mold {

void keep_loaded_forever(std::unique_ptr<boost::dll::shared_library> library) {
  static auto* keep =
      new std::vector<std::unique_ptr<boost::dll::shared_library>>;
  static auto* mutex = new std::mutex;
  std::lock_guard<std::mutex> lock(*mutex);
  keep->push_back(std::move(library));
}

std::string dlopen_reason(const std::string& what) {
  const std::string marker = "dlerror system message: ";
  const std::size_t at = what.find(marker);
  if (at == std::string::npos) return what;
  const std::size_t start = at + marker.size();
  const std::size_t end = what.rfind("):");
  if (end == std::string::npos || end < start) return what.substr(start);
  return what.substr(start, end - start);
}

}  // namespace mold
