// The Qwen2.5-VL text encoder of Qwen-Image: the published checkpoint's
// names and shapes (with and without the vision tower), lm_head and a
// text-to-image model's vision tensors skipped on load, padding, images in a
// prompt (their tokens, positions and checks), config.json parsing. Parity
// with transformers is measured outside the repository (see the issue's
// report).
#include "qwen25vl_text_encoder.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/tensor/safetensors.hpp>
#include <mold/tensor/weight_set.hpp>

#include "support/aten_for_tests.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/state_dict_listing.hpp"

using namespace mold;
using qwen_image::Qwen25VLTextEncoder;
using qwen_image::VisionImage;

namespace {

std::unique_ptr<Qwen25VLTextEncoder> tiny(bool vision, std::uint64_t seed) {
  auto model =
      qwen_image::make_qwen25vl_text_encoder(ArchSpec::parse("tiny"), vision);
  model->init_from_seed(seed);
  return model;
}

double relative_l2(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).norm().item<double>() /
         std::max(b.norm().item<double>(), 1e-30);
}

VisionImage image_of(int64_t h, int64_t w) {
  VisionImage image;
  image.grid_h = h;
  image.grid_w = w;
  image.pixel_values = at::randn({h * w, 3 * 2 * 14 * 14});
  return image;
}

/// text ids, then vision_start, `n` image tokens, vision_end, more text.
at::Tensor prompt_with_image(int64_t n) {
  std::vector<int64_t> ids{151644, 872, 198, 151652};
  ids.insert(ids.end(), std::size_t(n), 151655);
  for (int64_t id : {151653, 3838, 374, 419, 151645}) ids.push_back(id);
  return at::tensor(ids, at::kLong).unsqueeze(0);
}

}  // namespace

TEST_CASE(
    "the Qwen2.5-VL text encoder declares the published checkpoint's names "
    "and shapes",
    "[text_encoder][qwen_image]") {
  auto expected = mold::test::read_state_dict_listing(
      "qwen25vl_text_encoder_state_dict.tsv");
  REQUIRE(expected.erase("lm_head.weight") == 1);  // stored, unused
  const auto with_vision =
      qwen_image::make_qwen25vl_text_encoder(ArchSpec::parse("default"), true);
  mold::test::ShapeMap got;
  for (const auto& [name, t] : with_vision->parameters())
    got[name] = t.sizes().vec();
  mold::test::check_same_state_dict(expected, got);
  CHECK(with_vision->parameter_count() == 8292166656 - 152064LL * 3584);
  CHECK(with_vision->unused_tensor("lm_head.weight"));
  CHECK_FALSE(with_vision->unused_tensor("visual.merger.mlp.0.bias"));

  const auto text_only =
      qwen_image::make_qwen25vl_text_encoder(ArchSpec::parse("default"), false);
  CHECK(text_only->parameter_count() ==
        8292166656 - 152064LL * 3584 - 676550144);
  CHECK(text_only->unused_tensor("visual.merger.mlp.0.bias"));
  // The published config.json builds the same model.
  const auto from_file = qwen_image::make_qwen25vl_text_encoder(
      ArchSpec::from_config(std::string(mold::test::kDataDir) +
                            "/qwen_image_text_encoder_config.json"),
      true);
  CHECK(from_file->parameter_count() == with_vision->parameter_count());
}

TEST_CASE(
    "a text-to-image encoder loads a full Qwen2.5-VL checkpoint without "
    "warnings",
    "[text_encoder][qwen_image]") {
  mold::test::TempDir dir;
  const auto full = tiny(true, 3);
  std::vector<std::pair<std::string, at::Tensor>> tensors(
      full->parameters().begin(), full->parameters().end());
  tensors.emplace_back("lm_head.weight", at::zeros({152064, 64}));
  const std::string file = dir.path() + "/model.safetensors";
  mold::save_safetensors(file, tensors);
  const auto weights = WeightSet::open(file);
  auto text_only =
      qwen_image::make_qwen25vl_text_encoder(ArchSpec::parse("tiny"), false);
  const LoadReport report =
      text_only->load(weights, c10::Device(c10::kCPU), at::kFloat);
  CHECK(report.unexpected_count == 0);
  CHECK(report.warning().empty());
  // The same text gives the same states with or without the tower.
  const at::Tensor ids = at::randint(100, 5000, {1, 9}, at::kLong);
  const at::Tensor mask = at::ones_like(ids);
  CHECK(relative_l2(text_only->encode(ids, mask), full->encode(ids, mask)) ==
        0);
  CHECK_THROWS_WITH(text_only->vision_features({image_of(4, 4)}),
                    Catch::Contains("without its vision tower"));
}

TEST_CASE("Qwen2.5-VL padding on the right leaves the real tokens' states",
          "[text_encoder][qwen_image]") {
  const auto model = tiny(false, 5);
  const at::Tensor ids = at::randint(100, 5000, {1, 7}, at::kLong);
  const at::Tensor alone = model->encode(ids, at::ones_like(ids));
  const at::Tensor padded_ids =
      at::cat({ids, at::full({1, 4}, 151643, at::kLong)}, 1);
  at::Tensor mask = at::ones_like(padded_ids);
  mask.narrow(1, 7, 4).zero_();
  const at::Tensor padded = model->encode(padded_ids, mask);
  CHECK(relative_l2(padded.narrow(1, 0, 7), alone) <= 1e-6);
  CHECK(alone.sizes() == at::IntArrayRef({1, 7, 64}));
}

