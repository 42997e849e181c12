// libFuzzer target: the safetensors reader on arbitrary bytes. Every input
// must open or fail with a SafetensorsError; anything else (a crash, another
// exception, a sanitizer report) is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <mold/tensor/safetensors.hpp>
#include <string>

namespace {

/// One file per fuzzer process, rewritten for each input.
const std::string& scratch_path() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/mold-fuzz-" +
           std::to_string(::getpid()) + ".safetensors";
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
    const auto file = mold::SafetensorsFile::open(scratch_path());
    for (const auto& name : file.names()) (void)file.view(name).sum();
  } catch (const mold::SafetensorsError&) {
  }
  return 0;
}
