#pragma once
/// Planted memory patterns as profiles, without a model: a pipeline of
/// three phases (text_encode, denoise, vae_decode) over resident weights,
/// whose phases allocate and keep bytes as a pattern says (a leak of some
/// shape, a bounded cache that fills or wanders, a transient, a stash
/// carried into the next image). The simulator keeps the live allocations
/// with the image and phase that made them, so the profile it records has
/// what a backend that attributes allocations would report (residue per
/// scope), or not (`attributed` false: a cuda-like backend). For the
/// profiler's tests and its precision benchmark (bench/leak_precision_bench).

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "mold/profile/memory_profile.hpp"

namespace mold::test {

/// The live allocations of a planted run.
class PlantedHeap {
 public:
  struct Block {
    int id = 0;
    int image = 0;
    std::string phase;
    Bytes bytes = 0;
  };
  int allocate(int image, const std::string& phase, Bytes bytes) {
    blocks_.push_back({next_, image, phase, bytes});
    return next_++;
  }
  void free(int id) {
    blocks_.erase(std::remove_if(blocks_.begin(), blocks_.end(),
                                 [&](const Block& b) { return b.id == id; }),
                  blocks_.end());
  }
  Bytes live() const {
    Bytes total = 0;
    for (const auto& b : blocks_) total += b.bytes;
    return total;
  }
  const std::vector<Block>& blocks() const { return blocks_; }