TEST_CASE("Qwen2.5-VL prompts with images: features fill the image tokens",
          "[text_encoder][qwen_image]") {
  const auto model = tiny(true, 7);
  at::manual_seed(11);
  const VisionImage wide = image_of(8, 12), small = image_of(4, 4);
  CHECK(model->image_tokens(wide) == 24);
  const at::Tensor features = model->vision_features({wide, small});
  CHECK(features.sizes() == at::IntArrayRef({24 + 4, 64}));
  // Each image's features do not depend on the others (attention stays
  // within an image).
  CHECK(relative_l2(model->vision_features({small}),
                    features.narrow(0, 24, 4)) <= 1e-6);

  const at::Tensor ids = prompt_with_image(24);
  const at::Tensor with_image = model->encode_with_images(ids, {wide});
  CHECK(with_image.sizes() == at::IntArrayRef({1, ids.size(1), 64}));
  // Another image changes the states after it.
  const at::Tensor other = model->encode_with_images(ids, {image_of(8, 12)});
  CHECK(relative_l2(other.narrow(1, 4, 24), with_image.narrow(1, 4, 24)) >
        1e-3);
  // The text before the image does not see it (causal).
  CHECK(relative_l2(other.narrow(1, 0, 4), with_image.narrow(1, 0, 4)) == 0);

  CHECK_THROWS_WITH(
      model->encode_with_images(ids, {small}),
      Catch::Contains("4 tokens") && Catch::Contains("24 image tokens"));
  CHECK_THROWS_WITH(
      model->encode_with_images(ids, {wide, small}),
      Catch::Contains("1 runs of image tokens") && Catch::Contains("2 images"));
  VisionImage odd = image_of(5, 4);
  CHECK_THROWS_WITH(model->vision_features({odd}),
                    Catch::Contains("5x4") && Catch::Contains("merge size 2"));
  VisionImage short_pixels = image_of(4, 4);
  short_pixels.pixel_values = at::randn({15, 1176});
  CHECK_THROWS_WITH(
      model->vision_features({short_pixels}),
      Catch::Contains("pixel_values") && Catch::Contains("(16, 1176)"));
}

TEST_CASE("Qwen2.5-VL configs are read and their errors named",
          "[text_encoder][qwen_image]") {
  mold::test::TempDir dir;
  const auto write = [&](const std::string& extra) {
    const std::string path = dir.path() + "/config.json";
    std::ofstream(path) << R"({"model_type": "qwen2_5_vl", "vocab_size": 152064,
      "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2,
      "rope_scaling": {"type": "default", "mrope_section": [2, 3, 3]},
      "vision_config": {"depth": 2, "hidden_size": 32, "num_heads": 2,
        "intermediate_size": 64, "out_hidden_size": 64,
        "fullatt_block_indexes": [1]})"
                        << extra << "}";
    return path;
  };
  const auto model = qwen_image::make_qwen25vl_text_encoder(
      ArchSpec::from_config(write("")), true);
  CHECK(model->parameter_count() == tiny(true, 1)->parameter_count());
  const auto rejects = [&](const std::string& extra, const std::string& words) {
    INFO(extra);
    try {
      qwen_image::make_qwen25vl_text_encoder(
          ArchSpec::from_config(write(extra)), true);
      FAIL("accepted");
    } catch (const ConfigError& e) {
      CHECK_THAT(e.what(),
                 Catch::Contains(words) && Catch::Contains("config.json"));
    }
  };
  rejects(R"(, "model_type": "qwen2")", "qwen2_5_vl");
  rejects(R"(, "hidden_act": "gelu")", "silu");
  rejects(R"(, "use_sliding_window": true)", "sliding-window");
  rejects(R"(, "num_key_value_heads": 3)", "num_key_value_heads");
  rejects(
      R"(, "rope_scaling": {"type": "default", "mrope_section": [2, 2, 2]})",
      "mrope_section");
  rejects(R"(, "rope_scaling": {"type": "yarn"})", "yarn");
  // As transformers reads them: text_config wins over the top-level copies,
  // rope_scaling over rope_parameters, "type" over "rope_type".
  const auto config_of = [&](const std::string& extra) {
    return qwen_image::make_qwen25vl_text_encoder(
               ArchSpec::from_config(write(extra)), true)
        ->config();
  };
  CHECK(config_of(R"(, "text_config": {"vocab_size": 152064,
      "hidden_size": 32, "intermediate_size": 128, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2,
      "rope_scaling": {"type": "default", "mrope_section": [1, 1, 2]}},
      "vision_config": {"depth": 2, "hidden_size": 32, "num_heads": 2,
        "intermediate_size": 64, "out_hidden_size": 32,
        "fullatt_block_indexes": [1]})")
            .hidden_size == 32);
  rejects(R"(, "rope_parameters": {"rope_type": "default",
      "mrope_section": [2, 3, 3]}, "rope_scaling": {"rope_type": "default",
      "type": "yarn"})",
          "yarn");
}
