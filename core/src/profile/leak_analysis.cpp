#include "mold/profile/leak_analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace mold {

namespace {

std::string bytes_text(double bytes) {
  const std::string sign = bytes < 0 ? "-" : "";
  return sign + format_bytes(Bytes(std::llround(std::abs(bytes))));
}

/// The images warm-up excludes: until `stable` consecutive images have the
/// same reserved bytes, at most `max_warmup`.
int warmup_images(const std::vector<ImageSample>& images, int stable,
                  int max_warmup) {
  const int n = int(images.size());
  for (int start = 0; start <= max_warmup && start < n; ++start) {
    if (start + stable > n) break;
    bool same = true;
    for (int i = start + 1; i < start + stable; ++i)
      same = same && images[std::size_t(i)].after.reserved ==
                         images[std::size_t(start)].after.reserved;
    if (same) return start;
  }
  return std::min(max_warmup, n);
}

SeriesVerdict judge(std::string name, std::vector<double> values,
                    Bytes threshold, double peak, const LeakOptions& o) {
  SeriesVerdict v;
  v.name = std::move(name);
  v.values = std::move(values);
  v.trend = fit_trend(v.values);
  v.threshold = threshold;
  v.slope_threshold = std::max<Bytes>(
      threshold, Bytes(std::llround(o.peak_fraction * std::max(0.0, peak))));
  if (v.values.size() < 2) {
    v.reason = "too few images to tell";
    return v;
  }
  v.rises_every_image = v.trend.min_step >= double(threshold);
  v.sloped = v.trend.slope > double(v.slope_threshold) &&
             v.trend.r_squared >= o.min_r_squared;
  const std::string slope =
      fmt::format("{} per image (95% interval {} to {}), R^2 {:.2f}",
                  bytes_text(v.trend.slope), bytes_text(v.trend.slope_low),
                  bytes_text(v.trend.slope_high), v.trend.r_squared);
  if (v.rises_every_image)
    v.reason = fmt::format("rises at every image by {} or more; slope {}",
                           bytes_text(v.trend.min_step), slope);
  else if (v.sloped)
    v.reason = fmt::format("slope {}, above {} per image", slope,
                           format_bytes(v.slope_threshold));
  else
    v.reason = fmt::format(
        "slope {}; a leak needs a rise of {} at every "
        "image, or a slope above {} with R^2 >= {:.2f}",
        slope, format_bytes(threshold), format_bytes(v.slope_threshold),
        o.min_r_squared);
  return v;
}

/// Exact attribution: the scopes of earlier images still live at the last
/// image, by phase. Load scopes of parked components are parked holdings.
void attribute_exactly(const MemoryProfile& p, int first, LeakReport& r) {
  const ImageSample& last = p.images.back();
  std::map<std::string, Residency> residency;
  std::map<std::string, Bytes> weights;
  for (const auto& e : last.residency) {
    residency[e.name] = e.residency;
    weights[e.name] = e.bytes;
  }
  struct Group {
    std::string component;
    Bytes bytes = 0;
    std::set<int> images;
  };
  std::map<std::string, Group> by_phase;      // phase or between phases
  std::map<std::string, Group> by_component;  // load scopes
  std::map<std::string, Bytes> parked_live;   // load scopes, any image
  for (const auto& res : last.residue) {
    if (res.kind == "load") {
      const auto it = residency.find(res.component);
      if (it != residency.end() && it->second != Residency::device) {
        parked_live[res.component] += res.bytes;
        continue;
      }
    }
    if (res.image < first || res.image >= last.image) continue;
    if (res.kind == "load") {
      Group& g = by_component[res.component];
      g.bytes += res.bytes;
      g.images.insert(res.image);
    } else if (res.kind == "phase" || res.kind == "between_phases") {
      Group& g = by_phase[res.phase];
      g.component = res.component;
      g.bytes += res.bytes;
      g.images.insert(res.image);
    }
  }
  const int earlier = last.image - first;
  for (const auto& [phase, g] : by_phase) {
    LeakAttribution a;
    a.phase = phase;
    a.component = g.component;
    a.exact = true;
    a.bytes_per_image = double(g.bytes) / double(std::max(1, earlier));
    a.detail = fmt::format(
        "{} allocated by {} in {} of the {} images before the last (after "
        "warm-up) is still live at the end of the last image",
        format_bytes(g.bytes),
        phase.empty() ? std::string("the pipeline between phases")
                      : "phase " + phase,
        g.images.size(), earlier);
    r.attributions.push_back(std::move(a));
  }
  for (const auto& [component, bytes] : parked_live)
    r.parked_holding.push_back({component, weights[component], bytes, true});
  for (const auto& [component, g] : by_component) {
    if (g.images.size() > 1) {
      // Resident, but loads of earlier images are still live too.
      LeakAttribution a;
      a.phase = "";
      a.component = component;
      a.exact = true;
      a.bytes_per_image = double(g.bytes) / double(std::max(1, earlier));
      a.detail = fmt::format(
          "{} allocated while loading {} in {} earlier images is still live: "
          "earlier loads were not freed",
          format_bytes(g.bytes), component, g.images.size());
      r.attributions.push_back(std::move(a));
    }
  }
  std::sort(r.attributions.begin(), r.attributions.end(),
            [](const LeakAttribution& a, const LeakAttribution& b) {
              return a.bytes_per_image > b.bytes_per_image;
            });
}

/// Inferred attribution: the phase whose mean (after - before) allocated
/// after warm-up comes closest to the leak's slope.
void attribute_by_inference(const MemoryProfile& p, int first, double slope,
                            LeakReport& r) {
  std::map<std::pair<std::string, std::string>, std::pair<double, int>> sums;
  for (const auto& ph : p.phases) {
    if (ph.image < first) continue;
    auto& s = sums[{ph.phase, ph.component}];
    s.first += double(ph.after.allocated) - double(ph.before.allocated);
    s.second += 1;
  }
  const LeakAttribution* best = nullptr;
  std::vector<LeakAttribution> candidates;
  for (const auto& [key, s] : sums) {
    const double mean = s.first / s.second;
    if (mean <= 0) continue;
    LeakAttribution a;
    a.phase = key.first;
    a.component = key.second;
    a.bytes_per_image = mean;
    a.exact = false;
    a.detail = fmt::format(
        "inferred: phase {} leaves {} more allocated than it found, on "
        "average per image, and the leak's slope is {} per image (this "
        "backend does not say which code allocated what)",
        key.first, bytes_text(mean), bytes_text(slope));
    candidates.push_back(std::move(a));
  }
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
  case LeakVerdict::leak:
    return "leak";
  case LeakVerdict::too_few:
    return "too_few_images";
  }
  return "?";
}

