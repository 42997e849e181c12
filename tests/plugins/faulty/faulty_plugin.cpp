// A test family with planted memory faults, for molddiag leak and parity
// (tests/cli/leak_cli_test.cpp). Not shipped. Three small components (text
// encoder 2 MiB, transformer 4 MiB, VAE 1 MiB of float32 weights) and a
// pipeline of the usual phases; each model plants one fault:
//
//   faulty-clean        none
//   faulty-leak:PHASE   PHASE (text_encode, denoise, vae_decode, or between:
//                       the pipeline's own work) keeps 64 KiB every image
//   faulty-park-holds   the text encoder's park() keeps a 512 KiB buffer on
//                       the device
//   faulty-host-leak    every image keeps 8 MiB of host memory outside the
//                       tensor allocator (malloc'd and touched)
//   faulty-slow         no fault; each denoise step waits until the file named
//                       by MOLD_TEST_GATE exists (a job that lasts until the
//                       test lets it go, for the server's queue, drain and
//                       heartbeat tests; at most 60 s, so a failed test cannot
//                       hang the server; no wait when the variable is unset)
//   faulty-batch-leak   the denoise keeps 3 MiB every image, beyond its
//                       estimate: under a 12 MiB cpu limit image 1 fits and
//                       image 2 runs out in its denoise (incident 1's batch)
//   faulty-cache:lru    bounded, noisy: the text encode caches an entry per
//                       seed (128-384 KiB, by the seed), 3 at most, the oldest
//                       evicted (memory that wanders, never grows)
//   faulty-cache:fill   bounded, slow: entries of 256 KiB, 5 at most (fills
//                       over 5 images, longer than a warm-up)
//   faulty-cache:stash  the denoise stashes 2 MiB that the next image's
//                       decode frees (memory carried into the next image)
//   faulty-cache:every3 the denoise keeps 256 KiB every 3rd image (by seed)
//   faulty-cache:late   flat for 4 images, then the decode keeps 128 KiB
//                       every image
//
// and two backends wrap the cpu one with an allocator-like reserved pool:
// `warmupcpu` grows it by 1 MiB at each of the first 3 empty_cache() calls
// (a caching allocator warming up, then flat), `growcpu` at every call
// (caching that never settles; still no leak).

#include <ATen/ATen.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mold/catalog/model_family.hpp>
#include <mold/device/cpu_backend.hpp>
#include <mold/plugin/plugin.hpp>
#include <mold/plugin/registrar.hpp>
#include <mold/runtime/pipeline.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

/// faulty-slow's step: returns once the test opens the gate (creates the file
/// MOLD_TEST_GATE names), or after 60 s.
void wait_for_gate() {
  const char* gate = std::getenv("MOLD_TEST_GATE");
  if (!gate || !*gate) return;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(gate) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll the gate
}

constexpr mold::Bytes kLeakBytes = 64 * mold::kKiB;
constexpr mold::Bytes kParkHeldBytes = 512 * mold::kKiB;
// Large beside the process's own host-memory noise (a few hundred KiB per
// image of allocator growth), so the measured slope is within 10%.
constexpr std::size_t kHostLeakBytes = 8 * 1024 * 1024;
constexpr mold::Bytes kBatchLeakBytes = 3 * mold::kMiB;

at::Tensor bytes_tensor(mold::Bytes bytes, float value = 1) {
  return at::full({int64_t(bytes / 4)}, value, at::kFloat);
}

/// Weights as one float tensor, dropped when parked (the cpu backend's
/// device is the host), optionally keeping a buffer while parked.
class FaultyComponent final : public mold::CachedComponent {
 public:
  FaultyComponent(std::string name, mold::Bytes bytes, bool park_holds)
      : name_(std::move(name)), bytes_(bytes), park_holds_(park_holds) {}

  const std::string& name() const override { return name_; }
  mold::Bytes device_bytes() const override { return bytes_; }
  mold::Residency residency() const override { return residency_; }
  void load(mold::Backend&) override {
    weights_ = bytes_tensor(bytes_ - (park_holds_ ? kParkHeldBytes : 0));
    if (park_holds_ && !buffer_.defined())
      buffer_ = bytes_tensor(kParkHeldBytes);
    residency_ = mold::Residency::device;
  }
  void park() override {
    weights_ = at::Tensor();  // the buffer, when it holds one, stays
    residency_ = mold::Residency::parked;
  }
  void unload() override {
    weights_ = at::Tensor();
    buffer_ = at::Tensor();
    residency_ = mold::Residency::unloaded;
  }

