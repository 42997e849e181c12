#include "mold/profile/html_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

namespace mold {

namespace {

constexpr double kWidth = 880, kHeight = 300;
constexpr double kLeft = 90, kRight = 20, kTop = 20, kBottom = 40;

struct Series {
  std::string name;   ///< legend text
  std::string klass;  ///< CSS class (colour)
  std::vector<double> y;
};

/// A round step for about `ticks` ticks over `span`.
double nice_step(double span, int ticks) {
  if (span <= 0) return 1;
  const double raw = span / ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (raw <= m * magnitude) return m * magnitude;
  return 10 * magnitude;
}

/// The binary unit (KiB, MiB, GiB or bytes) of the largest value.
double byte_unit(double hi) {
  return hi >= double(kGiB)   ? double(kGiB)
         : hi >= double(kMiB) ? double(kMiB)
         : hi >= double(kKiB) ? double(kKiB)
                              : 1.0;
}

/// A line chart's frame: n images on x, bytes on y from a round floor (so
/// that flat series are visible), steps round in the largest value's unit.
struct ChartFrame {
  std::size_t n;
  double step, y0, y1;
  double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;

  ChartFrame(std::size_t images, double lo, double hi)
      : n(images),
        step(byte_unit(hi) *
             nice_step(
                 std::max(hi - lo, std::max(1.0, hi) * 0.02) / byte_unit(hi),
                 4)),
        y0(std::floor(lo / step) * step),
        y1(std::max(y0 + step, std::ceil(hi / step) * step)) {}
  double x_of(std::size_t i) const {
    return kLeft + (n == 1 ? pw / 2 : pw * double(i) / double(n - 1));
  }
  double y_of(double v) const { return kTop + ph * (1 - (v - y0) / (y1 - y0)); }
};

/// The warm-up shade, the grid with its byte ticks and the image ticks.
std::string chart_axes(const ChartFrame& f, int shade) {
  std::string svg;
  if (shade > 0 && f.n > 1) {
    const double x = f.x_of(std::min<std::size_t>(std::size_t(shade), f.n - 1));
    svg += fmt::format(
        "<rect class=\"warmup\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" "
        "height=\"{}\"><title>warm-up: {} image{}</title></rect>\n",
        kLeft, kTop, std::max(0.0, x - kLeft), f.ph, shade,
        shade == 1 ? "" : "s");
  }
  for (double v = f.y0; v <= f.y1 + f.step / 2; v += f.step) {
    const double y = f.y_of(v);
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\"/>"
        "<text class=\"tick\" x=\"{}\" y=\"{:.1f}\">{}</text>\n",
        kLeft, y, kWidth - kRight, y, kLeft - 6, y + 4,
        format_bytes(Bytes(std::llround(std::max(0.0, v)))));
  }
  const std::size_t xstep =
      std::max<std::size_t>(1, std::size_t(nice_step(double(f.n), 8)));
  for (std::size_t i = 0; i < f.n; i += xstep)
    svg +=
        fmt::format("<text class=\"xtick\" x=\"{:.1f}\" y=\"{}\">{}</text>\n",
                    f.x_of(i), kHeight - kBottom + 16, i + 1);
  svg += fmt::format("<text class=\"xlabel\" x=\"{}\" y=\"{}\">image</text>\n",
                     kLeft + f.pw / 2, kHeight - 6);
  return svg;
}

/// Each series' line, and its swatch in the legend along the top.
std::string chart_lines(const ChartFrame& f,
                        const std::vector<Series>& series) {
  std::string svg;
  double legend_x = kLeft + 8;
  for (const auto& s : series) {
    std::string points;
    points.reserve(s.y.size() * 14);
    for (std::size_t i = 0; i < s.y.size(); ++i)
      points += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", f.x_of(i),
                            f.y_of(s.y[i]));
    svg += fmt::format(
        "<polyline class=\"series {}\" points=\"{}\"><title>{}</title>"
        "</polyline>\n",
        s.klass, points, html_escape(s.name));
    svg += fmt::format(
        "<rect class=\"swatch {}\" x=\"{:.1f}\" y=\"{}\" width=\"10\" "
        "height=\"10\"/><text class=\"legend\" x=\"{:.1f}\" "
        "y=\"{}\">{}</text>\n",
        s.klass, legend_x, kTop + 4, legend_x + 14, kTop + 13,
        html_escape(s.name));
    legend_x += 24 + 7.0 * double(s.name.size());
  }
  return svg;
}

