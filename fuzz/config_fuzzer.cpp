// libFuzzer target: the configuration reader (TOML) on arbitrary bytes. Every
// input must load or fail with a ConfigError.
#include <cstddef>
#include <cstdint>
#include <mold/base/error.hpp>
#include <mold/config/config.hpp>

#include "scratch_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const auto& path = mold_fuzz::write_scratch(data, size, ".toml");
  try {
    (void)mold::Config::load_file(path);
  } catch (const mold::ConfigError&) {
  }
  return 0;
}
