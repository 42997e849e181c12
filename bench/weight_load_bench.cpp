// Peak host memory while loading weights, side by side: Module::load (each
// tensor copied from the memory-mapped checkpoint to its destination in the
// dtype asked for, the file's pages dropped after each) against reading every
// tensor into memory first and converting after (what a naive loader does).
// The measure is the peak resident set during the load above what stays
// resident after it (the loaded weights), as a multiple of the largest tensor
// in the file: the target is <= 1.10.
//
//   ./build/bin/weight_load_bench [tensors] [MiB per tensor] [dtype]
//   (default: 8 tensors of 64 MiB stored as bfloat16, loaded as float32)

#include <fmt/format.h>

#include <fstream>
#include <mold/base/memory_stats.hpp>
#include <mold/model/module.hpp>
#include <mold/tensor/safetensors.hpp>
#include <mold/tensor/weight_set.hpp>
#include <string>
#include <vector>

namespace {

// VmHWM (peak RSS) and VmRSS of this process, from /proc/self/status.
struct Rss {
  double peak = 0, now = 0;
};

Rss read_rss() {
  std::ifstream status("/proc/self/status");
  std::string key;
  Rss rss;
  while (status >> key) {
    double kib = 0;
    if (key == "VmHWM:" && status >> kib) rss.peak = kib * 1024;
    if (key == "VmRSS:" && status >> kib) rss.now = kib * 1024;
  }
  return rss;
}

// Starts a new peak: writing 5 to clear_refs resets VmHWM to VmRSS.
void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

class BenchModule final : public mold::Module {
 public:
  BenchModule(int tensors, int64_t elements) {
    for (int i = 0; i < tensors; ++i)
      add(fmt::format("layers.{}.weight", i), {elements / 1024, 1024});
  }
  std::string describe() const override { return "bench module"; }
};

}  // namespace

int main(int argc, char** argv) {
  const int tensors = argc > 1 ? std::stoi(argv[1]) : 8;
  const int mib = argc > 2 ? std::stoi(argv[2]) : 64;
  const std::string stored = argc > 3 ? argv[3] : "bfloat16";
  const at::ScalarType stored_type =
      stored == "float32" ? at::kFloat
                          : (stored == "float16" ? at::kHalf : at::kBFloat16);
  const int64_t elements =
      int64_t(mib) * (1 << 20) / int64_t(c10::elementSize(stored_type));
  const std::string path = "weight_load_bench.safetensors";
  {
    std::vector<std::pair<std::string, at::Tensor>> data;
    for (int i = 0; i < tensors; ++i)
      data.emplace_back(fmt::format("layers.{}.weight", i),
                        at::randn({elements / 1024, 1024}).to(stored_type));
    mold::save_safetensors(path, data);
  }
  const double largest = double(int64_t(mib) << 20);
  fmt::print(
      "{} tensors of {} MiB stored as {}, loaded as float32 on the cpu\n",
      tensors, mib, stored);

  // Module::load.
  double module_ratio = 0;
  {
    BenchModule module(tensors, elements);
    const mold::WeightSet weights = mold::WeightSet::open(path);
    reset_peak();
    const Rss before = read_rss();
    module.load(weights, c10::Device(c10::kCPU), at::kFloat);
    const Rss after = read_rss();
    const double overhead = after.peak - after.now;
    module_ratio = overhead / largest;
    fmt::print(
        "Module::load:      peak {:8.1f} MiB, after {:8.1f} MiB (from "
        "{:.1f}), peak over resident {:7.1f} MiB = {:.3f} x largest "
        "tensor\n",
        after.peak / 1048576, after.now / 1048576, before.now / 1048576,
        overhead / 1048576, module_ratio);
  }
  // Naive: every tensor read into memory, then converted.
  double naive_ratio = 0;
  {
    const mold::SafetensorsFile file = mold::SafetensorsFile::open(path);
    reset_peak();
    std::vector<at::Tensor> raw, converted;
    for (const auto& name : file.names()) raw.push_back(file.tensor(name));
    for (const auto& t : raw) converted.push_back(t.to(at::kFloat));
    raw.clear();
    const Rss after = read_rss();
    const double overhead = after.peak - after.now;
    naive_ratio = overhead / largest;
    fmt::print(
        "read all, convert: peak {:8.1f} MiB, after {:8.1f} MiB, peak "
        "over resident {:7.1f} MiB = {:.3f} x largest tensor\n",
        after.peak / 1048576, after.now / 1048576, overhead / 1048576,
        naive_ratio);
  }
  std::remove(path.c_str());
  fmt::print(
      "ratio Module::load / naive: {:.3f}; target Module::load <= "
      "1.10 x largest: {}\n",
      module_ratio / naive_ratio, module_ratio <= 1.10 ? "met" : "NOT met");
  return 0;
}
