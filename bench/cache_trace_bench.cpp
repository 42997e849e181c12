// Replays a trace of model-component requests (a day of image generation across
// Qwen-Image, Qwen-Image-Edit-2511 and Z-Image-Turbo, their variants and
// resolutions) through the ModelCache under each eviction policy, on simulated
// cards of 24, 48 and 80 GiB, and prints the bytes (and modelled seconds)
// reloaded per policy side by side with Belady's offline policy (evict the
// component needed furthest in the future) and with the compulsory lower bound
// (every component loaded once).
//
//   ./build/bin/cache_trace_bench [images] [seed]

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <mold/cache/cache.hpp>
#include <mold/cache/simulated_backend.hpp>
#include <mold/plugin/plugin_loader.hpp>
#include <mold/plugin/registry.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

using mold::Bytes;

struct Request {
  std::string component;
  Bytes working = 0;
};

struct Component {
  std::string name;
  Bytes bytes;
};

// Modelled reload time: a fixed 0.5 s (open, allocate, build) plus bytes at 2
// GB/s from host memory or a fast disk.
double reload_seconds(Bytes bytes) { return 0.5 + double(bytes) / 2e9; }

struct Workflow {
  std::string family, model, variant;
  bool edit;
  std::string text_encoder, vae;
};

/// The trace: images in sessions; each session sticks to one model variant and
/// a few resolutions; models are chosen with Zipf-like popularity.
std::vector<Request> make_trace(const mold::Registry& registry, int images,
                                unsigned seed,
                                std::vector<Component>& components) {
  std::mt19937 rng(seed);
  std::map<std::string, Bytes> sizes;
  std::vector<Workflow> workflows;
  for (const auto* family : registry.families()) {
    for (const auto& model : family->models) {
      for (const auto& variant : model.variants) {
        Workflow w{family->name, model.name,
                   variant.name, model.name.find("edit") != std::string::npos,
                   "",           ""};
        for (const auto& c : variant.components) {
          // The text encoder and the VAE are the same weights across a family's
          // models and variants; the transformer is the model variant's own.
          std::string key =
              c.name == "transformer"
                  ? model.name + ":" + variant.name + "/transformer"
                  : family->name + "/" + c.name;
          sizes[key] = c.bytes;
          if (c.name == "text_encoder") w.text_encoder = key;
          if (c.name == "vae") w.vae = key;
        }
        workflows.push_back(w);
      }
    }
  }
  for (const auto& [name, bytes] : sizes) components.push_back({name, bytes});

  std::vector<double> weights;
  for (std::size_t i = 0; i < workflows.size(); ++i)
    weights.push_back(1.0 / double(i + 1));
  std::discrete_distribution<std::size_t> pick_workflow(weights.begin(),
                                                        weights.end());
  const std::vector<std::pair<int, int>> resolutions{
      {1024, 1024}, {1328, 1328}, {1664, 928},
      {928, 1664},  {1248, 832},  {2048, 2048}};
  std::discrete_distribution<std::size_t> pick_resolution(
      {30, 20, 15, 10, 20, 5});
  std::geometric_distribution<int> session_length(0.25);

  std::vector<Request> trace;
  int made = 0;
  while (made < images) {
    const Workflow& w = workflows[pick_workflow(rng)];
    const auto [width, height] = resolutions[pick_resolution(rng)];
    const int count = 1 + session_length(rng);
    for (int i = 0; i < count && made < images; ++i, ++made) {
      mold::Workload load;
      load.family = w.family;
      load.model = w.model + ":" + w.variant;
      load.backend = "cuda";
      load.dtype = "bfloat16";
      load.width = width;
      load.height = height;
      auto estimate = [&](const char* op) {
        load.op = op;
        return registry.estimate(load).bytes;
      };
      const std::string transformer =
          w.model + ":" + w.variant + "/transformer";
      trace.push_back({w.text_encoder, 1 * mold::kGiB});
      if (w.edit) trace.push_back({w.vae, estimate("vae_encode")});
      // Denoising working memory: an assumption of this bench (mold has no
      // denoise estimator yet): 2 GiB plus 1 KiB per pixel.
      trace.push_back(
          {transformer, 2 * mold::kGiB + Bytes(width) * height * 1024});
      trace.push_back({w.vae, estimate("vae_decode")});
    }
  }
  return trace;
}

struct Cost {
  Bytes bytes = 0;
  double seconds = 0;
  std::size_t loads = 0;
  std::size_t refused = 0;  // requests that cannot fit even on an empty card
};