LeakReport analyze_leaks(const MemoryProfile& p, const LeakOptions& o) {
  LeakReport r;
  r.images = int(p.images.size());
  r.warmup = warmup_images(p.images, std::max(1, o.stable_images),
                           std::max(0, o.max_warmup));
  std::vector<double> allocated, reserved, host;
  double device_peak = 0, host_peak = 0;
  for (const auto& img : p.images) {
    device_peak = std::max(device_peak, double(img.after.peak_allocated));
    host_peak = std::max(host_peak, double(img.after.host_rss));
  }
  for (const auto& ph : p.phases)
    device_peak = std::max(device_peak, double(ph.after.peak_allocated));
  for (std::size_t i = std::size_t(r.warmup); i < p.images.size(); ++i) {
    allocated.push_back(double(p.images[i].after.allocated));
    reserved.push_back(double(p.images[i].after.reserved));
    host.push_back(double(p.images[i].after.host_rss));
  }
  r.allocated = judge("allocated", allocated, o.threshold, device_peak, o);
  r.reserved = judge("reserved", reserved, o.threshold, device_peak, o);
  r.host = judge("host_rss", host, o.host_threshold, host_peak, o);
  if (allocated.size() < 3) {
    r.verdict = LeakVerdict::too_few;
    r.summary = fmt::format(
        "too few images: {} after {} of warm-up; at least 3 are needed "
        "(give more images)",
        allocated.size(), r.warmup);
    return r;
  }
  const bool device_leak = r.allocated.grows();
  const bool host_leak = r.host.grows() && !device_leak;
  r.host_only = host_leak;
  r.caching = !device_leak && r.reserved.grows();
  r.verdict = device_leak || host_leak ? LeakVerdict::leak : LeakVerdict::clean;

  const int first = r.warmup;
  if (device_leak) {
    if (!p.images.empty() && p.images.back().attributed)
      attribute_exactly(p, first, r);
    if (r.attributions.empty())
      attribute_by_inference(p, first, r.allocated.trend.slope, r);
  } else if (!p.images.empty() && p.images.back().attributed) {
    attribute_exactly(p, first, r);  // parked holdings, even without growth
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
  if (!p.images.empty()) parked_by_release(p, o, r);
  if (!r.parked_holding.empty()) r.verdict = LeakVerdict::leak;

  if (device_leak) {
    r.summary = fmt::format(
        "LEAK: allocated grows {} per image (95% interval {} to {}) over {} "
        "images after {} warm-up image{}",
        bytes_text(r.allocated.trend.slope),
        bytes_text(r.allocated.trend.slope_low),
        bytes_text(r.allocated.trend.slope_high), r.allocated.values.size(),
        r.warmup, r.warmup == 1 ? "" : "s");
  } else if (!r.parked_holding.empty()) {
    // Exact, and said before a host-only growth that may be its consequence.
    const ParkedHolding& h = r.parked_holding.front();
    r.summary = fmt::format(
        "LEAK: {} is parked but still holds {} of its {} on the device",
        h.component, format_bytes(h.held), format_bytes(h.bytes));
  } else if (host_leak) {
    r.summary = fmt::format(
        "LEAK in host memory: the process's resident set grows {} per image "
        "(95% interval {} to {}){}",
        bytes_text(r.host.trend.slope), bytes_text(r.host.trend.slope_low),
        bytes_text(r.host.trend.slope_high),
        p.backend.empty() ? " (no device memory was sampled)"
                          : " while the device's allocated bytes stay flat");
  } else if (r.caching) {
    // What the allocator says of it, where it says anything.
    const MemoryStats& a = p.images[std::size_t(r.warmup)].after;
    const MemoryStats& b = p.images.back().after;
    std::string evidence;
    if (b.inactive_split > a.inactive_split)
      evidence +=
          fmt::format("; inactive split blocks grew {}",
                      format_bytes(b.inactive_split - a.inactive_split));
    if (b.alloc_retries > a.alloc_retries)
      evidence += fmt::format(
          "; {} allocation retries (the cache freed and "
          "retried)",
          b.alloc_retries - a.alloc_retries);
    r.summary = fmt::format(
        "clean: allocated is flat; reserved grows {} per image, which is the "
        "allocator caching or fragmenting, not a leak{}",
        bytes_text(r.reserved.trend.slope), evidence);
  } else {
    r.summary = fmt::format(
        "clean: no growth after {} warm-up image{} (allocated {} per image "
        "over {} images)",
        r.warmup, r.warmup == 1 ? "" : "s", bytes_text(r.allocated.trend.slope),
        r.allocated.values.size());
  }
  return r;
}

}  // namespace mold