 private:
  std::string name_;
  mold::Bytes bytes_;
  bool park_holds_;
  mold::Residency residency_ = mold::Residency::unloaded;
  at::Tensor weights_, buffer_;
};

class FaultyPipeline final : public mold::Pipeline {
 public:
  explicit FaultyPipeline(const mold::PipelineOptions& o) : options_(o) {
    const bool holds = o.model == "faulty-park-holds";
    text_encoder_ = std::make_shared<FaultyComponent>("text_encoder",
                                                      2 * mold::kMiB, holds);
    transformer_ =
        std::make_shared<FaultyComponent>("transformer", 4 * mold::kMiB, false);
    vae_ = std::make_shared<FaultyComponent>("vae", mold::kMiB, false);
    if (o.model == "faulty-leak") leak_phase_ = o.variant;
    host_leak_ = o.model == "faulty-host-leak";
    batch_leak_ = o.model == "faulty-batch-leak";
    if (o.model == "faulty-cache") cache_ = o.variant;
    slow_ = o.model == "faulty-slow";
  }

  std::string family() const override { return "faulty"; }
  std::string model() const override { return options_.model; }
  std::string variant() const override { return options_.variant; }
  bool seeded_weights() const override { return true; }
  std::string describe_weights() const override {
    return "planted faults (test plugin)";
  }
  std::vector<std::shared_ptr<mold::CachedComponent>> components()
      const override {
    return {text_encoder_, transformer_, vae_};
  }
  mold::GenerateRequest resolve(const mold::GenerateRequest& r) const override {
    mold::GenerateRequest out = r;
    if (!out.width) out.width = 64;
    if (!out.height) out.height = 64;
    if (!out.steps) out.steps = 2;
    return out;
  }
  std::vector<mold::PlannedPhase> plan(
      const mold::GenerateRequest& r) const override {
    auto phase = [&](const char* op, const char* component, mold::Bytes est,
                     int steps) {
      mold::PlannedPhase p;
      p.phase = op;
      p.component = component;
      p.workload.family = "faulty";
      p.workload.model = options_.model;
      p.workload.op = op;
      p.workload.backend = options_.backend;
      p.workload.dtype = "float32";
      p.workload.width = r.width;
      p.workload.height = r.height;
      p.steps = steps;
      mold::Estimate e;
      e.bytes = est;
      e.source = "faulty_plugin.cpp: fixed";
      p.estimate = e;
      return p;
    };
    return {phase("text_encode", "text_encoder", 512 * mold::kKiB, 0),
            phase("denoise", "transformer", mold::kMiB, r.steps),
            phase("vae_decode", "vae", 2 * mold::kMiB, 0)};
  }

  mold::GeneratedImage generate(const mold::GenerateRequest& r,
                                std::uint64_t seed,
                                mold::RunContext& context) override {
    const auto phases = plan(r);
    at::Tensor embedding, latents;
    context.run_phase(phases[0], [&](mold::PhaseScope&) {
      const at::Tensor scratch = bytes_tensor(256 * mold::kKiB);
      embedding = bytes_tensor(64 * mold::kKiB) * scratch.sum() / 1e6;
      plant("text_encode");
      if (cache_ == "lru")
        remember(bytes_tensor((128 + (seed * 2654435761u) % 257) * mold::kKiB),
                 3);
      else if (cache_ == "fill")
        remember(bytes_tensor(256 * mold::kKiB), 5);
    });
    latents = bytes_tensor(32 * mold::kKiB);  // the pipeline's own noise
    plant("between");
    context.run_phase(phases[1], [&](mold::PhaseScope& scope) {
      for (int step = 1; step <= r.steps; ++step) {
        const at::Tensor scratch = bytes_tensor(512 * mold::kKiB);
        latents = latents + scratch.mean();
        if (slow_) wait_for_gate();
        scope.step(step, r.steps);
      }
      plant("denoise");
      if (batch_leak_) kept_.push_back(bytes_tensor(kBatchLeakBytes));
      if (cache_ == "stash") stash_.push_back(bytes_tensor(2 * mold::kMiB));
      if (cache_ == "every3" && seed % 3 == 0)
        kept_.push_back(bytes_tensor(256 * mold::kKiB));
    });
    mold::GeneratedImage image;
    context.run_phase(phases[2], [&](mold::PhaseScope&) {
      const at::Tensor scratch = bytes_tensor(mold::kMiB);
      image.rgb = at::zeros({3, r.height, r.width}, at::kByte);
      embedding = at::Tensor();
      latents = at::Tensor();
      plant("vae_decode");
      // The stash of earlier images (this image's is the last).
      if (stash_.size() > 1) stash_.erase(stash_.begin());
      if (cache_ == "late" && images_ >= 4)
        kept_.push_back(bytes_tensor(128 * mold::kKiB));
    });
    ++images_;
    if (host_leak_) {
      void* block = std::malloc(kHostLeakBytes);
      if (block) std::memset(block, 1, kHostLeakBytes);
      host_blocks_.push_back(block);
    }
    return image;
  }

