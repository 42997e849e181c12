#include "mold/estimate/workload.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "mold/base/bytes.hpp"
#include "mold/base/error.hpp"
#include "mold/estimate/arch_names.hpp"

namespace mold {

namespace {
constexpr std::array<std::pair<std::string_view, Bytes>, 12> kDtypes{{
    {"float32", 4},
    {"float", 4},
    {"float16", 2},
    {"half", 2},
    {"bfloat16", 2},
    {"float8_e4m3fn", 1},
    {"float8_e5m2", 1},
    {"float64", 8},
    {"int8", 1},
    {"uint8", 1},
    {"int32", 4},
    {"int64", 8},
}};
constexpr std::array<std::string_view, 3> kComputeDtypes{"float32", "float16",
                                                         "bfloat16"};
}  // namespace

bool is_compute_dtype(std::string_view dtype) {
  for (const auto& name : kComputeDtypes)
    if (name == dtype) return true;
  return false;
}

std::string compute_dtype_names() {
  return fmt::format("{}, {} or {}", kComputeDtypes[0], kComputeDtypes[1],
                     kComputeDtypes[2]);
}

Bytes dtype_size(std::string_view dtype) {
  for (const auto& [name, size] : kDtypes)
    if (name == dtype) return size;
  std::string known;
  for (const auto& [name, size] : kDtypes)
    known += (known.empty() ? "" : ", ") + std::string(name);
  throw ParseError(
      fmt::format("unknown dtype '{}': use one of {}", dtype, known));
}

std::string Workload::describe() const {
  std::string text = fmt::format("{} {} on {}, {}x{} {}, batch {}", family, op,
                                 backend, height, width, dtype, batch);
  if (frames != 1) text += fmt::format(", {} frames", frames);
  if (tile > 0) text += fmt::format(", tile {} latent", tile);
  if (attention_bound > 0)
    text += fmt::format(", attention in chunks of {}",
                        format_bytes(attention_bound));
  if (tokens > 0) text += fmt::format(", {} tokens", tokens);
  if (arch != archs::kDefault) text += fmt::format(", arch {}", arch);
  if (threads != 1) text += fmt::format(", {} threads", threads);
  if (quantized) text += ", quantized weights";
  if (!images.empty()) {
    text += fmt::format(", {} input image{}", images.size(),
                        images.size() == 1 ? "" : "s");
    for (std::size_t i = 0; i < images.size(); ++i)
      text += fmt::format("{}{}x{}", i ? ", " : " ", images[i].height,
                          images[i].width);
  }
  return text;
}

void Workload::validate() const {
  auto require_name = [](const std::string& value, const char* field) {
    if (value.empty())
      throw InvalidArgument(
          fmt::format("workload {} is empty: name one", field));
  };
  require_name(family, "family");
  require_name(op, "op");
  require_name(backend, "backend");
  auto require_range = [](int value, const char* field, int low, int high) {
    if (value < low || value > high)
      throw InvalidArgument(
          fmt::format("workload {} is {}: it must be from {} to {}", field,
                      value, low, high));
  };
  require_range(width, "width", 1, kMaxImageSide);
  require_range(height, "height", 1, kMaxImageSide);
  require_range(batch, "batch", 1, kMaxBatch);
  require_range(frames, "frames", 1, kMaxFrames);
  require_range(threads, "threads", 1, kMaxThreads);
  if (tile < 0 || tile > kMaxTile)
    throw InvalidArgument(fmt::format(
        "workload tile is {}: use 0 (whole image) or a latent size from 1 to "
        "{}",
        tile, kMaxTile));
  if (tokens < 0 || tokens > kMaxTokens)
    throw InvalidArgument(fmt::format(
        "workload tokens is {}: it must be from 0 to {}", tokens, kMaxTokens));
  if (images.size() > std::size_t(kMaxInputImages))
    throw InvalidArgument(
        fmt::format("workload has {} input images: at most {}", images.size(),
                    kMaxInputImages));
  for (std::size_t i = 0; i < images.size(); ++i) {
    const std::string field = fmt::format("images[{}]", i);
    require_range(images[i].width, (field + ".width").c_str(), 1,
                  kMaxImageSide);
    require_range(images[i].height, (field + ".height").c_str(), 1,
                  kMaxImageSide);
  }
  dtype_size(dtype);
}

}  // namespace mold
