// The tensors fp8 checkpoints store beside their weights: scales are set
// aside and attached to their weight, input scales and markers dropped, and
// what mold cannot apply (other quantizations, scales of int8 weights,
// block-wise scales, a scale of no weight) is refused naming the tensor.

#include <catch2/catch.hpp>
#include <mold/tensor/tensor_listing.hpp>
#include <mold/tensor/weight_scales.hpp>

namespace {

mold::StoredTensor stored(const std::string& name, const std::string& type,
                          std::vector<std::int64_t> shape) {
  mold::StoredTensor t;
  t.name = name;
  t.type = type;
  t.shape = std::move(shape);
  return t;
}

mold::TensorListing listing_of(std::vector<mold::StoredTensor> tensors) {
  mold::TensorListing listing;
  listing.add_file("model_fp8_scaled.safetensors", std::nullopt,
                   std::move(tensors));
  return listing;
}

}  // namespace

TEST_CASE("scale tensors are named by their weight", "[float8][layout]") {
  const auto scale = mold::weight_companion("a.b.scale_weight");
  REQUIRE(scale);
  CHECK(scale->weight == "a.b.weight");
  CHECK(scale->scale);
  CHECK(mold::weight_companion("a.weight_scale")->scale);
  CHECK_FALSE(mold::weight_companion("a.input_scale")->scale);
  CHECK_FALSE(mold::weight_companion("a.comfy_quant")->scale);
  CHECK(mold::weight_companion("model.diffusion_model.scaled_fp8"));
  CHECK_FALSE(mold::weight_companion("a.weight"));
  CHECK_FALSE(mold::weight_companion(".weight_scale"));
  CHECK(*mold::unread_quantization("a.weight_scale_2") == "nvfp4 (ComfyUI)");
  CHECK(mold::unread_quantization("a.weight.absmax"));
  CHECK_FALSE(mold::unread_quantization("a.weight"));
}

TEST_CASE("a scaled fp8 listing shows the layouts its weights only",
          "[float8][layout]") {
  const auto listing = listing_of({
      stored("scaled_fp8", "F8_E4M3", {0}),
      stored("l.weight", "F8_E4M3", {4, 8}),
      stored("l.scale_weight", "F32", {}), stored("l.scale_input", "F32", {}),
      stored("m.weight", "F8_E4M3", {4, 8}),
      stored("m.weight_scale", "F32", {4, 1}),
      stored("m.comfy_quant", "U8", {27}), stored("m.bias", "BF16", {4}),
      stored("n.weight", "BF16", {2, 2}),  // kept in bf16: no scale
  });
  REQUIRE_NOTHROW(listing.check_scales());
  CHECK(listing.tensors().size() == 4);
  CHECK(listing.companions().size() == 5);
  CHECK(listing.scale_of(*listing.find("l.weight"))->name == "l.scale_weight");
  CHECK(listing.scale_of(*listing.find("m.weight"))->name == "m.weight_scale");
  CHECK_FALSE(listing.scale_of(*listing.find("n.weight")));
  CHECK_FALSE(listing.find("l.scale_weight"));
}

TEST_CASE("a plain fp8 cast needs no scales; a scaled file needs all of them",
          "[float8][layout]") {
  // Every weight cast to fp8, no scale anywhere (ComfyUI's fp8_e4m3fn files).
  const auto plain = listing_of({stored("l.weight", "F8_E4M3", {4, 8}),
                                 stored("n.weight", "F8_E5M2", {2, 2})});
  REQUIRE_NOTHROW(plain.check_scales());
  CHECK_FALSE(plain.scale_of(*plain.find("n.weight")));
  // One scale_weight missing: read unscaled, its values would be off by the
  // scale; refused naming the weight and the scale it lacks.
  const std::vector<std::pair<std::vector<mold::StoredTensor>, std::string>>
      missing = {
          {{stored("a.weight", "F8_E4M3", {4, 8}),
            stored("a.scale_weight", "F32", {}),
            stored("l.weight", "F8_E4M3", {4, 8})},
           "1 other fp8 weight has one"},
          {{stored("scaled_fp8", "F8_E4M3", {0}),
            stored("l.weight", "F8_E5M2", {4, 8})},
           "it has the scaled_fp8 marker"},
          {{stored("a.weight", "F8_E4M3", {4, 8}),
            stored("a.weight_scale", "F32", {4, 1}),
            stored("b.weight", "F8_E4M3", {4, 8}),
            stored("b.weight_scale", "F32", {}),
            stored("l.weight", "F8_E4M3", {4, 8})},
           "2 other fp8 weights have one"},
      };
  for (const auto& [tensors, says] : missing) {
    INFO(says);
    try {
      listing_of(tensors).check_scales();
      FAIL("accepted");
    } catch (const mold::SafetensorsError& e) {
      CHECK_THAT(e.what(),
                 Catch::Contains("tensor 'l.weight' is F8_E") &&
                     Catch::Contains("with no scale ('l.scale_weight' or "
                                     "'l.weight_scale')") &&
                     Catch::Contains(says) &&
                     Catch::Contains("model_fp8_scaled.safetensors"));
    }
  }
}

TEST_CASE("scales mold cannot apply are refused by name", "[float8][layout]") {
  struct Case {
    std::vector<mold::StoredTensor> tensors;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{stored("l.weight", "U8", {4, 4}),
        stored("l.weight_scale", "F8_E4M3", {4, 1}),
        stored("l.weight_scale_2", "F32", {})},
       "nvfp4"},
      {{stored("l.weight", "U8", {4, 4}),
        stored("l.weight.absmax", "F32", {1})},
       "bitsandbytes 4-bit"},
      {{stored("l.weight", "I8", {4, 4}), stored("l.SCB", "F32", {4})},
       "bitsandbytes 8-bit"},
      {{stored("l.weight", "F8_E4M3", {256, 256}),
        stored("l.weight_scale_inv", "F32", {2, 2})},
       "block-wise fp8"},
      {{stored("l.weight", "I8", {4, 4}),
        stored("l.weight_scale", "F32", {4, 1})},
       "int8"},
      {{stored("l.weight", "BF16", {4, 4}),
        stored("l.scale_weight", "F32", {})},
       "a BF16 weight"},
      {{stored("l.scale_weight", "F32", {})}, "the file does not have"},
      {{stored("l.weight", "F8_E4M3", {4, 64}),
        stored("l.weight_scale", "F32", {4, 2})},
       "block-wise"},
      {{stored("l.weight", "F8_E4M3", {4, 4}),
        stored("l.weight_scale", "I32", {})},
       "I32 scale"},
      {{stored("l.weight", "F8_E4M3", {4, 4}),
        stored("l.weight_scale", "F32", {}),
        stored("l.scale_weight", "F32", {})},
       "one scale per weight"},
  };
  for (const auto& c : cases) {
    INFO(c.expected);
    const auto listing = listing_of(c.tensors);
    try {
      listing.check_scales();
      FAIL("accepted");
    } catch (const mold::SafetensorsError& e) {
      CHECK_THAT(e.what(),
                 Catch::Contains(c.expected) &&
                     Catch::Contains("model_fp8_scaled.safetensors") &&
                     Catch::Contains("'l."));
    }
  }
}
