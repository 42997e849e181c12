// Parity of the Qwen2.5-VL vision tower and of a prompt with images with
// transformers' Qwen2_5_VLModel (tests/data/golden/qwen25vl_text_encoder
// .safetensors, made by tests/data/golden/make_golden.py): the tiny built-in
// loaded with the golden weights gives the reference's merged image features
// (get_image_features) and hidden_states[-1] of a prompt with two images, to
// float32 rounding (relative L2 <= 1e-5). The text-only path is checked in
// tests/torch/golden_parity_test.cpp.
#include <catch2/catch.hpp>

#include "qwen25vl_text_encoder.hpp"
#include "support/aten_for_tests.hpp"
#include "support/golden_file.hpp"

using namespace mold;
using mold::test::golden_relative_l2;
using mold::test::GoldenFile;
using mold::test::kGoldenTolerance;
using qwen_image::VisionImage;

TEST_CASE(
    "golden: the Qwen2.5-VL vision tower and a prompt with images give "
    "transformers' Qwen2_5_VLModel's outputs",
    "[golden][text_encoder][qwen_image]") {
  const GoldenFile golden("qwen25vl_text_encoder");
  INFO(golden.metadata("reference"));
  auto model = qwen_image::make_qwen25vl_text_encoder(ArchSpec::parse("tiny"),
                                                      /*with_vision=*/true);
  golden.load_into(*model);

  // Two images, their patches one after the other in pixel_values as the
  // processor lays them out: 10x4 patches (5x2 merged tokens, two attention
  // windows in block 0) and 2x2 patches (1 token).
  const at::Tensor pixels = golden.input("images", "pixel_values");
  const at::Tensor grids = golden.input("images", "image_grid_thw");
  REQUIRE(grids.sizes() == at::IntArrayRef({2, 3}));
  std::vector<VisionImage> images;
  int64_t offset = 0;
  for (int64_t i = 0; i < grids.size(0); ++i) {
    VisionImage image;
    image.grid_t = grids[i][0].item<int64_t>();
    image.grid_h = grids[i][1].item<int64_t>();
    image.grid_w = grids[i][2].item<int64_t>();
    const int64_t patches = image.grid_t * image.grid_h * image.grid_w;
    image.pixel_values = pixels.narrow(0, offset, patches);
    offset += patches;
    images.push_back(image);
  }
  REQUIRE(offset == pixels.size(0));

  const auto check_close = [](const at::Tensor& actual,
                              const at::Tensor& expected) {
    REQUIRE(actual.sizes() == expected.sizes());
    const double error = golden_relative_l2(actual, expected);
    INFO("relative L2 " << error);
    CHECK(error <= kGoldenTolerance);
  };
  check_close(model->vision_features(images),
              golden.output("images", "vision_features"));
  check_close(
      model->encode_with_images(golden.input("images", "input_ids"), images),
      golden.output("images", "hidden_states_-1"));
}
