#include "mold/profile/profile_recorder.hpp"

#include <utility>

namespace mold {

ProfileRecorder::ProfileRecorder(MemoryProfile header)
    : profile_(std::move(header)) {}

void ProfileRecorder::on_phase(const PhaseEvent& e) {
  if (e.stage != PhaseStage::done) return;
  PhaseSample s;
  s.image = e.image;
  s.phase = e.phase;
  s.component = e.component;
  s.before = e.before;
  s.after = e.after;
  s.estimate = e.estimate.bytes;
  s.seconds = e.seconds;
  s.parked = e.parked;
  s.residency = e.residency;
  profile_.phases.push_back(std::move(s));
}

void ProfileRecorder::on_image(const ImageRecord& image) {
  ImageSample s;
  s.image = image.image;
  s.seed = image.seed;
  s.seconds = image.seconds;
  s.after = image.after_cleanup;
  s.residency = image.residency;
  s.attributed = image.attributed;
  for (const auto& r : image.live_by_scope) {
    ResidueSample out;
    out.bytes = r.bytes;
    if (r.scope) {
      out.image = r.scope->image;
      out.phase = r.scope->phase;
      out.component = r.scope->component;
      out.kind = std::string(to_string(r.scope->kind));
    } else {
      out.kind = "outside";
    }
    s.residue.push_back(std::move(out));
  }
  profile_.images.push_back(std::move(s));
  if (on_image_) on_image_(profile_.images.back());
}

}  // namespace mold
