#pragma once
// How mold run writes the images it makes: PNGs whose text chunks say how
// each was made (tools/mold/output_path.hpp names them).

#include <ATen/ATen.h>

#include <cstdint>
#include <filesystem>
#include <mold/runtime/pipeline.hpp>
#include <mold/runtime/png.hpp>
#include <string>
#include <vector>

namespace mold_cli {

/// The text chunks of an image: prompt, seed, model, variant, steps, width,
/// height, guidance, seeded_weights, weights, Software (and negative_prompt).
/// `request` is resolved (the model's defaults filled in).
std::vector<mold::PngText> png_text(const mold::Pipeline& pipeline,
                                    const mold::GenerateRequest& request,
                                    std::uint64_t seed);

/// (3, H, W) uint8 RGB as PNG bytes with `text` chunks.
std::string encode_image(const at::Tensor& rgb,
                         const std::vector<mold::PngText>& text);

/// Writes (3, H, W) uint8 RGB as a PNG with `text` chunks.
void write_image(const std::filesystem::path& path, const at::Tensor& rgb,
                 const std::vector<mold::PngText>& text);

}  // namespace mold_cli
