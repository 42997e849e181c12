#include "mold/profile/leak_analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

namespace mold {

namespace {

/// A rate per image from what each image kept (image -> bytes): over the
/// span from the first image that kept something to the last, so that an
/// intermittent leak (every k-th image) or one that starts late is not
/// diluted by the images around it. `flat`: bytes that count as nothing.
/// Returns (bytes per image, images of the span).
std::pair<double, int> rate_over_span(const std::map<int, double>& kept,
                                      int images, double flat) {
  std::vector<std::pair<int, double>> events;
  bool sparse = true;
  double total = 0;
  for (const auto& [image, bytes] : kept) {
    total += bytes;
    if (bytes > flat)
      events.emplace_back(image, bytes);
    else if (std::abs(bytes) > flat)
      sparse = false;  // it gave back too: a mean says more
  }
  if (sparse && events.size() >= 2) {
    const int span = events.back().first - events.front().first;
    double after_first = 0;
    for (std::size_t i = 1; i < events.size(); ++i)
      after_first += events[i].second;
    return {after_first / double(span), span + 1};
  }
  return {total / double(std::max(1, images)), images};
}

/// Whether the images that kept something (image -> bytes still live) run
/// from the first image of [first, end] to its last at a steady pace: at
/// least 3 of them, every gap at most twice the median gap, and an image
/// within the largest gap of each end. A cache whose entries are replaced
/// keeps only its last images'; one filled once keeps its first images'.
bool persistent(const std::map<int, double>& kept, int first, int end) {
  std::vector<int> events;
  for (const auto& [image, bytes] : kept)
    if (bytes > 0 && image >= first && image <= end) events.push_back(image);
  if (events.size() < 3) return false;
  std::vector<int> gaps;
  for (std::size_t i = 1; i < events.size(); ++i)
    gaps.push_back(events[i] - events[i - 1]);
  const int gap = *std::max_element(gaps.begin(), gaps.end());
  std::nth_element(gaps.begin(), gaps.begin() + std::ptrdiff_t(gaps.size() / 2),
                   gaps.end());
  const int median = gaps[gaps.size() / 2];
  return gap <= 2 * median && events.front() - first < gap &&
         end - events.back() < gap;
}

/// The images after warm-up whose phases' allocations are still live at the
/// end, if they are the last few in a row (2 or more) and the first two
/// images after warm-up are not among them (all they allocated was freed):
/// a cache whose entries are replaced. 0 otherwise.
int recent_holders(const ImageSample& last, int first) {
  std::set<int> holders;
  for (const auto& res : last.residue)
    if ((res.kind == "phase" || res.kind == "between_phases") &&
        res.image >= first && res.bytes > 0)
      holders.insert(res.image);
  const int count = int(holders.size());
  if (count < 2 || *holders.begin() < first + 2) return 0;
  return *holders.begin() == last.image + 1 - count &&
                 *holders.rbegin() == last.image
             ? count
             : 0;
}

/// What one phase (or the component's loads) allocated in earlier images
/// that is still live at the last image.
struct LiveScopes {
  std::string component;
  Bytes bytes = 0;
  std::map<int, double> by_image;         // before the last image
  std::map<int, double> by_image_to_end;  // the last one too
};

/// The last image's live scopes grouped: by phase (or between phases), by
/// component for load scopes, and the load scopes of parked components.
struct LiveScopeGroups {
  std::map<std::string, LiveScopes> by_phase;
  std::map<std::string, LiveScopes> by_component;
  std::map<std::string, Bytes> parked_live;  // load scopes, any image
};

LiveScopeGroups group_live_scopes(const ImageSample& last) {
  std::map<std::string, Residency> residency;
  for (const auto& e : last.residency) residency[e.name] = e.residency;
  LiveScopeGroups groups;
  for (const auto& res : last.residue) {
    if (res.kind == "load") {
      const auto it = residency.find(res.component);
      if (it != residency.end() && it->second != Residency::device) {
        groups.parked_live[res.component] += res.bytes;
        continue;
      }
    }
    if (res.image < 0 || res.image > last.image) continue;
    LiveScopes* g = nullptr;
    if (res.kind == "load") {
      g = &groups.by_component[res.component];
    } else if (res.kind == "phase" || res.kind == "between_phases") {
      g = &groups.by_phase[res.phase];
      g->component = res.component;
    }
    if (!g) continue;
    g->by_image_to_end[res.image] += double(res.bytes);
    if (res.image == last.image) continue;
    g->bytes += res.bytes;
    g->by_image[res.image] += double(res.bytes);
  }
  return groups;
}

/// What images from `first` on kept.
std::map<int, double> from_image(const std::map<int, double>& all, int first) {
  return std::map<int, double>(all.lower_bound(first), all.end());
}

/// A phase whose earlier images' allocations are still live, if any after
/// warm-up are: its rate, and whether it kept them since warm-up (or since
/// the first image) at a steady pace.
std::optional<LeakAttribution> phase_attribution(const std::string& phase,
                                                 const LiveScopes& all,
                                                 int first, int last_image) {
  const std::map<int, double> kept = from_image(all.by_image, first);
  if (kept.empty()) return std::nullopt;
  const int earlier = std::max(1, last_image - first);
  LeakAttribution a;
  a.phase = phase;
  a.component = all.component;
  a.exact = true;
  std::tie(a.bytes_per_image, a.images) = rate_over_span(kept, earlier, 0);
  a.persistent =
      persistent(from_image(all.by_image_to_end, first), first, last_image);
  a.since_first_image = persistent(all.by_image_to_end, 0, last_image);
  // Kept from the first image on: its rate over the whole run.
  if (a.since_first_image)
    std::tie(a.bytes_per_image, a.images) =
        rate_over_span(all.by_image, std::max(1, last_image), 0);
  a.detail = fmt::format(
      "{} allocated by {} in {} of the {} images before the last (after "
      "warm-up) is still live at the end of the last image; {} per image "
      "over the {} images from the first that kept some to the last",
      format_bytes(Bytes(std::llround(std::accumulate(
          kept.begin(), kept.end(), 0.0,
          [](double sum, const auto& kv) { return sum + kv.second; })))),
      phase.empty() ? std::string("the pipeline between phases")
                    : "phase " + phase,
      kept.size(), earlier, format_byte_change(a.bytes_per_image), a.images);
  return a;
}

/// Exact attribution: the scopes of earlier images still live at the last
/// image, by phase. Load scopes of parked components are parked holdings.
void attribute_exactly(const MemoryProfile& p, int first, LeakReport& r) {
  const ImageSample& last = p.images.back();
  const LiveScopeGroups groups = group_live_scopes(last);
  for (const auto& [phase, all] : groups.by_phase)
    if (auto a = phase_attribution(phase, all, first, last.image))
      r.attributions.push_back(std::move(*a));
  std::map<std::string, Bytes> weights;
  for (const auto& e : last.residency) weights[e.name] = e.bytes;
  for (const auto& [component, bytes] : groups.parked_live)
    r.parked_holding.push_back({component, weights[component], bytes, true});
  const int earlier = std::max(1, last.image - first);
  for (const auto& [component, all] : groups.by_component) {
    const std::map<int, double> kept = from_image(all.by_image, first);
    if (kept.size() <= 1) continue;
    // Resident, but loads of earlier images are still live too.
    LeakAttribution a;
    a.phase = "";
    a.component = component;
    a.exact = true;
    std::tie(a.bytes_per_image, a.images) = rate_over_span(kept, earlier, 0);
    a.detail = fmt::format(
        "{} allocated while loading {} in {} earlier images is still live: "
        "earlier loads were not freed",
        format_bytes(all.bytes), component, kept.size());
    r.attributions.push_back(std::move(a));
  }
  std::sort(r.attributions.begin(), r.attributions.end(),
            [](const LeakAttribution& a, const LeakAttribution& b) {
              return a.bytes_per_image > b.bytes_per_image;
            });
}

/// Inferred attribution: the phase whose net allocation (after - before)
/// per image after warm-up comes closest to the leak's slope.
void attribute_by_inference(const MemoryProfile& p, int first, double slope,
                            double flat, LeakReport& r) {
  std::map<std::pair<std::string, std::string>, std::map<int, double>> nets;
  for (const auto& ph : p.phases) {
    if (ph.image < first) continue;
    nets[{ph.phase, ph.component}][ph.image] +=
        double(ph.after.allocated) - double(ph.before.allocated);
  }
  // The pipeline's own work between phases: what an image left that its
  // phases did not (where there are phases at all).
  for (std::size_t i = std::size_t(std::max(first, 1));
       !p.phases.empty() && i < p.images.size(); ++i) {
    const int image = p.images[i].image;
    double phases = 0;
    for (const auto& [key, by_image] : nets) {
      const auto it = by_image.find(image);
      if (it != by_image.end()) phases += it->second;
    }
    nets[{"", ""}][image] = double(p.images[i].after.allocated) -
                            double(p.images[i - 1].after.allocated) - phases;
  }
  const int images = std::max(1, int(p.images.size()) - first);
  std::vector<LeakAttribution> candidates;
  for (const auto& [key, by_image] : nets) {
    LeakAttribution a;
    std::tie(a.bytes_per_image, a.images) =
        rate_over_span(by_image, images, flat);
    if (a.bytes_per_image <= 0) continue;
    a.phase = key.first;
    a.component = key.second;
    a.exact = false;
    a.detail = fmt::format(
        "inferred: {} leaves {} more allocated than it found, per image "
        "over {} images, and the leak's slope is {} per image (this backend "
        "does not say which code allocated what)",
        key.first.empty() ? std::string("the pipeline between phases")
                          : "phase " + key.first,
        format_byte_change(a.bytes_per_image), a.images,
        format_byte_change(slope));
    candidates.push_back(std::move(a));
  }
  const LeakAttribution* best = nullptr;
  for (const auto& c : candidates)
    if (!best || std::abs(c.bytes_per_image - slope) <
                     std::abs(best->bytes_per_image - slope))
      best = &c;
  if (best) r.attributions.push_back(*best);
}

/// Parked components whose last park gave back less than their bytes.
void parked_by_release(const MemoryProfile& p, const LeakOptions& o,
                       LeakReport& r) {
  for (const auto& e : p.images.back().residency) {
    if (e.residency == Residency::device || !e.released_on_park) continue;
    if (e.bytes <= *e.released_on_park + o.threshold) continue;
    const bool known = std::any_of(
        r.parked_holding.begin(), r.parked_holding.end(),
        [&](const ParkedHolding& h) { return h.component == e.name; });
    if (!known)
      r.parked_holding.push_back(
          {e.name, e.bytes, e.bytes - *e.released_on_park, false});
  }
}

}  // namespace

std::string to_string(LeakVerdict verdict) {
  switch (verdict) {
  case LeakVerdict::clean:
    return "clean";
  case LeakVerdict::bounded:
    return "bounded";
  case LeakVerdict::leak:
    return "leak";
  case LeakVerdict::undecided:
    return "undecided";
  case LeakVerdict::too_few:
    return "too_few_images";
  }
  return "?";
}

namespace {

/// The three series (allocated, reserved, host RSS) judged on their own.
void judge_all_series(const MemoryProfile& p, const LeakOptions& o,
                      LeakReport& r) {
  std::vector<double> allocated, reserved, host;
  double device_peak = 0, host_peak = 0;
  for (const auto& img : p.images) {
    device_peak = std::max(device_peak, double(img.after.peak_allocated));
    host_peak = std::max(host_peak, double(img.after.host_rss));
    allocated.push_back(double(img.after.allocated));
    reserved.push_back(double(img.after.reserved));
    host.push_back(double(img.after.host_rss));
  }
  for (const auto& ph : p.phases)
    device_peak = std::max(device_peak, double(ph.after.peak_allocated));
  SeriesRules rules;
  rules.threshold = o.threshold;
  rules.peak_fraction = o.peak_fraction;
  rules.max_warmup = o.max_warmup;
  rules.noise_factor = o.noise_factor;
  rules.min_flat_images = o.min_flat_images;
  r.allocated = judge_series("allocated", allocated, device_peak, rules);
  r.reserved = judge_series("reserved", reserved, device_peak, rules);
  SeriesRules host_rules = rules;
  host_rules.threshold = o.host_threshold;
  r.host = judge_series("host_rss", host, host_peak, host_rules);
  r.warmup = r.allocated.warmup;
}

/// The exact attribution that kept the most per image, at or above the
/// threshold, from every image since warm-up on; null if none did.
const LeakAttribution* kept_all_along(const LeakReport& r,
                                      const LeakOptions& o) {
  const LeakAttribution* kept = nullptr;
  for (const auto& a : r.attributions)
    if (a.persistent && a.bytes_per_image >= double(o.threshold) &&
        (!kept || a.bytes_per_image > kept->bytes_per_image))
      kept = &a;
  return kept;
}

/// Where the backend attributes allocations, the scopes still live say
/// more than the series: a phase whose allocations of every image since
/// warm-up are still live leaks, whatever the noise around it; a series
/// that rises (not at every image) while no phase's early allocations are
/// still live is a cache whose entries are replaced, or a leak the scopes
/// do not see: undecided.
void judge_allocated_by_scopes(const MemoryProfile& p, int images,
                               const LeakAttribution* kept,
                               SeriesVerdict& alloc) {
  if (kept && kept->since_first_image && !alloc.grows()) {
    alloc.shape = SeriesShape::grows;
    alloc.reason = fmt::format(
        "GROWS by its allocation scopes: {} kept {} per image from image 1 "
        "on, all still live: never freed (the series alone, noisier: {})",
        kept->phase.empty() ? std::string("the pipeline between phases")
                            : "phase " + kept->phase,
        format_byte_change(kept->bytes_per_image), alloc.reason);
    return;
  }
  if (kept || alloc.rises_every_image) return;
  const int holders = alloc.grows() || alloc.shape == SeriesShape::undecided
                          ? recent_holders(p.images.back(), alloc.warmup)
                          : 0;
  if (holders) {
    alloc.shape = SeriesShape::bounded;
    alloc.grew = *std::max_element(alloc.values.begin(), alloc.values.end()) -
                 double(p.images.front().after.allocated);
    alloc.grew_from = 0;
    alloc.grew_to = alloc.warmup;
    alloc.flat_images = int(alloc.values.size());
    alloc.images_needed = 0;
    alloc.live_images = holders;
    alloc.reason = fmt::format(
        "bounded: by its allocation scopes, only the last {} images' "
        "allocations are still live, every earlier image's were freed: a "
        "cache whose entries are replaced (the series alone: {})",
        holders, alloc.reason);
  } else if (alloc.grows()) {
    alloc.shape = SeriesShape::undecided;
    alloc.images_needed = std::max(alloc.images_needed, 2 * images);
    alloc.reason = fmt::format(
        "undecided: it rises ({}), but no phase's allocations of the first "
        "images after warm-up are still live (exact, from allocation scopes): "
        "a cache whose entries are replaced, or growth outside the scopes; "
        "run at least {} images",
        alloc.reason, alloc.images_needed);
  }
}

/// Keeps the attributions worth a line: on a device leak, what was kept all
/// along where something was (or the inferred phase where nothing was
/// exact); none without one. Parked holdings stay, even without growth.
void keep_attributions(const MemoryProfile& p, const LeakOptions& o,
                       bool device_leak, bool any_kept_all_along,
                       LeakReport& r) {
  if (device_leak) {
    if (any_kept_all_along)
      r.attributions.erase(
          std::remove_if(
              r.attributions.begin(), r.attributions.end(),
              [](const LeakAttribution& a) { return !a.persistent; }),
          r.attributions.end());
    if (r.attributions.empty())
      attribute_by_inference(p, r.warmup, r.allocated.trend.slope,
                             double(o.threshold) / 4, r);
  } else {
    r.attributions.clear();
  }
  // What is below the threshold is not worth a line.
  r.parked_holding.erase(
      std::remove_if(
          r.parked_holding.begin(), r.parked_holding.end(),
          [&](const ParkedHolding& h) { return h.held <= o.threshold; }),
      r.parked_holding.end());
  r.attributions.erase(
      std::remove_if(r.attributions.begin(), r.attributions.end(),
                     [&](const LeakAttribution& a) {
                       return a.bytes_per_image < double(o.threshold) / 4;
                     }),
      r.attributions.end());
  parked_by_release(p, o, r);
}

/// The series the verdict rests on when it is not a leak: the first
/// undecided one (allocated, then host RSS) and the bounded one.
struct DecidingSeries {
  const SeriesVerdict* undecided = nullptr;
  const SeriesVerdict* bounded = nullptr;
};

DecidingSeries deciding_series(bool no_device, LeakReport& r) {
  DecidingSeries d;
  for (const SeriesVerdict* v : {&r.allocated, &r.host})
    if (v->shape == SeriesShape::undecided) {
      r.images_needed = std::max(r.images_needed, v->images_needed);
      if (!d.undecided) d.undecided = v;
    }
  d.bounded = r.allocated.shape == SeriesShape::bounded           ? &r.allocated
              : no_device && r.host.shape == SeriesShape::bounded ? &r.host
                                                                  : nullptr;
  return d;
}

std::string plural(std::size_t n) { return n == 1 ? "" : "s"; }

std::string label(const SeriesVerdict& v) {
  return v.name == "host_rss" ? std::string("host RSS") : v.name;
}

std::string device_leak_summary(const LeakReport& r) {
  std::string summary = fmt::format(
      "LEAK: allocated grows {} per image (95% interval {} to {}) over {} "
      "images after {} warm-up image{}",
      format_byte_change(r.allocated.trend.slope),
      format_byte_change(r.allocated.slope_low),
      format_byte_change(r.allocated.slope_high), r.allocated.values.size(),
      r.warmup, plural(std::size_t(r.warmup)));
  if (!r.attributions.empty()) {
    const LeakAttribution& a = r.attributions.front();
    summary += fmt::format(
        "; kept by {} ({}), {} per image over {} images",
        a.phase.empty() ? std::string("the pipeline between phases") : a.phase,
        a.exact ? "exact" : "inferred", format_byte_change(a.bytes_per_image),
        a.images);
  }
  return summary;
}

/// What the allocator says of a reserved series that grows while the
/// allocated one does not, where it says anything.
std::string caching_summary(const MemoryProfile& p, const LeakReport& r) {
  const MemoryStats& a = p.images[std::size_t(r.reserved.warmup)].after;
  const MemoryStats& b = p.images.back().after;
  std::string evidence;
  if (b.inactive_split > a.inactive_split)
    evidence += fmt::format("; inactive split blocks grew {}",
                            format_bytes(b.inactive_split - a.inactive_split));
  if (b.alloc_retries > a.alloc_retries)
    evidence += fmt::format(
        "; {} allocation retries (the cache freed and "
        "retried)",
        b.alloc_retries - a.alloc_retries);
  return fmt::format(
      "clean: allocated is {}; reserved grows {} per image, which is the "
      "allocator caching or fragmenting, not a leak{}",
      to_string(r.allocated.shape), format_byte_change(r.reserved.trend.slope),
      evidence);
}

std::string bounded_summary(const SeriesVerdict& bounded) {
  if (bounded.live_images > 0) {
    const auto [low, high] =
        std::minmax_element(bounded.values.begin(), bounded.values.end());
    return fmt::format(
        "bounded: only the last {} images' allocations are still live (exact, "
        "from allocation scopes), every earlier image's were freed: a cache "
        "whose entries are replaced; allocated stays between {} and {} since "
        "image {}, not a leak",
        bounded.live_images, format_byte_change(*low),
        format_byte_change(*high), bounded.warmup + 1);
  }
  return fmt::format(
      "bounded: {} grew {} over {} and stayed flat for the {} images "
      "since: a cache that filled, not a leak",
      label(bounded), format_byte_change(bounded.grew),
      bounded.grew_to <= 1 ? std::string("image 1")
                           : fmt::format("images 1-{}", bounded.grew_to),
      bounded.flat_images);
}

/// The one-line summary, for the verdict already decided.
std::string summary(const MemoryProfile& p, const LeakReport& r,
                    const DecidingSeries& d, bool no_device) {
  const bool device_leak = r.allocated.grows();
  if (device_leak) return device_leak_summary(r);
  if (!r.parked_holding.empty()) {
    // Exact, and said before a host-only growth that may be its consequence.
    const ParkedHolding& h = r.parked_holding.front();
    return fmt::format(
        "LEAK: {} is parked but still holds {} of its {} on the device",
        h.component, format_bytes(h.held), format_bytes(h.bytes));
  }
  if (r.host_only)
    return fmt::format(
        "LEAK in host memory: the process's resident set grows {} per image "
        "(95% interval {} to {}){}",
        format_byte_change(r.host.trend.slope),
        format_byte_change(r.host.slope_low),
        format_byte_change(r.host.slope_high),
        no_device ? " (no device memory was sampled)"
                  : " while the device's allocated bytes stay flat");
  if (d.undecided) {
    const std::string prefix = "undecided: ";
    const std::string& why = d.undecided->reason;
    return fmt::format("UNDECIDED: {} {}", label(*d.undecided),
                       why.compare(0, prefix.size(), prefix) == 0
                           ? why.substr(prefix.size())
                           : why);
  }
  if (r.caching) return caching_summary(p, r);
  if (d.bounded) return bounded_summary(*d.bounded);
  const SeriesVerdict& v = no_device ? r.host : r.allocated;
  return fmt::format(
      "clean: no growth after {} warm-up image{} ({} {} per image over {} "
      "images)",
      v.warmup, plural(std::size_t(v.warmup)), label(v),
      format_byte_change(v.trend.slope), v.values.size());
}

}  // namespace

LeakReport analyze_leaks(const MemoryProfile& p, const LeakOptions& o) {
  LeakReport r;
  r.images = int(p.images.size());
  judge_all_series(p, o, r);
  if (r.images < 4) {
    r.verdict = LeakVerdict::too_few;
    r.summary = fmt::format(
        "too few images: {}; at least 4 are needed (give more images)",
        r.images);
    return r;
  }
  const bool attributed = p.images.back().attributed;
  if (attributed) attribute_exactly(p, r.warmup, r);
  const LeakAttribution* kept = kept_all_along(r, o);
  if (attributed) judge_allocated_by_scopes(p, r.images, kept, r.allocated);
  const bool device_leak = r.allocated.grows();
  const bool host_leak = r.host.grows() && !device_leak;
  r.host_only = host_leak;
  r.caching = !device_leak && r.reserved.grows();
  keep_attributions(p, o, device_leak, kept != nullptr, r);

  const bool no_device = p.backend.empty();
  const DecidingSeries d = deciding_series(no_device, r);
  if (device_leak || host_leak || !r.parked_holding.empty())
    r.verdict = LeakVerdict::leak;
  else if (d.undecided)
    r.verdict = LeakVerdict::undecided;
  else if (d.bounded)
    r.verdict = LeakVerdict::bounded;
  else
    r.verdict = LeakVerdict::clean;
  r.summary = summary(p, r, d, no_device);
  return r;
}

}  // namespace mold
