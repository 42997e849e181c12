#include "mold/plugin/oom_advice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "mold/base/error.hpp"
#include "mold/plugin/registry.hpp"

namespace mold {

namespace {

bool is_remote(const OomReport& r) {
  return r.origin.kind == Origin::Kind::remote;
}

std::string device_of(const OomReport& r) {
  return !r.origin.device_name.empty() ? r.origin.device_name : r.device;
}

/// "on the server (gpu-box:7680)" or "on this machine".
std::string where(const OomReport& r) {
  return is_remote(r) ? fmt::format("on the server ({})", r.origin.host)
                      : "on this machine";
}

std::string op_noun(const std::string& op) {
  if (op == ops::kVaeDecode) return "decode";
  if (op == ops::kVaeEncode) return "encode";
  if (op == ops::kDenoise) return "denoising step";
  if (op == ops::kTextEncode) return "text encoding";
  return op;
}

std::optional<Estimate> try_estimate(const Registry& registry,
                                     const Workload& w) {
  try {
    return registry.estimate(w);
  } catch (const Error&) {
    return std::nullopt;
  }
}

/// The largest size, a multiple of 64 with the same aspect, whose estimate fits
/// `budget`.
std::optional<std::pair<int, int>> fitting_size(const Registry& registry,
                                                Workload w, Bytes budget) {
  const auto full = try_estimate(registry, w);
  if (!full || full->bytes == 0) return std::nullopt;
  double scale = std::sqrt(double(budget) / double(full->bytes));
  for (int attempt = 0; attempt < 8 && scale > 0; ++attempt, scale *= 0.9) {
    const int width = int(w.width * scale) / 64 * 64;
    const int height = int(w.height * scale) / 64 * 64;
    if (width < 256 || height < 256) return std::nullopt;
    Workload smaller = w;
    smaller.width = width;
    smaller.height = height;
    const auto e = try_estimate(registry, smaller);
    if (e && e->bytes <= budget) return std::make_pair(width, height);
  }
  return std::nullopt;
}

void add(std::vector<std::string>& hints, std::string hint) {
  if (!hint.empty() &&
      std::find(hints.begin(), hints.end(), hint) == hints.end())
    hints.push_back(std::move(hint));
}

}  // namespace

std::string backend_display_name(std::string_view backend) {
  if (backend == "cuda") return "CUDA";
  if (backend == "rocm" || backend == "hip") return "ROCm";
  if (backend == "metal") return "Metal";
  if (backend == "mps") return "MPS";
  if (backend == "cpu") return "CPU";
  if (backend == "xpu") return "XPU";
  if (backend == "vulkan") return "Vulkan";
  if (backend.empty() || backend == "unknown") return "unknown backend";
  return std::string(backend);
}

std::string oom_label(const OomReport& r) {
  const std::string backend = backend_display_name(r.backend);
  const std::string device = device_of(r);
  if (is_remote(r)) {
    std::string what = backend;
    if (!device.empty()) what += ", " + device;
    return fmt::format(
        "Remote server out of memory on {} ({})",
        r.origin.host.empty() ? "an unnamed host" : r.origin.host, what);
  }
  const std::string subject = r.backend.empty() || r.backend == "unknown"
                                  ? "Out of memory"
                                  : backend + " out of memory";
  return device.empty() ? subject : fmt::format("{} on {}", subject, device);
}

std::vector<std::string> advise(const Registry& registry, const OomReport& r,
                                const Workload* workload) {
  std::vector<std::string> hints;
  const bool remote = is_remote(r);
  const std::string on = where(r);

  std::optional<Estimate> estimate;
  if (workload) estimate = try_estimate(registry, *workload);
  if (estimate) {
    if (r.free)
      add(hints,
          fmt::format("this {} needs ~{} of working memory; {} is free {}",
                      op_noun(workload->op), format_bytes(estimate->bytes),
                      format_bytes(*r.free), on));
    else
      add(hints,
          fmt::format("this {} needs ~{} of working memory",
                      op_noun(workload->op), format_bytes(estimate->bytes)));
  }

  if (remote) {
    add(hints,
        fmt::format(
            "the error happened {}, on its {}{}, not on this machine: settings "
            "of this machine's GPU do not help",
            on, backend_display_name(r.backend),
            device_of(r).empty() ? "" : " (" + device_of(r) + ")"));
    // A client may send one request per image (the incident in
    // docs/incidents.md did): a batch of 1 here does not mean the user ran one.
    if (workload && workload->batch > 1)
      add(hints,
          fmt::format(
              "reduce --batch (now {}); if earlier images of the batch fit, "
              "memory grew between requests on the server",
              workload->batch));
    else
      add(hints,
          "if this was one image of a --batch, reduce --batch; if earlier "
          "images fit, memory grew between requests on the server");
  }

  // What only the backend knows (CUDA's allocator settings, ROCm's eviction,
  // MPS's cap), from its plugin; the core keeps a backend-neutral word on
  // fragmentation for backends that registered no advice.
  for (auto& h : registry.backend_hints(r, workload)) add(hints, std::move(h));
  if (r.fragmentation && r.reserved_unallocated &&
      !registry.has_backend_hints(r.backend))
    add(hints,
        fmt::format("{} is held by the allocator but unused (fragmentation): "
                    "free its cache between operations",
                    format_bytes(*r.reserved_unallocated)));
  if (r.other_processes && r.capacity && *r.other_processes * 10 >= *r.capacity)
    add(hints,
        fmt::format(
            "{} of the device is used by other processes {}: stop them or "
            "move them to another device",
            format_bytes(*r.other_processes), on));

  const ModelFamily* family =
      workload ? registry.family(workload->family) : nullptr;
  auto add_family_hints = [&] {
    if (!family) return;
    add(hints, smaller_variant_hint(*family, workload->model));
    if (family->hints)
      for (auto& h : family->hints(r, *workload)) add(hints, std::move(h));
  };
  if (remote) {
    add_family_hints();
    add(hints,
        "free memory on the server: unload other models resident there, or "
        "restart "
        "its mold serve");
    add(hints, "or run on this machine instead with --local");
    return hints;
  }

  if (workload && estimate && r.free && estimate->bytes > *r.free) {
    if (auto size = fitting_size(registry, *workload, *r.free))
      add(hints,
          fmt::format(
              "lower the resolution: --width {} --height {} fits the {} free",
              size->first, size->second, format_bytes(*r.free)));
  } else if (workload) {
    add(hints, fmt::format("lower the resolution (now {}x{})", workload->width,
                           workload->height));
  }
  if (workload &&
      (workload->op == ops::kVaeDecode || workload->op == ops::kVaeEncode) &&
      workload->tile == 0) {
    Workload tiled = *workload;
    tiled.tile = 64;
    if (auto tile = try_estimate(registry, tiled);
        tile && estimate && tile->bytes < estimate->bytes)
      add(hints,
          fmt::format("{} in tiles of 64 latents (512 px): one tile needs ~{}",
                      op_noun(workload->op), format_bytes(tile->bytes)));
  }
  add_family_hints();
  if (workload &&
      (workload->op == ops::kDenoise || workload->op == ops::kTextEncode))
    add(hints,
        "offload idle components to the CPU (the text encoder while denoising, "
        "the "
        "transformer while encoding text)");
  if (!workload)
    add(hints,
        "lower the resolution or the batch, or use a smaller model variant");
  return hints;
}

}  // namespace mold
