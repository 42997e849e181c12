#pragma once
/// A text-to-image pipeline: named phases (text_encode -> denoise ->
/// vae_decode), each run through the model cache with its estimate. Families
/// implement Pipeline; the Runner drives it image by image.

#include <ATen/ATen.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mold/cache/cache.hpp"
#include "mold/estimate/workload.hpp"
#include "mold/history/learned_estimate.hpp"
#include "mold/history/measured_history.hpp"
#include "mold/plan/generate_settings.hpp"
#include "mold/runtime/observer.hpp"

namespace mold {

class Registry;

/// What to make: the settings and, for edit models, the images the edit starts
/// from.
struct GenerateRequest : GenerateSettings {
  GenerateRequest() = default;
  explicit GenerateRequest(GenerateSettings settings)
      : GenerateSettings(std::move(settings)) {}

  /// Edit models: the images the edit starts from, each (3, H, W) uint8 RGB
  /// on the host, in the order the prompt may name them ("Picture 1", ...).
  std::vector<at::Tensor> images;
};

class Pipeline;

/// A request its pipeline resolved (Pipeline::resolve_request): the model's
/// defaults filled in, its limits checked. Only a Pipeline makes one, so what
/// takes one (Runner::plan, Runner::run) never resolves it again.
class ResolvedRequest {
 public:
  const GenerateRequest& operator*() const { return request_; }
  const GenerateRequest* operator->() const { return &request_; }
  /// The same request for its first image alone (`mold serve` makes one
  /// image per job).
  ResolvedRequest first_image() const {
    ResolvedRequest one = *this;
    one.request_.batch = 1;
    return one;
  }

 private:
  friend class Pipeline;
  explicit ResolvedRequest(GenerateRequest request)
      : request_(std::move(request)) {}
  GenerateRequest request_;
};

/// One phase of one image as planned: what runs, on which component, with
/// which workload (the estimate's key and sizes).
struct PlannedPhase {
  std::string phase;      ///< ops::kTextEncode, ...
  std::string component;  ///< "text_encoder", "transformer", "vae"
  Workload workload;
  int steps = 0;  ///< denoise: the number of steps
  /// The pipeline's own estimate, used instead of the registered estimators
  /// (which describe the published architectures) for other architectures.
  std::optional<Estimate> estimate;
};

class PhaseScope;
class RunContext;

/// One image as a pipeline makes it.
struct GeneratedImage {
  at::Tensor rgb;  ///< (3, H, W) uint8 RGB on the host
  /// The tensors behind it, on the host, for checks against reference code:
  /// "latents" (the final latents, float32, the denoiser's space) and
  /// "image" (the decoded image in [-1, 1], before rounding to uint8).
  std::vector<std::pair<std::string, at::Tensor>> tensors;
};

/// Where a component's weights come from, for --plan and --json.
struct ComponentSource {
  std::string component;           ///< "transformer"
  std::vector<std::string> files;  ///< empty when seeded
  std::string layout;              ///< "comfyui"; empty when seeded
  /// The layout's description, or "seeded weights (seed 7)".
  std::string description;
  Bytes bytes = 0;  ///< its weights' bytes on the device
};

class Pipeline {
 public:
  virtual ~Pipeline() = default;

  virtual std::string family() const = 0;
  virtual std::string model() const = 0;
  virtual std::string variant() const = 0;
  /// Whether the weights are seeded (no checkpoint): every output says so.
  virtual bool seeded_weights() const = 0;
  /// "tiny", "default", or the model directory.
  virtual std::string describe_weights() const = 0;
  /// Its components, for the cache (the Runner adds them).
  virtual std::vector<std::shared_ptr<CachedComponent>> components() const = 0;
  /// Each component's file(s) and layout (empty by default).
  virtual std::vector<ComponentSource> component_sources() const { return {}; }

