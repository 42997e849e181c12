#include "mold/profile/parity.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <utility>

namespace mold {

namespace {

Bytes allowance(Bytes first, const ParityOptions& o) {
  return Bytes(std::llround(double(first) * (1 + o.relative))) + o.absolute;
}

/// The bytes a phase found allocated beyond the resident weights.
Bytes carried_part(const PhaseSample& s) {
  const Bytes unaccounted = s.unaccounted_peak();
  const Bytes working = s.working_peak();
  return unaccounted > working ? unaccounted - working : 0;
}

const ImageSample* image_sample(const MemoryProfile& p, int image) {
  for (const auto& s : p.images)
    if (s.image == image) return &s;
  return nullptr;
}

/// Who kept the bytes carried into image `image`: of what was live at the
/// end of the image before, the phase whose bytes come closest to `bytes`
/// (exact, from its allocation scopes); without scopes, the phase of that
/// image whose net allocation (after - before) comes closest (inferred).
void find_carrier(const MemoryProfile& p, int image, PhaseParity& row) {
  const int before = image - 1;
  const ImageSample* prev = image_sample(p, before);
  const double target = double(row.carried);
  if (prev && prev->attributed) {
    struct Group {
      Bytes bytes = 0;
      int newest = -1, oldest = -1;
    };
    std::map<std::string, Group> groups;
    for (const auto& r : prev->residue) {
      if (r.kind != "phase" && r.kind != "between_phases") continue;
      Group& g = groups[r.phase];
      g.bytes += r.bytes;
      g.newest = std::max(g.newest, r.image);
      g.oldest = g.oldest < 0 ? r.image : std::min(g.oldest, r.image);
    }
    const std::pair<const std::string, Group>* best = nullptr;
    for (const auto& g : groups)
      if (!best || std::abs(double(g.second.bytes) - target) <
                       std::abs(double(best->second.bytes) - target))
        best = &g;
    if (best) {
      row.carried_by = best->first;
      row.carried_by_image = best->second.newest;
      row.carried_since_image = best->second.oldest;
      row.carried_exact = true;
      return;
    }
  }
  const PhaseSample* best = nullptr;
  for (const auto& ph : p.phases) {
    if (ph.image != before) continue;
    const double net = double(ph.after.allocated) - double(ph.before.allocated);
    if (net <= 0) continue;
    if (!best || std::abs(net - target) <
                     std::abs(double(best->after.allocated) -
                              double(best->before.allocated) - target))
      best = &ph;
  }
  if (best) {
    row.carried_by = best->phase;
    row.carried_by_image = row.carried_since_image = before;
  }
}

}  // namespace

std::string carried_images(const PhaseParity& row) {
  if (row.carried_by_image < 0) return "an earlier image";
  return row.carried_since_image >= 0 &&
                 row.carried_since_image < row.carried_by_image
             ? fmt::format("images {}-{}", row.carried_since_image + 1,
                           row.carried_by_image + 1)
             : fmt::format("image {}", row.carried_by_image + 1);
}

namespace {

std::string kept_by(const PhaseParity& row) {
  if (row.carried_by_image < 0) return "kept by an earlier image";
  return fmt::format(
      "kept by {} of {} ({})",
      row.carried_by.empty() ? std::string("the pipeline between phases")
                             : row.carried_by,
      carried_images(row),
      row.carried_exact ? "exact, from its allocation scope"
                        : "inferred from what its phases left allocated");
}

}  // namespace

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
  int broken = 0, carried = 0;
  const PhaseParity* first_broken = nullptr;
  const PhaseParity* first_carried = nullptr;
  for (const auto& key : order) {
    const auto& samples = runs[key];
    const PhaseSample* first = samples.front();
    PhaseParity row;
    row.phase = key.first;
    row.occurrence = key.second;
    row.first = first->unaccounted_peak();
    row.first_raw_peak = first->after.peak_allocated;
    row.allowed = allowance(row.first, options);
    row.first_working = first->working_peak();
    row.allowed_working = allowance(row.first_working, options);
    // The largest of the later images' (the first's own when it is alone).
    row.worst = row.first;
    row.worst_image = first->image;
    row.worst_raw_peak = row.first_raw_peak;
    row.worst_working = row.first_working;
    row.worst_working_image = first->image;
    const PhaseSample* worst = first;
    for (std::size_t i = 1; i < samples.size(); ++i) {
      const Bytes peak = samples[i]->unaccounted_peak();
      if (i == 1 || peak > row.worst) {
        row.worst = peak;
        row.worst_image = samples[i]->image;
        row.worst_raw_peak = samples[i]->after.peak_allocated;
        worst = samples[i];
      }
      const Bytes working = samples[i]->working_peak();
      if (i == 1 || working > row.worst_working) {
        row.worst_working = working;
        row.worst_working_image = samples[i]->image;
      }
    }
    row.ok = row.worst_working <= row.allowed_working;
    if (row.ok && row.worst > row.allowed) {
      row.carried_in = true;
      const Bytes now = carried_part(*worst), then = carried_part(*first);
      row.carried = now > then ? now - then : 0;
      find_carrier(profile, row.worst_image, row);
    }
    r.phases.push_back(std::move(row));
  }
  for (const auto& row : r.phases) {
    if (!row.ok && !broken++) first_broken = &row;
    if (row.carried_in && !carried++) first_carried = &row;
  }
  r.ok = broken == 0;
  r.carried = carried > 0;
  if (r.images < 2) {
    r.summary = "one image: nothing to compare (give at least 2)";
  } else if (first_broken) {
    const PhaseParity& row = *first_broken;
    r.summary = fmt::format(
        "parity broken: {} of image {} needs {} of its own working memory, "
        "image 1's {} (allowed {}): {} more",
        row.phase, row.worst_working_image + 1, format_bytes(row.worst_working),
        format_bytes(row.first_working), format_bytes(row.allowed_working),
        format_bytes(row.worst_working - row.first_working));
    if (broken > 1) r.summary += fmt::format(" ({} phases broken)", broken);
  } else if (first_carried) {
    const PhaseParity& row = *first_carried;
    r.summary = fmt::format(
        "memory carried in: {} of image {} found {} more allocated than in "
        "image 1 (beyond the resident weights), {}; its own working memory "
        "is within parity",
        row.phase, row.worst_image + 1, format_bytes(row.carried),
        kept_by(row));
    if (carried > 1)
      r.summary += fmt::format(" ({} phases carried memory)", carried);
  } else {
    r.summary = fmt::format(
        "parity holds: every phase of images 2 to {} within {:g}% + {} of "
        "image 1's peak beyond the resident weights",
        r.images, options.relative * 100, format_bytes(options.absolute));
  }
  return r;
}

}  // namespace mold
