// Parity with the reference implementations: each architecture's tiny
// built-in, loaded with the weights of its golden file (tests/data/golden/,
// made by make_golden.py there by running diffusers' or transformers' own
// model code on those weights), run on the file's inputs, gives the
// reference's outputs to float32 rounding (relative L2 <= 1e-5; the
// reference and mold differ only in the order of their sums). See
// tests/data/golden/README.md for what each file holds.
// The Qwen2.5-VL vision tower, reachable only inside the qwen_image plugin, is
// checked the same way in
// plugins/qwen_image/tests/golden_parity_vision_test.cpp.
#include <catch2/catch.hpp>
#include <mold/model/denoiser.hpp>
#include <mold/model/text_encoder.hpp>
#include <mold/model/vae.hpp>

#include "support/aten_for_tests.hpp"
#include "support/golden_file.hpp"
#include "support/test_registry.hpp"

using namespace mold;
using mold::test::golden_relative_l2;
using mold::test::GoldenFile;
using mold::test::kGoldenTolerance;

namespace {

const ModelFamily& family(const std::string& name) {
  const ModelFamily* f = mold::test::real_plugins().family(name);
  REQUIRE(f);
  return *f;
}

/// `actual` against `expected`: the same shape, finite, within the tolerance.
void check_close(const at::Tensor& actual, const at::Tensor& expected) {
  REQUIRE(actual.sizes() == expected.sizes());
  CHECK(at::isfinite(actual).all().item<bool>());
  const double error = golden_relative_l2(actual, expected);
  INFO("relative L2 " << error);
  CHECK(error <= kGoldenTolerance);
}

/// The rows of a (B, L, D) hidden state whose attention_mask (B, L) is
/// nonzero, as (N, D): what the pipelines take of a padded batch.
at::Tensor valid_rows(const at::Tensor& hidden, const at::Tensor& mask) {
  return hidden.index({mask.ne(0)});
}

/// The denoiser input of a golden case: latents (B, C, H, W), timestep (B,)
/// as the model's forward takes it, text (B, L, D), text_mask (B, L) stored as
/// 0/1, and for an edit the reference latents reference.0, reference.1, ...
DenoiserInput denoiser_input(const GoldenFile& golden,
                             const std::string& test_case) {
  DenoiserInput in;
  in.latents = golden.input(test_case, "latents");
  in.timestep = golden.input(test_case, "timestep");
  in.text = golden.input(test_case, "text");
  in.text_mask = golden.input(test_case, "text_mask").ne(0);
  for (int j = 0; golden.has_input(test_case, "reference." + std::to_string(j));
       ++j)
    in.references.push_back(
        golden.input(test_case, "reference." + std::to_string(j)));
  return in;
}

}  // namespace

TEST_CASE(
    "golden: the Z-Image transformer gives diffusers' "
    "ZImageTransformer2DModel's output",
    "[golden][transformer]") {
  const GoldenFile golden("zimage_transformer");
  INFO(golden.metadata("reference"));
  const auto model = family("zimage").make_transformer(ArchSpec::parse("tiny"));
  golden.load_into(*model);
  // "single": 2x3 patches, 11 caption tokens; "batch": two items of 3x5
  // patches, captions of 5 and 40 valid tokens (padded to 32 and 64, so the
  // first item's caption keys beyond 32 are batch padding), the second
  // item's valid rows not at the start of its text.
  for (const std::string test_case : {"single", "batch"}) {
    INFO(test_case);
    check_close(model->forward(denoiser_input(golden, test_case)),
                golden.output(test_case, "sample"));
  }
}

TEST_CASE(
    "golden: the Z-Image text encoder gives the second-to-last hidden state "
    "of transformers' Qwen3Model",
    "[golden][text_encoder]") {
  const GoldenFile golden("zimage_qwen3_text_encoder");
  INFO(golden.metadata("reference"));
  const auto encoder =
      family("zimage").make_text_encoder(ArchSpec::parse("tiny"));
  golden.load_into(*encoder);
  // "single": 6 tokens; "padded_batch": 7 and 4 tokens, right padded. The
  // valid tokens (what the pipeline keeps), then every row: the padding's
  // rows agree too (both mask the same keys with the same fill).
  for (const std::string test_case : {"single", "padded_batch"}) {
    INFO(test_case);
    const at::Tensor mask = golden.input(test_case, "attention_mask");
    const at::Tensor hidden =
        encoder->encode(golden.input(test_case, "input_ids"), mask);
    const at::Tensor expected = golden.output(test_case, "hidden_states_-2");
    REQUIRE(hidden.sizes() == expected.sizes());
    check_close(valid_rows(hidden, mask), valid_rows(expected, mask));
    check_close(hidden, expected);
  }
}

