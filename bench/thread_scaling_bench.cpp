// How a denoiser step scales with threads, and whether it holds on a busy
// machine: the Z-Image transformer, tiny (float32) and at its published
// width (bfloat16; one main layer and one of each refiner: the 30 main layers
// are alike, so a layer's scaling is the step's), timed with every compute
// pool set to 1, 2, 4, ... threads up to this machine's CPUs and to twice
// them (oversubscribed); then with all the CPUs' threads while CPU-bound
// processes take half the CPUs; and, at the published width, the step's
// matrix-product FLOPs at at::linear's own rate for the same shapes and
// threads (the machine's GEMM limit) against the measured step.
//
//   ./build/bin/thread_scaling_bench [rounds] [image tokens] [caption tokens]
//   (default: 3 rounds, 256 image tokens (256 x 256 px), 32 caption tokens)
//
// Targets (issue 42): parallel efficiency >= 0.8 at every count up to the
// CPUs; twice the CPUs <= 1.2x the best; <= 1.3x slower with half the CPUs
// taken; step >= 0.7 of the GEMM limit. Each row is the median of its own
// rounds, the rows run one after another in this one process.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mold/model/denoiser.hpp>
#include <mold/plugin/plugin_loader.hpp>
#include <mold/plugin/registry.hpp>
#include <mold/tensor/compute_threads.hpp>
#include <mold/tensor/gemm_rate.hpp>
#include <string>
#include <vector>

#include "bench_paths.hpp"
#include "zimage_shapes.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return int(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

