// libFuzzer target: the configuration reader (TOML) on arbitrary bytes. Every
// input must load or fail with a ConfigError.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/config/config.hpp>
#include <string>

namespace {

const std::string& scratch_path() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/mold-fuzz-" +
           std::to_string(::getpid()) + ".toml";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  {
    std::ofstream out(scratch_path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  try {
    (void)mold::Config::load_file(scratch_path());
  } catch (const mold::ConfigError&) {
  }
  return 0;
}