/// A line chart of byte series over images 1..n; `shade` images (warm-up)
/// shaded from the left.
std::string line_chart(const std::string& id, const std::string& title,
                       const std::vector<Series>& series, int shade) {
  std::size_t n = 0;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& s : series) {
    n = std::max(n, s.y.size());
    for (const double v : s.y) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  std::string svg = fmt::format(
      "<svg id=\"{}\" class=\"chart\" viewBox=\"0 0 {} {}\" role=\"img\" "
      "aria-label=\"{}\">\n<title>{}</title>\n",
      id, kWidth, kHeight, html_escape(title), html_escape(title));
  if (n == 0 || !std::isfinite(lo)) return svg + "</svg>\n";
  const ChartFrame frame(n, lo, hi);
  return svg + chart_axes(frame, shade) + chart_lines(frame, series) +
         "</svg>\n";
}

/// Grouped bars: per phase, its estimate and its measured working peak
/// (the largest over the images).
std::string estimate_chart(
    const std::vector<std::pair<std::string, std::pair<double, double>>>&
        rows) {
  const std::string title =
      "estimate against the measured working peak, per phase";
  std::string svg = fmt::format(
      "<svg id=\"estimate-vs-measured\" class=\"chart\" viewBox=\"0 0 {} {}\" "
      "role=\"img\" aria-label=\"{}\">\n<title>{}</title>\n",
      kWidth, kHeight, title, title);
  double hi = 1;
  for (const auto& [name, v] : rows) hi = std::max({hi, v.first, v.second});
  const double unit = byte_unit(hi);
  const double step = unit * nice_step(hi / unit, 4);
  const double top = std::ceil(hi / step) * step;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto y_of = [&](double v) { return kTop + ph * (1 - v / top); };
  for (double v = 0; v <= top + step / 2; v += step)
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\"/>"
        "<text class=\"tick\" x=\"{}\" y=\"{:.1f}\">{}</text>\n",
        kLeft, y_of(v), kWidth - kRight, y_of(v), kLeft - 6, y_of(v) + 4,
        format_bytes(Bytes(std::llround(v))));
  const double group = rows.empty() ? pw : pw / double(rows.size());
  const double bar = std::min(60.0, group / 3);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& [name, v] = rows[i];
    const double x = kLeft + group * double(i) + group / 2 - bar;
    for (int k = 0; k < 2; ++k) {
      const double value = k == 0 ? v.first : v.second;
      svg += fmt::format(
          "<rect class=\"bar {}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
          "height=\"{:.1f}\"><title>{} {}: {}</title></rect>\n",
          k == 0 ? "estimate" : "measured", x + bar * k, y_of(value), bar - 2,
          kTop + ph - y_of(value), html_escape(name),
          k == 0 ? "estimate" : "measured",
          format_bytes(Bytes(std::llround(value))));
    }
    svg +=
        fmt::format("<text class=\"xtick\" x=\"{:.1f}\" y=\"{}\">{}</text>\n",
                    x + bar, kHeight - kBottom + 16, html_escape(name));
  }
  svg += fmt::format(
      "<rect class=\"swatch estimate\" x=\"{}\" y=\"{}\" width=\"10\" "
      "height=\"10\"/><text class=\"legend\" x=\"{}\" y=\"{}\">estimate</text>"
      "<rect class=\"swatch measured\" x=\"{}\" y=\"{}\" width=\"10\" "
      "height=\"10\"/><text class=\"legend\" x=\"{}\" y=\"{}\">measured "
      "working peak (largest)</text>\n",
      kLeft + 8, kTop + 4, kLeft + 22, kTop + 13, kLeft + 100, kTop + 4,
      kLeft + 114, kTop + 13);
  return svg + "</svg>\n";
}

std::string bytes_cell(double bytes) {
  return format_bytes(Bytes(std::llround(std::max(0.0, bytes))));
}

