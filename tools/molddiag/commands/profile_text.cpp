#include "profile_text.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace molddiag {

namespace {

std::string signed_bytes(double bytes) {
  const auto magnitude = mold::Bytes(std::llround(std::abs(bytes)));
  return (bytes < 0 ? "-" : "+") + mold::format_bytes(magnitude);
}

void print_series(std::ostream& out, const char* label,
                  const mold::SeriesVerdict& v) {
  out << fmt::format("{:<11} {}: {}\n", label, v.grows() ? "GROWS" : "flat",
                     v.reason);
}

}  // namespace

void print_image_table(std::ostream& out, const mold::MemoryProfile& p) {
  out << fmt::format("{}\non {} ({}), {} images\n\n", p.subject, p.backend,
                     p.device, p.images.size());
  out << fmt::format("{:>5}  {:>14}  {:>12}  {:>14}  {:>14}\n", "image",
                     "allocated", "change", "reserved", "host RSS");
  for (std::size_t i = 0; i < p.images.size(); ++i) {
    const auto& img = p.images[i];
    const std::string change =
        i == 0 ? ""
               : signed_bytes(double(img.after.allocated) -
                              double(p.images[i - 1].after.allocated));
    out << fmt::format("{:>5}  {:>14}  {:>12}  {:>14}  {:>14}\n", img.image + 1,
                       mold::format_bytes(img.after.allocated), change,
                       mold::format_bytes(img.after.reserved),
                       mold::format_bytes(img.after.host_rss));
  }
  out << "\n";
}

void print_leak_report(std::ostream& out, const mold::LeakReport& r) {
  out << fmt::format("warm-up:    {} image{} excluded\n", r.warmup,
                     r.warmup == 1 ? "" : "s");
  print_series(out, "allocated", r.allocated);
  print_series(out, "reserved", r.reserved);
  print_series(out, "host RSS", r.host);
  out << fmt::format("verdict:    {}\n", r.summary);
  for (const auto& a : r.attributions)
    out << fmt::format(
        "kept by:    {} ({}{}), {} per image: {}\n",
        a.phase.empty() ? std::string("between phases") : a.phase,
        a.component.empty() ? std::string("no component") : a.component,
        a.exact ? ", exact" : ", inferred",
        mold::format_bytes(mold::Bytes(std::llround(a.bytes_per_image))),
        a.detail);
  for (const auto& h : r.parked_holding)
    out << fmt::format(
        "parked but holding: {} still holds {} of its {} on the device ({})\n",
        h.component, mold::format_bytes(h.held), mold::format_bytes(h.bytes),
        h.exact
            ? "its load's allocations are still live"
            : "its last park gave back only " +
                  mold::format_bytes(h.bytes > h.held ? h.bytes - h.held : 0));
}

void print_parity_report(std::ostream& out, const mold::ParityReport& r) {
  out << fmt::format("parity:     {}\n", r.summary);
  for (const auto& row : r.phases) {
    const std::string name =
        row.occurrence == 0
            ? row.phase
            : fmt::format("{} #{}", row.phase, row.occurrence + 1);
    out << fmt::format(
        "  {:<16} image 1 {}, worst image {} {} (allowed {}){}\n", name,
        mold::format_bytes(row.first), row.worst_image + 1,
        mold::format_bytes(row.worst), mold::format_bytes(row.allowed),
        row.ok ? "" : "  BROKEN");
  }
}

}  // namespace molddiag