 private:
  std::vector<Block> blocks_;
  int next_ = 1;
};

/// What a pattern does in one phase of one image (`rng` seeded per run).
using PlantedStep =
    std::function<void(int image, const std::string& phase, PlantedHeap& heap,
                       std::mt19937_64& rng)>;

struct PlantedOptions {
  int images = 12;
  std::uint64_t seed = 0;
  bool attributed = true;  ///< residue per scope, as the cpu backend gives
  Bytes weights = 64 * kMiB;
  /// Each phase's working memory (freed at its end), and the host's RSS with
  /// a few pages of jitter per image.
  Bytes working = 8 * kMiB;
  Bytes host_rss = 900 * kMiB;
};

inline MemoryProfile planted_profile(const PlantedStep& step,
                                     const PlantedOptions& o) {
  MemoryProfile p;
  p.driver = "local";
  p.subject = "planted pattern";
  p.backend = o.attributed ? "cpu" : "cuda";
  p.device = "simulated";
  std::mt19937_64 rng(o.seed * 0x9E3779B97F4A7C15ull + 12345);
  std::uniform_int_distribution<int> pages(-8, 8);
  PlantedHeap heap;
  CacheEntryState weights;
  weights.name = "model";
  weights.bytes = o.weights;
  weights.residency = Residency::device;
  for (int image = 0; image < o.images; ++image) {
    for (const char* phase : {"text_encode", "denoise", "vae_decode"}) {
      // The pipeline's own work between phases (phase ""): after the encode.
      if (std::string(phase) == "denoise") step(image, "", heap, rng);
      PhaseSample s;
      s.image = image;
      s.phase = phase;
      s.component = "model";
      s.before.allocated = o.weights + heap.live();
      s.after.peak_allocated = s.before.allocated + o.working;
      step(image, phase, heap, rng);
      s.after.allocated = o.weights + heap.live();
      s.after.peak_allocated =
          std::max(s.after.peak_allocated, s.after.allocated);
      s.after.reserved = s.after.allocated;
      s.after.host_rss = o.host_rss;
      s.residency = {weights};
      p.phases.push_back(s);
    }
    ImageSample img;
    img.image = image;
    img.seed = o.seed + std::uint64_t(image);
    img.after.allocated = img.after.reserved = o.weights + heap.live();
    img.after.peak_allocated = img.after.allocated + o.working;
    img.after.host_rss = o.host_rss + Bytes(4096 * (64 + pages(rng)));
    img.residency = {weights};
    img.attributed = o.attributed;
    if (o.attributed) {
      img.residue.push_back({0, "", "model", "load", o.weights});
      for (const auto& b : heap.blocks())
        img.residue.push_back({b.image, b.phase, b.phase.empty() ? "" : "model",
                               b.phase.empty() ? "between_phases" : "phase",
                               b.bytes});
    }
    p.images.push_back(std::move(img));
  }
  return p;
}

/// A pattern's building blocks (phase "" is the pipeline's own work between
/// the encode and the denoise).
namespace planted {

/// `phase` keeps `bytes` every `every`-th image from image `start` on
/// (offset: the first image that keeps, modulo `every`).
inline PlantedStep leak(std::string phase, Bytes bytes, int every = 1,
                        int start = 0, int offset = 0) {
  return [=](int image, const std::string& ph, PlantedHeap& heap,
             std::mt19937_64&) {
    if (ph == phase && image >= start && (image - offset) % every == 0)
      heap.allocate(image, ph, bytes);
  };
}

/// `phase` keeps `bytes` every image until image `stop`, then no more (a
/// cache that filled: bounded).
inline PlantedStep leak_until(std::string phase, Bytes bytes, int stop) {
  return [=](int image, const std::string& ph, PlantedHeap& heap,
             std::mt19937_64&) {
    if (ph == phase && image < stop) heap.allocate(image, ph, bytes);
  };
}

/// `phase` replaces one buffer by a larger one every image: (image + 1) x
/// `bytes` (a history concatenated onto: a leak that lives in the newest
/// image's allocation).
inline PlantedStep growing_buffer(std::string phase, Bytes bytes) {
  auto held = std::make_shared<int>(0);
  return [=](int image, const std::string& ph, PlantedHeap& heap,
             std::mt19937_64&) {
    if (ph != phase) return;
    const int next = heap.allocate(image, ph, Bytes(image + 1) * bytes);
    if (*held) heap.free(*held);
    *held = next;
  };
}

/// `phase` keeps a random 'low'..'high' bytes every image (a leak whose
/// size varies).
inline PlantedStep jittered_leak(std::string phase, Bytes low, Bytes high) {
  return [=](int image, const std::string& ph, PlantedHeap& heap,
             std::mt19937_64& rng) {
    if (ph != phase) return;
    heap.allocate(image, ph,
                  std::uniform_int_distribution<Bytes>(low, high)(rng));
  };
}

/// A cache of `capacity` entries keyed by the image's seed (a new key every
/// image), each 'low'..'high' bytes; the oldest is evicted past capacity.
inline PlantedStep lru(std::string phase, int capacity, Bytes low, Bytes high) {
  auto entries = std::make_shared<std::vector<int>>();
  return [=](int image, const std::string& ph, PlantedHeap& heap,
             std::mt19937_64& rng) {
    if (ph != phase) return;
    entries->push_back(heap.allocate(
        image, ph, std::uniform_int_distribution<Bytes>(low, high)(rng)));
    while (int(entries->size()) > capacity) {
      heap.free(entries->front());
      entries->erase(entries->begin());
    }
  };
}

/// `phase` keeps `bytes` on every other image, freed by the next image's
/// same phase (an oscillation, bounded).
inline PlantedStep oscillation(std::string phase, Bytes bytes) {
  auto held = std::make_shared<int>(0);
  return [=](int image, const std::string& ph, PlantedHeap& heap,
             std::mt19937_64&) {
    if (ph != phase) return;
    if (*held) {
      heap.free(*held);
      *held = 0;
    } else if (image % 2 == 0) {
      *held = heap.allocate(image, ph, bytes);
    }
  };
}

/// `keeper` stashes `bytes` every image; the next image's `freer` frees it
/// (memory carried from one image into the next, bounded).
inline PlantedStep stash(std::string keeper, std::string freer, Bytes bytes) {
  auto held = std::make_shared<std::vector<int>>();
  return [=](int image, const std::string& ph, PlantedHeap& heap,
             std::mt19937_64&) {
    if (ph == freer) {
      // Only what earlier images stashed.
      for (auto it = held->begin(); it != held->end();) {
        const auto& blocks = heap.blocks();
        const auto b = std::find_if(blocks.begin(), blocks.end(),
                                    [&](const auto& x) { return x.id == *it; });
        if (b != blocks.end() && b->image < image) {
          heap.free(*it);
          it = held->erase(it);
        } else {
          ++it;
        }
      }
    }
    if (ph == keeper) held->push_back(heap.allocate(image, ph, bytes));
  };
}

/// Several patterns at once.
inline PlantedStep all(std::vector<PlantedStep> steps) {
  return [=](int image, const std::string& ph, PlantedHeap& heap,
             std::mt19937_64& rng) {
    for (const auto& s : steps) s(image, ph, heap, rng);
  };
}

}  // namespace planted

}  // namespace mold::test
