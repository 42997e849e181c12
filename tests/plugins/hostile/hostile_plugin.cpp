// One hostile plugin per build, chosen by MOLD_HOSTILE_CASE: each misbehaves
// while it loads, where the scanner must catch it (tests/cli/
// hostile_plugins_test.cpp). Not one of them may take a mold command down.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mold/plugin/plugin.hpp>
#include <thread>

#define HOSTILE_abort_in_constructor 1
#define HOSTILE_segfault_in_entry 2
#define HOSTILE_exit0_in_register 3
#define HOSTILE_hang_in_register 4
#define HOSTILE_prints_in_constructor 5
#define HOSTILE_stderr_in_register 6
#define HOSTILE_quick_exit_in_constructor 7
#define HOSTILE_ID_(name) HOSTILE_##name
#define HOSTILE_ID(name) HOSTILE_ID_(name)

namespace {

constexpr int kCase = HOSTILE_ID(MOLD_HOSTILE_CASE);

struct AtLoad {
  AtLoad() {
    if (kCase == 1) std::abort();
    if (kCase == 5) std::cout << "hello from a plugin\n";
    if (kCase == 7) ::_exit(3);
  }
};
const AtLoad at_load;

void register_all(mold::Registrar& registrar) {
  if (kCase == 3) std::exit(0);
  // A plugin that hangs: the scan's timeout (1 s in the test) must cut it off.
  if (kCase == 4) std::this_thread::sleep_for(std::chrono::minutes(1));  // hang
  if (kCase == 6)
    std::fprintf(stderr, "\x1b[31mwarning\x1b[0m from a plugin\n");
  registrar.add_classifier("hostile", [](const mold::ErrorContext&) {
    return std::optional<mold::OomReport>();
  });
}

// A real fault, not a sanitizer's report of one (UBSan would catch the null
// store first and exit with 1).
#if defined(__GNUC__)
__attribute__((no_sanitize("undefined")))
#endif
void write_through_null() {
  volatile int* null = nullptr;
  *null = 1;
}

}  // namespace

extern "C" MOLD_PLUGIN_EXPORT const mold_plugin_info* mold_get_plugin_info() {
  if (kCase == 2) write_through_null();
  static const mold_plugin_info info{
      MOLD_PLUGIN_API_VERSION,
      sizeof(mold_plugin_info),
      "hostile_" MOLD_DETAIL_STRINGIFY(MOLD_HOSTILE_CASE),
      "0.0.1",
      MOLD_BUILD_ID,
      &register_all};
  return &info;
}
