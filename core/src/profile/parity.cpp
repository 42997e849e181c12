#include "mold/profile/parity.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <utility>

namespace mold {

ParityReport check_parity(const MemoryProfile& profile,
                          const ParityOptions& options) {
  ParityReport r;
  r.images = int(profile.images.size());
  // (phase, occurrence) -> its samples by image, in order.
  std::map<std::pair<std::string, int>, std::vector<const PhaseSample*>> runs;
  std::vector<std::pair<std::string, int>> order;
  std::map<std::pair<int, std::string>, int> seen;  // (image, phase) -> count
  for (const auto& ph : profile.phases) {
    const int occurrence = seen[{ph.image, ph.phase}]++;
    const auto key = std::make_pair(ph.phase, occurrence);
    if (!runs.count(key)) order.push_back(key);
    runs[key].push_back(&ph);
  }
  int broken = 0;
  for (const auto& key : order) {
    const auto& samples = runs[key];
    const PhaseSample* first = samples.front();
    PhaseParity row;
    row.phase = key.first;
    row.occurrence = key.second;
    row.first = first->unaccounted_peak();
    row.first_raw_peak = first->after.peak_allocated;
    row.allowed =
        Bytes(std::llround(double(row.first) * (1 + options.relative))) +
        options.absolute;
    // The largest of the later images' (the first's own when it is alone).
    row.worst = row.first;
    row.worst_image = first->image;
    row.worst_raw_peak = row.first_raw_peak;
    for (std::size_t i = 1; i < samples.size(); ++i) {
      const Bytes peak = samples[i]->unaccounted_peak();
      if (i == 1 || peak > row.worst) {
        row.worst = peak;
        row.worst_image = samples[i]->image;
        row.worst_raw_peak = samples[i]->after.peak_allocated;
      }
    }
    row.ok = row.worst <= row.allowed;
    if (!row.ok) ++broken;
    r.phases.push_back(std::move(row));
  }
  r.ok = broken == 0;
  if (r.images < 2) {
    r.summary = "one image: nothing to compare (give at least 2)";
  } else if (r.ok) {
    r.summary = fmt::format(
        "parity holds: every phase of images 2 to {} within {:g}% + {} of "
        "image 1's peak beyond the resident weights",
        r.images, options.relative * 100, format_bytes(options.absolute));
  } else {
    for (const auto& row : r.phases) {
      if (row.ok) continue;
      r.summary = fmt::format(
          "parity broken: {} of image {} peaks {} beyond the resident weights, "
          "image 1's {} (allowed {}): {} more",
          row.phase, row.worst_image + 1, format_bytes(row.worst),
          format_bytes(row.first), format_bytes(row.allowed),
          format_bytes(row.worst - row.first));
      break;
    }
    if (broken > 1) r.summary += fmt::format(" ({} phases broken)", broken);
  }
  return r;
}

}  // namespace mold
