#include "mold/runtime/progress_printer.hpp"

#include <fmt/format.h>

#include "mold/base/bytes.hpp"
#include "mold/base/text.hpp"

namespace mold {

namespace {

std::string prefix(int image, int images) {
  return fmt::format("[{}/{}]", image + 1, images);
}

}  // namespace

ProgressPrinter::ProgressPrinter(std::ostream& out, bool show_steps)
    : out_(out), show_steps_(show_steps) {}

void ProgressPrinter::on_phase(const PhaseEvent& e) {
  const std::string head =
      fmt::format("{} {}:", prefix(e.image, e.images), e.phase);
  switch (e.stage) {
  case PhaseStage::start: {
    std::string line = fmt::format(
        "{} start ({}estimate {}; free {}", head,
        e.component.empty() ? "" : e.component + "; ",
        format_bytes(e.estimate.bytes), format_bytes(e.before.free));
    if (!e.parked.empty()) line += "; parked " + join_names(e.parked);
    if (e.load_seconds > 0) {
      // What the cache loaded for the phase, and how fast.
      Bytes bytes = 0;
      for (const auto& entry : e.residency)
        if (entry.name == e.component) bytes = entry.bytes;
      line += fmt::format("; loaded {} in {:.2f} s", format_bytes(bytes),
                          e.load_seconds);
      if (bytes > 0)
        line +=
            fmt::format(", {:.2f} GB/s", double(bytes) / e.load_seconds / 1e9);
    }
    out_ << line << ")\n";
    break;
  }
  case PhaseStage::step:
    if (show_steps_)
      out_ << fmt::format("{} step {}/{} ({:.1f} s)\n", head, e.step, e.steps,
                          e.seconds);
    break;
  case PhaseStage::done: {
    std::string line =
        e.steps > 0 ? fmt::format("{} done, {} steps in {:.1f} s", head,
                                  e.steps, e.seconds)
                    : fmt::format("{} done in {:.2f} s", head, e.seconds);
    // Working memory: the peak above what was allocated when the phase
    // started (its component's weights included), against the estimate.
    const Bytes working = e.after.peak_allocated > e.before.allocated
                              ? e.after.peak_allocated - e.before.allocated
                              : 0;
    line += fmt::format(" (working peak {}, estimate {}; peak {}",
                        format_bytes(working), format_bytes(e.estimate.bytes),
                        format_bytes(e.after.peak_allocated));
    if (!e.detail.empty()) line += "; " + e.detail;
    out_ << line << ")\n";
    break;
  }
  case PhaseStage::failed:
    out_ << fmt::format("{} failed after {:.2f} s\n", head, e.seconds);
    break;
  case PhaseStage::reused:
    out_ << fmt::format("{} reused ({})\n", head, e.detail);
    break;
  }
  out_.flush();
}

void ProgressPrinter::on_image(const ImageRecord& image) {
  out_ << fmt::format(
      "{} {} ({}x{}, seed {}, {:.1f} s)\n", prefix(image.image, image.images),
      image.path.empty() ? std::string("made") : "saved " + image.path.string(),
      image.width, image.height, image.seed, image.seconds);
  out_.flush();
}

}  // namespace mold
