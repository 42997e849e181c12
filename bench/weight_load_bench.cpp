// Loading weights, side by side in one run on one file: how fast, and how much
// host memory above the loaded tensors it needs.
//
//   dd                 `dd bs=64M` of the file to /dev/null: the disk's speed
//   Module::load       each tensor read (pread, in file order) straight into
//                      its destination, a dtype conversion through a 64 MiB
//                      buffer
//   mapped copy        what Module::load did before: a copy from the
//                      memory-mapped file, faulting its pages in 4 KiB at a
//                      time
//   read all, convert  every tensor read into memory, then converted (a naive
//                      loader; the host-peak comparison)
//   split by rows      Module::load through a layout mapping that splits each
//                      tensor into three by rows (ComfyUI's fused qkv): each
//                      block read straight into its parameter
//   concatenated       the opposite (llama.cpp's mmproj q, k, v into one
//                      qkv): each part read straight into its rows
//
// Cold rows drop the file from the page cache first (posix_fadvise DONTNEED,
// no root needed); warm rows read it from the page cache. The peak is the
// resident set during the load above what stays resident after it (the loaded
// weights), as a multiple of the largest tensor. Targets: Module::load >= 0.70
// x dd cold, >= 2 GB/s warm, peak <= 1.10 x the largest tensor (for the
// mapped loads too).
//
//   ./build/bin/weight_load_bench [tensors] [MiB per tensor] [stored dtype]
//   [loaded dtype] (default: 8 tensors of 128 MiB stored as bfloat16, loaded as
//   float32; the file is written to the current directory and removed after)

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mold/base/memory_stats.hpp>
#include <mold/catalog/weight_layout.hpp>
#include <mold/device/cpu_backend.hpp>
#include <mold/model/module.hpp>
#include <mold/tensor/checkpoint.hpp>
#include <mold/tensor/safetensors.hpp>
#include <mold/tensor/weight_set.hpp>
#include <optional>
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

// Drops the file's pages from the page cache, so that the next read comes from
// the disk. Returns false when the kernel refused.
bool drop_from_page_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  ::fdatasync(fd);
  const bool dropped = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  ::close(fd);
  return dropped;
}

double seconds_of(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

class BenchModule final : public mold::Module {
 public:
  /// `tensors` matrices of `elements` elements, each as one parameter, or
  /// with `thirds` as three of a third of its rows each.
  BenchModule(int tensors, int64_t elements, bool thirds = false) {
    for (int i = 0; i < tensors; ++i) {
      if (!thirds) {
        add(fmt::format("layers.{}.weight", i), {elements / 1024, 1024});
        continue;
      }
      for (const char* part : {"q", "k", "v"})
        add(fmt::format("layers.{}.{}.weight", i, part),
            {elements / 1024 / 3, 1024});
    }
  }
  std::string describe() const override { return "bench module"; }
};

at::ScalarType dtype_named(const std::string& name) {
  if (name == "float32") return at::kFloat;
  if (name == "float16") return at::kHalf;
  if (name == "bfloat16") return at::kBFloat16;
  fmt::print(stderr,
             "weight_load_bench: dtype '{}': give float32, float16 or "
             "bfloat16\n",
             name);
  std::exit(2);
}

struct Row {
  std::string name;
  double seconds = 0;
  std::optional<double> peak_ratio;
};

}  // namespace

