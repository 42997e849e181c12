// libFuzzer target: layout detection and mapping (mold/catalog/
// weight_layout.hpp) over the tensors a hostile file lists. The input's first
// byte picks a GGUF architecture (or a safetensors file); the rest is parsed
// as a safetensors header whose entries become the listing. Every family
// layout this build has (compiled in: they are torch-free) is tried for every
// component. Each must detect nothing, refuse with a LayoutError, or make
// recipes that read only tensors the listing has, rows inside them, and
// results whose size agrees with their sources; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <mold/catalog/weight_layout.hpp>
#include <mold/tensor/float8.hpp>
#include <mold/tensor/tensor_listing.hpp>
#include <optional>
#include <string>
#include <vector>

#include "qwen_image_layouts.hpp"
#include "zimage_layouts.hpp"

namespace {

std::int64_t elements(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) __builtin_trap();
    if (d != 0 && n > INT64_MAX / d) __builtin_trap();
    n *= d;
  }
  return n;
}

void check(const mold::LayoutMapping& mapping,
           const mold::TensorListing& listing) {
  for (const auto& r : mapping.recipes) {
    std::int64_t from = 0;
    for (const auto& source : r.sources) {
      const mold::StoredTensor* t = listing.find(source);
      if (!t) __builtin_trap();
      from += elements(t->shape);
    }
    const std::int64_t made = elements(r.shape);
    switch (r.op) {
    case mold::TensorOp::copy:
    case mold::TensorOp::concat:
    case mold::TensorOp::stack:
      if (made != from) __builtin_trap();
      break;
    case mold::TensorOp::rows: {
      const mold::StoredTensor* t = listing.find(r.sources.front());
      if (r.row_begin < 0 || r.row_end < r.row_begin || r.row_end > t->rows() ||
          made > from)
        __builtin_trap();
      break;
    }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  if (size < 1) return 0;
  static const std::vector<mold::WeightLayout> layouts = [] {
    auto all = zimage::zimage_layouts();
    for (auto& l : qwen_image::qwen_image_layouts()) all.push_back(l);
    return all;
  }();
  static const char* const kArchitectures[] = {"lumina2", "qwen3", "qwen2vl",
                                               "clip",    "",      "llama"};
  mold::SafetensorsHeader header;
  try {
    header = mold::parse_safetensors_header(
        reinterpret_cast<const char*>(data + 1), size - 1, "input");
  } catch (const mold::SafetensorsError&) {
    return 0;
  }
  std::vector<mold::StoredTensor> tensors;
  for (const auto& [name, entry] : header.entries) {
    mold::StoredTensor t;
    t.name = name;
    t.shape = entry.shape;
    t.type = entry.dtype;
    t.bytes = entry.end - entry.begin;
    t.offset = entry.begin;
    tensors.push_back(std::move(t));
  }
  mold::TensorListing listing;
  const std::uint8_t mode = data[0];
  std::optional<std::string> gguf;
  if (mode & 1) gguf = kArchitectures[(mode >> 1) % 6];
  listing.add_file("input", gguf, std::move(tensors));
  // fp8 scales: either refused by name or each one attached to an fp8
  // weight whose rows it covers.
  try {
    listing.check_scales();
    for (const auto& t : listing.tensors())
      if (const mold::StoredTensor* scale = listing.scale_of(t))
        if (!mold::float8_format(t.type) ||
            (scale->elements() != 1 && scale->elements() != t.rows()))
          __builtin_trap();
  } catch (const mold::SafetensorsError&) {
    return 0;
  }
  for (const char* component : {"transformer", "vae", "text_encoder"}) {
    try {
      if (const auto mapping =
              mold::detect_layout(layouts, component, listing, component))
        check(*mapping, listing);
    } catch (const mold::LayoutError&) {
    }
    (void)mold::describe_layouts(layouts, component);
  }
  return 0;
}
