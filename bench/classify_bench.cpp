// Classifies 100,000 error texts drawn from the table of real texts
// (tests/data/oom_texts.json) through every loaded classifier and prints the
// rates: all texts, OOM texts (which stop at the classifier that claims them)
// and lookalikes (which pass through every classifier), side by side in one
// run.
//
//   ./build/bin/classify_bench [N]

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <mold/plugin/plugin_loader.hpp>
#include <mold/plugin/registry.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_paths.hpp"

namespace {

struct Rate {
  double per_second = 0;
  std::size_t classified_as_oom = 0;
};

Rate measure(const mold::Registry& registry,
             const std::vector<mold::ErrorContext>& texts, std::size_t count) {
  Rate rate;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < count; ++i)
    if (registry.classify(texts[i % texts.size()])) ++rate.classified_as_oom;
  const std::chrono::duration<double> elapsed =
      std::chrono::steady_clock::now() - start;
  rate.per_second = double(count) / elapsed.count();
  return rate;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t count = argc > 1 ? std::stoul(argv[1]) : 100000;
  std::ifstream in(mold_bench::kOomTexts);
  if (!in) {
    std::cerr << "classify_bench: cannot read " << mold_bench::kOomTexts
              << "\n";
    return 1;
  }
  const auto table = nlohmann::json::parse(in);
  std::vector<mold::ErrorContext> all, ooms, lookalikes;
  for (const auto& row : table) {
    mold::ErrorContext e{row["text"].get<std::string>(), "", {}};
    all.push_back(e);
    (row["is_oom"].get<bool>() ? ooms : lookalikes).push_back(e);
  }

  mold::Registry registry;
  mold::PluginLoader(registry).load_directory(mold::installed_plugin_dir());
  if (!registry.load_errors().empty()) {
    std::cerr << "classify_bench: " << registry.load_errors().front().message
              << "\n";
    return 1;
  }
  measure(registry, all, 2000);  // warm up

  const Rate mixed = measure(registry, all, count);
  const Rate oom = measure(registry, ooms, count);
  const Rate other = measure(registry, lookalikes, count);
  std::cout << fmt::format(
      "classified {} texts each ({} distinct real texts, {} classifiers)\n",
      count, all.size(), registry.classifiers().size());
  std::cout << fmt::format(
      "  mixed table : {:>10.0f} texts/s ({:.2f} us each)\n", mixed.per_second,
      1e6 / mixed.per_second);
  std::cout << fmt::format(
      "  OOM texts   : {:>10.0f} texts/s ({:.2f} us each)\n", oom.per_second,
      1e6 / oom.per_second);
  std::cout << fmt::format(
      "  lookalikes  : {:>10.0f} texts/s ({:.2f} us each)\n", other.per_second,
      1e6 / other.per_second);
  std::cout << fmt::format("  lookalike/OOM time ratio: {:.2f}\n",
                           oom.per_second / other.per_second);
  return 0;
}
