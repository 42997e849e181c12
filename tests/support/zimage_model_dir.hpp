#pragma once
// A Z-Image model directory in the published (diffusers) layout with tiny
// configs, its weights seeded as `mold run --tiny` seeds them: for the tests
// of loading, estimates and calibration from a model directory.

#include <filesystem>
#include <mold/catalog/model_family.hpp>

namespace mold::test {

/// The widths of a model directory's text encoder and transformer; the
/// defaults are the tiny built-ins'.
struct ZImageWidths {
  int text_hidden = 32, text_intermediate = 64, text_heads = 4, text_kv = 2,
      text_head_dim = 8;
  int dit_heads = 2;  // the transformer's dim is heads x 32 (the RoPE axes)
};

/// Writes DIR = root/z-image-turbo (model_index.json, the scheduler, text
/// encoder, transformer and VAE configs and weights, the tokenizer files):
/// each component's weights seeded with seed 0 + 1, 2, 3; with the default
/// widths, the tiny architecture. Returns DIR.
std::filesystem::path make_zimage_model_dir(
    const ModelFamily& family, const std::filesystem::path& root,
    const std::filesystem::path& tokenizer_json,
    const ZImageWidths& widths = {});

}  // namespace mold::test
