// libFuzzer target: the safetensors header parser on arbitrary bytes. Every
// input must parse or fail with a SafetensorsError; anything else (a crash,
// another exception, a sanitizer report) is a finding. Torch-free: it links
// mold::core only.
#include <cstddef>
#include <cstdint>
#include <mold/tensor/safetensors_header.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  try {
    const auto header = mold::parse_safetensors_header(
        reinterpret_cast<const char*>(data), size, "input");
    // Every entry the parser accepts lies inside the data section.
    for (const auto& [name, entry] : header.entries)
      if (entry.end > header.data_size || entry.begin > entry.end)
        __builtin_trap();
  } catch (const mold::SafetensorsError&) {
  }
  return 0;
}
