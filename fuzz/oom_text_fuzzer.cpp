// libFuzzer target: the OOM-text readers and the core's classifiers on
// arbitrary text. Classification never throws, and every number it reports
// is one mold can represent.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mold/base/bytes.hpp>
#include <mold/oom/oom_text.hpp>
#include <mold/plugin/oom_advice.hpp>
#include <mold/plugin/registry.hpp>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  static const mold::Registry registry;  // the core's classifiers
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto report = registry.classify({text, "", {}});
  for (const char* marker : {"Tried to allocate ", "capacity of ", "Limit "})
    if (const auto bytes = mold::bytes_after(text, marker))
      if (*bytes > mold::kMaxBytes) std::abort();
  if (const auto bytes = mold::bytes_before(text, " is free"))
    if (*bytes > mold::kMaxBytes) std::abort();
  if (report) {
    (void)mold::oom_label(*report);
    (void)mold::advise(registry, *report, nullptr);
  }
  (void)mold::try_parse_bytes(text);
  return 0;
}