  /// The request with the model's defaults filled in (size, steps,
  /// guidance); throws InvalidArgument naming the flag and the value for
  /// what the model cannot make (a size that is not a multiple of 16, ...).
  virtual GenerateRequest resolve(const GenerateRequest& request) const = 0;
  /// resolve(), once, as the type the Runner takes.
  ResolvedRequest resolve_request(const GenerateRequest& request) const {
    return ResolvedRequest(resolve(request));
  }
  /// The phases of one image, in order (resolved request).
  virtual std::vector<PlannedPhase> plan(
      const GenerateRequest& request) const = 0;
  /// Makes one image with `seed`. Runs every phase through `context`.
  virtual GeneratedImage generate(const GenerateRequest& request,
                                  std::uint64_t seed, RunContext& context) = 0;
};

/// What a phase body sees: its component (locked on the device while the
/// phase runs) and a way to report steps.
class PhaseScope {
 public:
  CachedComponent* component() const { return component_; }
  template <class T> T& component_as() const {
    return dynamic_cast<T&>(*component_);
  }
  /// Reports step `step` (1-based) of `steps` as done.
  void step(int step, int steps);
  /// A line of detail for the done event (e.g. the VAE's recovery rung).
  void set_detail(std::string detail) { detail_ = std::move(detail); }

 private:
  friend class RunContext;
  PhaseScope(RunContext& context, const PhaseEvent& start,
             CachedComponent* component);
  double seconds() const;
  RunContext& context_;
  const PhaseEvent& start_;
  CachedComponent* component_;
  std::chrono::steady_clock::time_point started_;
  std::string detail_;
};

/// Runs phases of one image: estimate -> make room in the cache and lock the
/// component -> run -> check the device -> events with memory before and
/// after, the peak during, and the cache's residency.
class RunContext {
 public:
  RunContext(ModelCache& cache, const Registry& registry,
             std::vector<RunObserver*> observers);

  void begin_image(int image, int images);
  int image() const { return image_; }
  int images() const { return images_; }

  /// Runs `body` as `phase`. A failure emits a failed event and propagates.
  void run_phase(const PlannedPhase& phase,
                 const std::function<void(PhaseScope&)>& body);
  /// Reports `phase` as reused instead of run: the pipeline kept what an
  /// earlier run of it made (EncodingMemo). Loads nothing; `detail` says
  /// what was reused ("the embeddings of image 1").
  void reuse_phase(const PlannedPhase& phase, std::string detail);
  /// The estimate for `workload`: the registered estimator's, corrected by
  /// the device's measured history when one is set (learned_estimate.hpp);
  /// an estimate of 0 bytes with source "no estimator" when none is
  /// registered.
  Estimate estimate(const Workload& workload) const;
  /// Learn from and record into `history` (null: neither): every phase run
  /// through this context that ends is recorded with its working peak
  /// (a failed one with the allocation that failed, where the error says),
  /// `by` naming who ran it ("mold run"). Recording never fails a run.
  /// With `learn` false the estimates stay the tables' (molddiag calibrate
  /// measures the tables themselves) and phases are only recorded.
  void set_history(std::shared_ptr<MeasuredHistory> history, std::string by,
                   bool learn = true);

  /// Asked before each phase and at each step: when it returns true the run
  /// stops there with mold::Cancelled (whose message is `reason`).
  void set_cancel(std::function<bool()> cancelled, std::string reason);
  /// Throws Cancelled when the run's cancel function says so.
  void check_cancelled() const;

  ModelCache& cache() { return cache_; }
  Backend& backend() { return cache_.backend(); }
  const Registry& registry() const { return registry_; }
  void emit(const PhaseEvent& event);

 private:
  ModelCache& cache_;
  const Registry& registry_;
  std::vector<RunObserver*> observers_;
  int image_ = 0;
  int images_ = 1;
  std::function<bool()> cancelled_;
  std::string cancel_reason_;
  std::shared_ptr<MeasuredHistory> history_;
  std::string recorded_by_;
  bool learn_ = true;

  void record(const PhaseEvent& event, const std::string& error);
};

}  // namespace mold
