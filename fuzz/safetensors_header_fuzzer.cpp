// libFuzzer target: the safetensors reader on arbitrary bytes. Every input
// must open or fail with a SafetensorsError; anything else (a crash, another
// exception, a sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>
#include <mold/tensor/safetensors.hpp>

#include "scratch_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const auto& path = mold_fuzz::write_scratch(data, size, ".safetensors");
  try {
    const auto file = mold::SafetensorsFile::open(path);
    for (const auto& name : file.names()) (void)file.view(name).sum();
  } catch (const mold::SafetensorsError&) {
  }
  return 0;
}