/// CPU-bound processes, one per CPU to take, until destroyed.
class Competitors {
 public:
  explicit Competitors(int count) {
    for (int i = 0; i < count; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        volatile unsigned long x = 0;
        for (;;) x = x * 2862933555777941757UL + 3037000493UL;
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~Competitors() {
    for (const pid_t pid : pids_) kill(pid, SIGKILL);
    for (const pid_t pid : pids_) waitpid(pid, nullptr, 0);
  }
  Competitors(const Competitors&) = delete;
  Competitors& operator=(const Competitors&) = delete;

 private:
  std::vector<pid_t> pids_;
};

struct Component {
  std::string name;
  std::unique_ptr<mold::Denoiser> model;
  mold::DenoiserInput input;
  at::ScalarType dtype;
};

Component make_component(const mold::ModelFamily& family, bool published,
                         int image_tokens, int caption_tokens) {
  Component c;
  c.dtype = published ? at::kBFloat16 : at::kFloat;
  mold::ArchSpec arch = mold::ArchSpec::parse("tiny");
  const std::string config = "thread_scaling_bench_config.json";
  if (published) {
    std::ofstream(config) << R"({"_class_name": "ZImageTransformer2DModel",)"
                          << R"( "n_layers": 1, "n_refiner_layers": 1})";
    arch = mold::ArchSpec::from_config(config);
  }
  c.name = published ? "published width, 1 + 1 + 1 layers, bfloat16"
                     : "tiny, float32";
  c.model = family.make_transformer(arch);
  if (published) std::remove(config.c_str());
  c.model->init_from_seed(1, c10::Device(c10::kCPU), c.dtype);
  const int rows = int(std::sqrt(double(image_tokens)));
  const int cols = image_tokens / rows;
  at::manual_seed(0);
  c.input.latents =
      at::randn({1, c.model->in_channels(), 2 * rows, 2 * cols}).to(c.dtype);
  c.input.timestep = at::full({1}, 0.5);
  c.input.text =
      at::randn({1, caption_tokens, c.model->text_dim()}).to(c.dtype);
  c.input.text_mask = at::ones({1, caption_tokens}, at::kBool);
  return c;
}

/// The median step at `threads` (every pool), after one untimed step.
double step_seconds(const Component& c, int threads, int rounds) {
  mold::set_compute_threads(threads);
  c.model->forward(c.input);
  std::vector<double> times;
  for (int r = 0; r < rounds; ++r) {
    const auto start = Clock::now();
    c.model->forward(c.input);
    times.push_back(
        std::chrono::duration<double>(Clock::now() - start).count());
  }
  return median(times);
}

/// The step's matrix products at at::linear's rate for their shapes and
/// `threads`: one main layer over every token, the noise refiner over the
/// image tokens, the context refiner over the caption tokens.
double gemm_limit_seconds(int threads, int image_tokens, int caption_tokens,
                          at::ScalarType dtype) {
  mold::set_compute_threads(threads);
  const std::int64_t tokens = image_tokens + caption_tokens;
  double seconds = 0;
  for (const std::int64_t rows :
       {tokens, std::int64_t(image_tokens), std::int64_t(caption_tokens)}) {
    for (const auto& linear : mold_bench::zimage_linears()) {
      const mold::GemmShape shape{rows, linear.in, linear.out};
      const mold::GemmRate rate = mold::measure_gemm(shape, dtype, 0.3);
      seconds += linear.per_layer * shape.flops() / (rate.gflops * 1e9);
    }
  }
  return seconds;
}

/// "1 thread", "4 threads".
std::string threads_text(int n) {
  return fmt::format("{} thread{}", n, n == 1 ? "" : "s");
}

void print_row(const std::string& what, double seconds,
               const std::string& note) {
  fmt::print("  {:<34} {:9.4f} s  {}\n", what, seconds, note);
}

void scaling(const Component& c, int cpus, int rounds, int image_tokens,
             int caption_tokens, bool gemm_limit) {
  fmt::print("\n{} ({} image + {} caption tokens):\n", c.name, image_tokens,
             caption_tokens);
  std::vector<int> counts;
  for (int t = 1; t < cpus; t *= 2) counts.push_back(t);
  counts.push_back(cpus);
  double one = 0, best = 1e300;
  for (const int t : counts) {
    const double s = step_seconds(c, t, rounds);
    if (t == 1) one = s;
    best = std::min(best, s);
    print_row(threads_text(t), s,
              t == 1
                  ? ""
                  : fmt::format("speed-up {:.2f}, parallel efficiency {:.2f} "
                                "(target >= 0.80)",
                                one / s, one / (s * t)));
  }
  const double over = step_seconds(c, 2 * cpus, rounds);
  print_row(fmt::format("{} threads (oversubscribed)", 2 * cpus), over,
            fmt::format("{:.2f}x the best (target <= 1.20)", over / best));
  const double alone = step_seconds(c, cpus, rounds);
  const int taken = std::max(1, cpus / 2);
  double loaded = 0, loaded_half = 0;
  {
    Competitors busy(taken);
    loaded = step_seconds(c, cpus, rounds);
    loaded_half = step_seconds(c, std::max(1, cpus - taken), rounds);
  }
  print_row(fmt::format("{}, {} CPU{} taken", threads_text(cpus), taken,
                        taken == 1 ? "" : "s"),
            loaded,
            fmt::format("{:.2f}x alone ({:.4f} s; target <= 1.30)",
                        loaded / alone, alone));
  print_row(
      fmt::format("{} threads, {} CPU{} taken", std::max(1, cpus - taken),
                  taken, taken == 1 ? "" : "s"),
      loaded_half,
      fmt::format("{:.2f}x alone at {} threads", loaded_half / alone, cpus));
  if (!gemm_limit) return;
  for (const int t : counts) {
    const double limit =
        gemm_limit_seconds(t, image_tokens, caption_tokens, c.dtype);
    const double s = step_seconds(c, t, rounds);
    print_row("GEMM limit, " + threads_text(t), limit,
              fmt::format("step {:.4f} s: {:.2f} of the limit (target >= "
                          "0.70)",
                          s, limit / s));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const int image_tokens = argc > 2 ? std::max(4, std::atoi(argv[2])) : 256;
  const int caption_tokens = argc > 3 ? std::max(1, std::atoi(argv[3])) : 32;
  mold::Registry registry;
  mold::PluginLoader(registry).load_directory(mold_bench::kPluginDir);
  const mold::ModelFamily* family = registry.family("zimage");
  if (!family || !family->make_transformer) {
    std::fprintf(stderr, "no zimage plugin in %s\n", mold_bench::kPluginDir);
    return 1;
  }
  const int cpus = usable_cpus();
  at::NoGradGuard no_grad;
  fmt::print("{} CPUs; at start: {}\n", cpus,
             mold::describe(mold::compute_thread_counts()));
  for (const bool published : {false, true}) {
    const Component c =
        make_component(*family, published, image_tokens, caption_tokens);
    scaling(c, cpus, rounds, image_tokens, caption_tokens, published);
  }
  return 0;
}