int main(int argc, char** argv) {
  const int tensors = argc > 1 ? std::stoi(argv[1]) : 8;
  const int mib = argc > 2 ? std::stoi(argv[2]) : 128;
  const std::string stored = argc > 3 ? argv[3] : "bfloat16";
  const std::string loaded = argc > 4 ? argv[4] : "float32";
  if (tensors < 1 || mib < 1) {
    fmt::print(stderr, "weight_load_bench: give tensors >= 1 and MiB >= 1\n");
    return 2;
  }
  // The tensors come from mold's cpu backend's allocator, as in mold run.
  mold::CpuBackend::instance();
  const at::ScalarType stored_type = dtype_named(stored);
  const at::ScalarType loaded_type = dtype_named(loaded);
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
  const double file_bytes = double(tensors) * largest;
  fmt::print("{} tensors of {} MiB stored as {}, loaded as {} on the cpu\n",
             tensors, mib, stored, loaded);

  std::vector<Row> rows;
  auto cold = [&] {
    if (!drop_from_page_cache(path))
      fmt::print("note: the page cache kept the file; 'cold' rows are warm\n");
  };
  // A load measured for time and for the host peak above what stays resident.
  auto measure_load =
      [&](const std::string& name,
          const std::function<std::vector<at::Tensor>()>& load) {
        reset_peak();
        std::vector<at::Tensor> result;
        const double seconds = seconds_of([&] { result = load(); });
        const Rss after = read_rss();
        rows.push_back({name, seconds, (after.peak - after.now) / largest});
      };
  auto module_load = [&] {
    BenchModule module(tensors, elements);
    module.load(mold::WeightSet::open(path), c10::Device(c10::kCPU),
                loaded_type);
    std::vector<at::Tensor> out;
    for (const auto& [name, t] : module.parameters()) out.push_back(t);
    return out;
  };
  auto mapped_copy = [&] {
    const mold::WeightSet weights = mold::WeightSet::open(path);
    std::vector<at::Tensor> out;
    for (const auto& name : weights.names())
      out.push_back(weights.view(name).to(c10::Device(c10::kCPU), loaded_type,
                                          false, /*copy=*/true));
    return out;
  };
  // Through a layout mapping: the file's tensors split into thirds by rows,
  // or (from a file of thirds) concatenated.
  const int64_t third_rows = elements / 1024 / 3;
  const int64_t whole_rows = third_rows * 3;
  const std::string thirds_path = "weight_load_bench_thirds.safetensors";
  {
    std::vector<std::pair<std::string, at::Tensor>> data;
    for (int i = 0; i < tensors; ++i)
      for (const char* part : {"q", "k", "v"})
        data.emplace_back(fmt::format("layers.{}.{}.weight", i, part),
                          at::randn({third_rows, 1024}).to(stored_type));
    mold::save_safetensors(thirds_path, data);
  }
  auto mapped_load = [&](const std::string& file, bool split) {
    const mold::Checkpoint checkpoint = mold::Checkpoint::open({file});
    mold::MappingBuilder builder(checkpoint.listing(), "", "bench", "bench");
    for (int i = 0; i < tensors; ++i) {
      std::vector<std::string> parts;
      for (const char* part : {"q", "k", "v"})
        parts.push_back(fmt::format("layers.{}.{}.weight", i, part));
      if (split)
        builder.split_rows(fmt::format("layers.{}.weight", i), parts);
      else
        builder.concat(parts, fmt::format("layers.{}.weight", i));
    }
    const mold::LayoutMapping mapping = builder.finish(true);
    BenchModule module(tensors, split ? elements : whole_rows * 1024, split);
    module.load(checkpoint, mapping, c10::Device(c10::kCPU), loaded_type);
    std::vector<at::Tensor> out;
    for (const auto& [name, t] : module.parameters()) out.push_back(t);
    return out;
  };
  auto read_all = [&] {
    const mold::SafetensorsFile file = mold::SafetensorsFile::open(path);
    std::vector<at::Tensor> raw, out;
    for (const auto& name : file.names()) raw.push_back(file.tensor(name));
    for (const auto& t : raw) out.push_back(t.to(loaded_type));
    return out;
  };

  auto dd = [&](const std::string& name) {
    const std::string command =
        "dd if='" + path + "' of=/dev/null bs=64M status=none";
    const double seconds = seconds_of([&] {
      if (std::system(command.c_str()) != 0) fmt::print(stderr, "dd failed\n");
    });
    rows.push_back({name, seconds, std::nullopt});
  };
  // Module::load first, each after dd on the same cache state; then the others.
  cold();
  dd("dd bs=64M, cold");
  cold();
  measure_load("Module::load, cold", module_load);
  dd("dd bs=64M, warm");
  measure_load("Module::load, warm", module_load);
  cold();
  measure_load("mapped copy, cold", mapped_copy);
  measure_load("mapped copy, warm", mapped_copy);
  measure_load("read all, convert, warm", read_all);
  measure_load("split by rows, warm", [&] { return mapped_load(path, true); });
  measure_load("concatenated, warm",
               [&] { return mapped_load(thirds_path, false); });
  std::remove(path.c_str());
  std::remove(thirds_path.c_str());

  fmt::print("\n{:<26} {:>9} {:>9} {:>10} {:>18}\n", "", "seconds", "GB/s",
             "x dd", "peak / largest");
  auto dd_seconds = [&](bool warm) {
    for (const Row& r : rows)
      if (r.name == (warm ? "dd bs=64M, warm" : "dd bs=64M, cold"))
        return r.seconds;
    return 0.0;
  };
  for (const Row& r : rows) {
    const bool warm = r.name.find("warm") != std::string::npos;
    fmt::print("{:<26} {:9.3f} {:9.2f} {:10.2f} {:>18}\n", r.name, r.seconds,
               file_bytes / r.seconds / 1e9, dd_seconds(warm) / r.seconds,
               r.peak_ratio ? fmt::format("{:.3f}", *r.peak_ratio) : "");
  }
  const Row& cold_load = rows[1];
  const Row& warm_load = rows[3];
  double mapped_peak = 0;
  for (const Row& r : rows)
    if (r.name.rfind("split", 0) == 0 || r.name.rfind("concat", 0) == 0)
      mapped_peak = std::max(mapped_peak, *r.peak_ratio);
  const double cold_vs_dd = dd_seconds(false) / cold_load.seconds;
  const double warm_gbs = file_bytes / warm_load.seconds / 1e9;
  fmt::print(
      "\ntargets: Module::load cold >= 0.70 x dd: {:.2f} {}; warm >= 2 GB/s: "
      "{:.2f} {}; peak <= 1.10 x largest: {:.3f} {}; mapped loads' peak <= "
      "1.10 x largest: {:.3f} {}\n",
      cold_vs_dd, cold_vs_dd >= 0.70 ? "met" : "NOT met", warm_gbs,
      warm_gbs >= 2 ? "met" : "NOT met", *cold_load.peak_ratio,
      *cold_load.peak_ratio <= 1.10 ? "met" : "NOT met", mapped_peak,
      mapped_peak <= 1.10 ? "met" : "NOT met");
  return 0;
}