TEST_CASE(
    "golden: the Z-Image VAE encodes and decodes as diffusers' AutoencoderKL",
    "[golden][vae]") {
  const GoldenFile golden("zimage_flux_vae");
  INFO(golden.metadata("reference"));
  const auto vae = family("zimage").make_vae("tiny", 0);
  golden.load_into(*vae);
  // encode: latent_dist.mode() of a 32x24 image (the model's own latent
  // space); decode: a 3x4 latent of that space to the image.
  const VaeRunOptions whole;
  check_close(vae->encode(golden.input("encode", "image"), whole),
              golden.output("encode", "latent"));
  check_close(vae->decode(golden.input("decode", "latent"), whole),
              golden.output("decode", "image"));
  VaeRunOptions bounded;
  bounded.bounded = true;
  bounded.workspace_bound = 64 * kKiB;
  check_close(vae->decode(golden.input("decode", "latent"), bounded),
              golden.output("decode", "image"));
}

TEST_CASE(
    "golden: the Qwen-Image transformer gives diffusers' "
    "QwenImageTransformer2DModel's output",
    "[golden][transformer][qwen_image]") {
  const GoldenFile golden("qwen_image_transformer");
  INFO(golden.metadata("reference"));
  const auto model =
      family("qwen_image").make_transformer(ArchSpec::parse("tiny"));
  golden.load_into(*model);
  // "single": 2x3 patches, 7 text tokens; "masked_batch": two items of 3x2
  // patches, 5 and 9 of 9 text tokens valid; "edit": 2x2 patches and a 3x4
  // reference latent (its output is the noisy latent's part).
  for (const std::string test_case : {"single", "masked_batch", "edit"}) {
    INFO(test_case);
    check_close(model->forward(denoiser_input(golden, test_case)),
                golden.output(test_case, "sample"));
  }
}

TEST_CASE(
    "golden: the Qwen-Image text encoder gives the last hidden state of "
    "transformers' Qwen2_5_VLModel",
    "[golden][text_encoder][qwen_image]") {
  const GoldenFile golden("qwen25vl_text_encoder");
  INFO(golden.metadata("reference"));
  const auto encoder =
      family("qwen_image").make_text_encoder(ArchSpec::parse("tiny"));
  golden.load_into(*encoder);
  // "text": 8 tokens; "padded_batch": 9 and 5 tokens, right padded;
  // "left_padded": 6 tokens after 3 pads (the positions count real tokens).
  // The valid tokens (what the pipelines keep), then every row: a left pad
  // sees no key at all, and both then spread it evenly over every key (the
  // same finite fill on every score).
  for (const std::string test_case : {"text", "padded_batch", "left_padded"}) {
    INFO(test_case);
    const at::Tensor mask = golden.input(test_case, "attention_mask");
    const at::Tensor hidden =
        encoder->encode(golden.input(test_case, "input_ids"), mask);
    const at::Tensor expected = golden.output(test_case, "hidden_states_-1");
    REQUIRE(hidden.sizes() == expected.sizes());
    check_close(valid_rows(hidden, mask), valid_rows(expected, mask));
    check_close(hidden, expected);
  }
}

TEST_CASE(
    "golden: the Qwen-Image VAE encodes and decodes as diffusers' "
    "AutoencoderKLQwenImage",
    "[golden][vae][qwen_image]") {
  const GoldenFile golden("qwen_image_vae");
  INFO(golden.metadata("reference"));
  const auto vae = family("qwen_image").make_vae("tiny", 0);
  golden.load_into(*vae);
  // One frame: encode latent_dist.mode() of two 24x32 images (the model's
  // own latent space, after quant_conv); decode a 4x3 latent, clamped.
  const VaeRunOptions whole;
  check_close(vae->encode(golden.input("encode", "image"), whole),
              golden.output("encode", "latent"));
  check_close(vae->decode(golden.input("decode", "latent"), whole),
              golden.output("decode", "image"));
}
