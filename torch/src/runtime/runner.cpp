#include "mold/runtime/runner.hpp"

#include <algorithm>
#include <chrono>

#include "mold/device/backend.hpp"
#include "mold/runtime/allocation_scope.hpp"

namespace mold {

Runner::Runner(Pipeline& pipeline, ModelCache& cache, const Registry& registry)
    : pipeline_(pipeline), cache_(cache), registry_(registry) {
  for (auto& component : pipeline_.components()) cache_.add(component);
}

void Runner::add_observer(RunObserver* observer) {
  observers_.push_back(observer);
}

void Runner::set_cancel(std::function<bool()> cancelled, std::string reason) {
  cancelled_ = std::move(cancelled);
  cancel_reason_ = std::move(reason);
}

void Runner::remove_observer(RunObserver* observer) {
  observers_.erase(std::remove(observers_.begin(), observers_.end(), observer),
                   observers_.end());
}

void Runner::set_history(std::shared_ptr<MeasuredHistory> history,
                         std::string by, bool learn) {
  history_ = std::move(history);
  recorded_by_ = std::move(by);
  learn_ = learn;
}

std::vector<PlannedPhase> Runner::plan(const ResolvedRequest& request) const {
  return pipeline_.plan(*request);
}

void Runner::run(const ResolvedRequest& request, const ImageSink& sink) {
  const GenerateRequest& resolved = *request;
  RunContext context(cache_, registry_, observers_);
  context.set_cancel(cancelled_, cancel_reason_);
  context.set_history(history_, recorded_by_, learn_);
  for (int i = 0; i < resolved.batch; ++i) {
    const auto started = std::chrono::steady_clock::now();
    context.begin_image(i, resolved.batch);
    ImageRecord record;
    record.image = i;
    record.images = resolved.batch;
    record.seed = resolved.seed + std::uint64_t(i);
    GeneratedImage image = pipeline_.generate(resolved, record.seed, context);
    record.height = int(image.rgb.size(1));
    record.width = int(image.rgb.size(2));
    record.seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - started)
                         .count();
    if (sink) sink(record, image);
    image = GeneratedImage();
    Backend& backend = cache_.backend();
    backend.empty_cache();
    record.after_cleanup = backend.stats();
    record.residency = cache_.entries();
    record.attributed = backend.attributes_allocations();
    if (record.attributed)
      record.live_by_scope = AllocationScopes::residue(backend);
    for (RunObserver* observer : observers_) observer->on_image(record);
  }
  AllocationScopes::close(cache_.backend());
}

}  // namespace mold
