// Uses mold::core from a parent project: a registry with the core's own
// registrations, and an estimate-free classification.
#include <iostream>
#include <mold/base/bytes.hpp>
#include <mold/plugin/registry.hpp>

int main() {
  const mold::Registry registry;
  const auto report = registry.classify(
      {"CPU out of memory. Tried to allocate 2.00 GiB. Limit 1.00 GiB, of "
       "which 512.00 MiB is free.",
       "",
       {}});
  if (!report || report->backend != "cpu" || !report->requested ||
      *report->requested != 2 * mold::kGiB) {
    std::cerr << "consumer: the core's cpu classifier did not answer\n";
    return 1;
  }
  std::cout << "consumer: " << mold::format_bytes(*report->requested) << "\n";
  return 0;
}