 private:
  void plant(const std::string& phase) {
    if (phase == leak_phase_) kept_.push_back(bytes_tensor(kLeakBytes));
  }
  /// A cache entry, the oldest evicted past `capacity`.
  void remember(at::Tensor entry, std::size_t capacity) {
    cache_entries_.push_back(std::move(entry));
    while (cache_entries_.size() > capacity)
      cache_entries_.erase(cache_entries_.begin());
  }

  mold::PipelineOptions options_;
  std::shared_ptr<FaultyComponent> text_encoder_, transformer_, vae_;
  std::string leak_phase_;
  bool host_leak_ = false;
  bool batch_leak_ = false;
  bool slow_ = false;
  std::string cache_;  // faulty-cache's variant
  int images_ = 0;     // made so far by this pipeline
  std::vector<at::Tensor> kept_, cache_entries_, stash_;
  std::vector<void*> host_blocks_;  // never freed: the planted host leak
};

/// The cpu backend with a reserved pool that grows at empty_cache().
class PoolBackend final : public mold::Backend {
 public:
  PoolBackend(std::string name, int growing_calls)
      : name_(std::move(name)), growing_calls_(growing_calls) {}
  std::string name() const override { return name_; }
  std::string device_name() const override {
    return cpu_->device_name() + " (" + name_ + " test pool)";
  }
  mold::MemoryStats stats() const override {
    mold::MemoryStats s = cpu_->stats();
    s.reserved += pool_.load();
    s.peak_reserved += pool_.load();
    return s;
  }
  void reset_peak() override { cpu_->reset_peak(); }
  void empty_cache() override {
    if (growing_calls_ < 0 || calls_++ < growing_calls_) pool_ += mold::kMiB;
  }
  void synchronize_and_check() override {}
  c10::Device torch_device() const override { return cpu_->torch_device(); }
  bool attributes_allocations() const override { return true; }
  std::uint32_t set_allocation_scope(std::uint32_t scope) override {
    return cpu_->set_allocation_scope(scope);
  }
  std::vector<std::pair<std::uint32_t, mold::Bytes>> live_bytes_by_scope()
      const override {
    return cpu_->live_bytes_by_scope();
  }

 private:
  std::string name_;
  int growing_calls_;  // -1: every call
  int calls_ = 0;
  std::atomic<mold::Bytes> pool_{0};
  std::shared_ptr<mold::CpuBackend> cpu_ = mold::CpuBackend::instance();
};

mold::ModelInfo model(const std::string& name,
                      std::vector<std::string> variants) {
  mold::ModelInfo m;
  m.name = name;
  m.description = "planted memory faults (test plugin)";
  m.default_variant = variants.front();
  for (const auto& v : variants) {
    mold::ModelVariant variant;
    variant.name = v;
    variant.source = "faulty_plugin.cpp";
    variant.components = {{"text_encoder", 2 * mold::kMiB},
                          {"transformer", 4 * mold::kMiB},
                          {"vae", mold::kMiB}};
    m.variants.push_back(std::move(variant));
  }
  return m;
}

void register_all(mold::Registrar& registrar) {
  mold::ModelFamily family;
  family.name = "faulty";
  family.description = "planted memory faults (test plugin)";
  family.models = {
      model("faulty-clean", {"f32"}),
      model("faulty-leak", {"denoise", "text_encode", "vae_decode", "between"}),
      model("faulty-park-holds", {"f32"}),
      model("faulty-host-leak", {"f32"}),
      model("faulty-batch-leak", {"f32"}),
      model("faulty-cache", {"lru", "fill", "stash", "every3", "late"}),
      model("faulty-slow", {"f32"})};
  family.make_pipeline = [](const mold::PipelineOptions& options) {
    return std::unique_ptr<mold::Pipeline>(new FaultyPipeline(options));
  };
  registrar.add_family(std::move(family));
  registrar.add_backend("warmupcpu", [] {
    static auto backend = std::make_shared<PoolBackend>("warmupcpu", 3);
    return backend;
  });
  registrar.add_backend("growcpu", [] {
    static auto backend = std::make_shared<PoolBackend>("growcpu", -1);
    return backend;
  });
}

}  // namespace

MOLD_PLUGIN("faulty", "0.1.0", register_all)