Cost replay(const std::vector<Request>& trace,
            const std::vector<Component>& components, Bytes capacity,
            mold::EvictionPolicy policy) {
  auto gpu =
      std::make_shared<mold::SimulatedBackend>("simulated GPU", capacity);
  mold::ModelCache cache(gpu, {policy, 0});
  std::map<std::string, Bytes> size;
  for (const auto& c : components) {
    auto part = std::make_shared<mold::SimulatedComponent>(
        c.name, c.bytes, reload_seconds(c.bytes));
    cache.add(part);
    size[c.name] = c.bytes;
  }
  Cost cost;
  for (const auto& r : trace) {
    try {
      auto lease = cache.acquire(r.component, r.working);
    } catch (const mold::InsufficientMemory&) {
      ++cost.refused;
    }
  }
  for (const auto& e : cache.entries()) {
    cost.loads += e.loads;
    cost.bytes += e.loads * e.bytes;
    cost.seconds += double(e.loads) * reload_seconds(e.bytes);
  }
  return cost;
}

/// Belady's offline policy under the same make-room rule as the cache: evict,
/// until the request fits, the resident component whose next use is furthest
/// away.
Cost replay_belady(const std::vector<Request>& trace,
                   const std::vector<Component>& components, Bytes capacity) {
  std::map<std::string, Bytes> size;
  for (const auto& c : components) size[c.name] = c.bytes;
  // next_use[i]: the index of the next request for trace[i].component after i.
  std::vector<std::size_t> next_use(trace.size(), trace.size());
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = trace.size(); i-- > 0;) {
    auto it = seen.find(trace[i].component);
    next_use[i] = it == seen.end() ? trace.size() : it->second;
    seen[trace[i].component] = i;
  }
  std::map<std::string, std::size_t> resident;  // component -> its next use
  Bytes used = 0;
  Cost cost;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const auto& r = trace[i];
    const bool hit = resident.count(r.component) > 0;
    const Bytes needed = r.working + (hit ? 0 : size[r.component]);
    if (r.working + size[r.component] > capacity) {  // cannot fit even alone
      ++cost.refused;
      continue;
    }
    while (capacity - used < needed) {
      auto victim = resident.end();
      for (auto it = resident.begin(); it != resident.end(); ++it)
        if (it->first != r.component &&
            (victim == resident.end() || it->second > victim->second))
          victim = it;
      if (victim == resident.end()) break;
      used -= size[victim->first];
      resident.erase(victim);
    }
    if (!hit) {
      used += size[r.component];
      ++cost.loads;
      cost.bytes += size[r.component];
      cost.seconds += reload_seconds(size[r.component]);
    }
    resident[r.component] = next_use[i];
  }
  return cost;
}

}  // namespace

int main(int argc, char** argv) {
  const int images = argc > 1 ? std::stoi(argv[1]) : 2000;
  const unsigned seed = argc > 2 ? unsigned(std::stoul(argv[2])) : 2026;
  mold::Registry registry;
  mold::PluginLoader(registry).load_directory(mold::installed_plugin_dir());
  if (!registry.load_errors().empty()) {
    std::cerr << "cache_trace_bench: " << registry.load_errors().front().message
              << "\n";
    return 1;
  }
  std::vector<Component> components;
  const auto trace = make_trace(registry, images, seed, components);
  std::set<std::string> used;
  Bytes compulsory_bytes = 0;
  double compulsory_seconds = 0;
  for (const auto& r : trace) used.insert(r.component);
  for (const auto& c : components)
    if (used.count(c.name)) {
      compulsory_bytes += c.bytes;
      compulsory_seconds += reload_seconds(c.bytes);
    }
  std::cout << fmt::format(
      "trace: {} images, {} requests, {} components (seed {})\n", images,
      trace.size(), components.size(), seed);
  for (const Bytes capacity :
       {24 * mold::kGiB, 48 * mold::kGiB, 80 * mold::kGiB}) {
    const Cost belady = replay_belady(trace, components, capacity);
    std::cout << fmt::format(
        "\ncapacity {}: compulsory lower bound {:.1f} GB ({:.0f} s)\n",
        mold::format_bytes(capacity), compulsory_bytes / 1e9,
        compulsory_seconds);
    std::cout << fmt::format("  {:<18} {:>7} {:>12} {:>9} {:>10} {:>9} {:>8}\n",
                             "policy", "loads", "reloaded GB", "x Belady",
                             "reload s", "x Belady", "refused");
    auto row = [&](const std::string& name, const Cost& c) {
      std::cout << fmt::format(
          "  {:<18} {:>7} {:>12.1f} {:>9.3f} {:>10.0f} {:>9.3f} {:>8}\n", name,
          c.loads, c.bytes / 1e9, double(c.bytes) / double(belady.bytes),
          c.seconds, c.seconds / belady.seconds, c.refused);
    };
    row("belady (offline)", belady);
    for (auto policy :
         {mold::EvictionPolicy::lru, mold::EvictionPolicy::smallest_first,
          mold::EvictionPolicy::greedy_dual_size})
      row(std::string(mold::to_string(policy)),
          replay(trace, components, capacity, policy));
  }
  return 0;
}