constexpr const char* kStyle = R"(
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 920px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
.verdict { padding: 10px 14px; border-radius: 6px; font-weight: 600; }
.verdict.clean { background: #e6f4ea; } .verdict.leak { background: #fce8e6; }
.verdict.unknown { background: #fef7e0; }
table { border-collapse: collapse; margin: 8px 0; } td, th { padding: 3px 10px; border-bottom: 1px solid #ddd; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.chart { width: 100%; height: auto; background: #fafafa; border: 1px solid #e3e3e3; }
.grid { stroke: #e3e3e3; } .tick { font-size: 11px; text-anchor: end; fill: #555; }
.xtick { font-size: 11px; text-anchor: middle; fill: #555; } .xlabel { font-size: 12px; text-anchor: middle; }
.legend { font-size: 12px; } .warmup { fill: #f1f1f1; }
.series { fill: none; stroke-width: 1.8; }
.allocated { stroke: #1a73e8; fill: #1a73e8; } .reserved { stroke: #e37400; fill: #e37400; }
.host { stroke: #188038; fill: #188038; } .p0 { stroke: #1a73e8; fill: #1a73e8; }
.p1 { stroke: #d93025; fill: #d93025; } .p2 { stroke: #188038; fill: #188038; }
.p3 { stroke: #9334e6; fill: #9334e6; } .p4 { stroke: #e37400; fill: #e37400; }
polyline.series { fill: none; } .dashed { stroke-dasharray: 5 3; }
.bar.estimate { fill: #9aa0a6; } .bar.measured { fill: #1a73e8; }
.swatch.estimate { fill: #9aa0a6; } .swatch.measured { fill: #1a73e8; }
)";

}  // namespace

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

namespace {

std::string head(const MemoryProfile& p) {
  std::string h;
  h +=
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += fmt::format("<title>mold memory report: {}</title>\n",
                   html_escape(p.subject));
  h += std::string("<style>") + kStyle + "</style>\n</head>\n<body>\n";
  h += fmt::format(
      "<h1>Memory report</h1>\n<p id=\"subject\">{}<br>{}, {} "
      "image{}, driver {}</p>\n",
      html_escape(p.subject), html_escape(describe_sampling(p)),
      p.images.size(), p.images.size() == 1 ? "" : "s", html_escape(p.driver));
  return h;
}

/// The verdict first: what a person opens the file for.
std::string verdict_section(const LeakReport* leak,
                            const ParityReport* parity) {
  std::string h;
  h += "<section id=\"verdict\">\n";
  if (leak) {
    const char* klass = leak->verdict == LeakVerdict::leak ? "leak"
                        : leak->verdict == LeakVerdict::clean ||
                                leak->verdict == LeakVerdict::bounded
                            ? "clean"
                            : "unknown";
    h += fmt::format("<p class=\"verdict {}\">{}</p>\n", klass,
                     html_escape(leak->summary));
  }
  if (parity)
    h += fmt::format("<p class=\"verdict {}\">{}</p>\n",
                     !parity->ok       ? "leak"
                     : parity->carried ? "unknown"
                                       : "clean",
                     html_escape(parity->summary));
  h += "</section>\n";
  return h;
}

/// Memory after each image.
std::string memory_section(const MemoryProfile& p, int shade) {
  std::string h;
  Series allocated{"allocated", "allocated", {}},
      reserved{"reserved", "reserved", {}}, host{"host RSS", "host", {}};
  for (const auto& img : p.images) {
    allocated.y.push_back(double(img.after.allocated));
    reserved.y.push_back(double(img.after.reserved));
    host.y.push_back(double(img.after.host_rss));
  }
  h += "<h2>Memory after each image</h2>\n";
  h += line_chart("memory-per-image",
                  "device memory after each image's cleanup (warm-up shaded)",
                  {reserved, allocated}, shade);
  h += line_chart("host-per-image",
                  "the process's resident set after each image", {host}, shade);
  return h;
}

/// Each phase's peak per image, and its estimate against the largest.
std::string phase_section(const MemoryProfile& p, int shade) {
  std::string h;
  std::vector<std::string> phase_order;
  std::map<std::string, std::vector<double>> raw, unaccounted;
  std::map<std::string, std::pair<double, double>> est_vs_measured;
  std::map<std::pair<int, std::string>, int> seen;
  for (const auto& ph : p.phases) {
    const int k = seen[{ph.image, ph.phase}]++;
    const std::string name =
        k == 0 ? ph.phase : fmt::format("{} #{}", ph.phase, k + 1);
    if (!raw.count(name)) phase_order.push_back(name);
    raw[name].push_back(double(ph.after.peak_allocated));
    unaccounted[name].push_back(double(ph.unaccounted_peak()));
    auto& em = est_vs_measured[name];
    em.first = std::max(em.first, double(ph.estimate));
    em.second = std::max(em.second, double(ph.working_peak()));
  }
  if (phase_order.empty()) return h;
  std::vector<Series> peaks, beyond;
  for (std::size_t i = 0; i < phase_order.size(); ++i) {
    const std::string klass = fmt::format("p{}", i % 5);
    peaks.push_back({phase_order[i], klass, raw[phase_order[i]]});
    beyond.push_back(
        {phase_order[i], klass + " dashed", unaccounted[phase_order[i]]});
  }
  h += "<h2>Each phase's peak per image</h2>\n";
  h += line_chart("peak-per-phase", "each phase's peak, weights included",
                  peaks, shade);
  h += line_chart(
      "unaccounted-per-phase",
      "each phase's peak beyond the resident weights (what parity compares)",
      beyond, shade);
  std::vector<std::pair<std::string, std::pair<double, double>>> rows;
  for (const auto& name : phase_order)
    rows.push_back({name, est_vs_measured[name]});
  h += "<h2>Estimate against measured</h2>\n" + estimate_chart(rows);
  h += "<table "
       "id=\"estimates\"><tr><th>phase</th><th>estimate</th><th>largest "
       "working peak</th><th>ratio</th></tr>\n";
  for (const auto& [name, v] : rows)
    h += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{:.3f}</td></tr>\n",
        html_escape(name), bytes_cell(v.first), bytes_cell(v.second),
        v.second > 0 ? v.first / v.second : 0.0);
  h += "</table>\n";
  return h;
}

std::string leak_section(const LeakReport& leak) {
  std::string h;
  h += "<h2>Leak analysis</h2>\n<table id=\"series\"><tr><th>series</th><th>"
       "grows</th><th>slope per image</th><th>95% interval</th><th>R^2</th>"
       "<th>why</th></tr>\n";
  for (const SeriesVerdict* v : {&leak.allocated, &leak.reserved, &leak.host})
    h += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{} to {}</td><td "
        "class=\"num\">{:.2f}</td><td>{}</td></tr>\n",
        v->name, to_string(v->shape),
        (v->trend.slope < 0 ? "-" : "") + bytes_cell(std::abs(v->trend.slope)),
        (v->slope_low < 0 ? "-" : "") + bytes_cell(std::abs(v->slope_low)),
        (v->slope_high < 0 ? "-" : "") + bytes_cell(std::abs(v->slope_high)),
        v->trend.r_squared, html_escape(v->reason));
  h += "</table>\n";
  h += fmt::format("<p>warm-up: {} image{} excluded</p>\n", leak.warmup,
                   leak.warmup == 1 ? "" : "s");
  h += "<table id=\"attribution\"><tr><th>kept by</th><th>component</th>"
       "<th>per image</th><th>how</th><th>detail</th></tr>\n";
  for (const auto& a : leak.attributions)
    h += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td>"
        "<td>{}</td></tr>\n",
        a.phase.empty() ? "between phases" : html_escape(a.phase),
        html_escape(a.component), bytes_cell(a.bytes_per_image),
        a.exact ? "exact" : "inferred", html_escape(a.detail));
  if (leak.attributions.empty())
    h += "<tr><td colspan=\"5\">nothing kept</td></tr>\n";
  h += "</table>\n";
  h += "<table id=\"parked\"><tr><th>parked but holding</th><th>holds</th>"
       "<th>of its</th><th>how known</th></tr>\n";
  for (const auto& ph : leak.parked_holding)
    h += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td>{}</td></tr>\n",
        html_escape(ph.component), bytes_cell(double(ph.held)),
        bytes_cell(double(ph.bytes)),
        ph.exact ? "its load's allocations are still live"
                 : "its last park gave back less");
  if (leak.parked_holding.empty())
    h += "<tr><td colspan=\"4\">none</td></tr>\n";
  h += "</table>\n";
  return h;
}

std::string parity_section(const ParityReport& parity) {
  std::string h;
  h += "<h2>Parity with image 1</h2>\n<table id=\"parity\"><tr><th>phase</th>"
       "<th>image 1</th><th>allowed</th><th>worst</th><th>worst image</th>"
       "<th>ok</th></tr>\n";
  for (const auto& row : parity.phases)
    h += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td "
        "class=\"num\">{}</td><td>{}</td></tr>\n",
        html_escape(row.occurrence == 0
                        ? row.phase
                        : fmt::format("{} #{}", row.phase, row.occurrence + 1)),
        bytes_cell(double(row.first)), bytes_cell(double(row.allowed)),
        bytes_cell(double(row.worst)), row.worst_image + 1,
        !row.ok ? "BROKEN"
        : row.carried_in
            ? fmt::format("carried in {}, {}", bytes_cell(double(row.carried)),
                          row.carried_by_image < 0
                              ? std::string("by an earlier image")
                              : fmt::format("{} of {}",
                                            row.carried_by.empty()
                                                ? std::string("between phases")
                                                : html_escape(row.carried_by),
                                            carried_images(row)))
            : std::string("yes"));
  h += "</table>\n";
  return h;
}

}  // namespace

std::string profile_html(const MemoryProfile& p, const LeakReport* leak,
                         const ParityReport* parity) {
  std::string h;
  h.reserve(4096 + p.images.size() * 200);
  const int shade = leak ? leak->warmup : 0;
  h += head(p);
  h += verdict_section(leak, parity);
  h += memory_section(p, shade);
  h += phase_section(p, shade);
  if (leak) h += leak_section(*leak);
  if (parity) h += parity_section(*parity);
  h +=
      "<p><small>mold memory report, schema 1 (docs/profiler.md)</small></p>\n";
  h += "</body>\n</html>\n";
  return h;
}

}  // namespace mold
