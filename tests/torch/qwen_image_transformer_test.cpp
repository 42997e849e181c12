// The Qwen-Image transformer: the public checkpoint's names and shapes,
// output shapes, the text mask (padding never counts), batching, edit
// references (zero_cond_t), config.json parsing and input checks. Parity
// with diffusers is measured outside the repository (see the issue's
// report).
#include <catch2/catch.hpp>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/model/denoiser.hpp>
#include <mold/runtime/module_component.hpp>
#include <mold/runtime/pipeline.hpp>

#include "support/aten_for_tests.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/state_dict_listing.hpp"
#include "support/tensor_compare.hpp"
#include "support/test_registry.hpp"

using namespace mold;

using mold::test::relative_l2;

namespace {

std::unique_ptr<Denoiser> make(const ArchSpec& arch) {
  const ModelFamily* f = mold::test::real_plugins().family("qwen_image");
  REQUIRE(f);
  REQUIRE(f->make_transformer);
  return f->make_transformer(arch);
}

DenoiserInput input_of(const at::Tensor& latents,
                       const std::vector<int64_t>& valid, int64_t length) {
  const int64_t b = latents.size(0);
  DenoiserInput in;
  in.latents = latents;
  in.timestep = at::linspace(0.2, 0.9, b);
  in.text = at::randn({b, length, 64});
  in.text_mask = at::zeros({b, length}, at::kBool);
  for (int64_t i = 0; i < b; ++i)
    in.text_mask[i].narrow(0, 0, valid[std::size_t(i)]).fill_(true);
  return in;
}

std::string write_config(const std::string& dir, const std::string& extra) {
  const std::string path = dir + "/config.json";
  std::ofstream(path) << R"({"_class_name": "QwenImageTransformer2DModel",
    "patch_size": 2, "in_channels": 64, "out_channels": 16, "num_layers": 2,
    "attention_head_dim": 32, "num_attention_heads": 2,
    "joint_attention_dim": 64, "guidance_embeds": false,
    "axes_dims_rope": [8, 12, 12])"
                      << extra << "}";
  return path;
}

}  // namespace

TEST_CASE(
    "the Qwen-Image transformer declares exactly the public checkpoint's "
    "names and shapes",
    "[transformer][qwen_image]") {
  const auto model = make(ArchSpec::parse("default"));
  CHECK_FALSE(model->materialized());
  CHECK(model->resident_bytes() == 0);
  const auto expected = mold::test::read_state_dict_listing(
      "qwen_image_transformer_state_dict.tsv");
  mold::test::ShapeMap got;
  for (const auto& [name, t] : model->parameters()) got[name] = t.sizes().vec();
  mold::test::check_same_state_dict(expected, got);
  CHECK(model->parameter_count() == 20430401088);
  // The published config.json builds the same model.
  const auto from_file =
      make(ArchSpec::from_config(std::string(mold::test::kDataDir) +
                                 "/qwen_image_transformer_config.json"));
  CHECK(from_file->parameter_count() == 20430401088);
}

TEST_CASE("the tiny Qwen-Image transformer predicts the latent's shape",
          "[transformer][qwen_image]") {
  auto model = make(ArchSpec::parse("tiny"));
  model->init_from_seed(7);
  CHECK(model->in_channels() == 16);
  CHECK(model->latent_multiple() == 2);
  CHECK(model->text_dim() == 64);
  at::manual_seed(1);
  for (auto [h, w] : {std::pair<int64_t, int64_t>{8, 12}, {2, 2}, {14, 6}}) {
    const auto in = input_of(at::randn({2, 16, h, w}), {3, 9}, 9);
    const at::Tensor out = model->forward(in);
    CHECK(out.sizes() == at::IntArrayRef({2, 16, h, w}));
    CHECK(out.isfinite().all().item<bool>());
  }
}

TEST_CASE(
    "padding after a Qwen-Image caption changes nothing and batch items are "
    "independent",
    "[transformer][qwen_image]") {
  auto model = make(ArchSpec::parse("tiny"));
  model->init_from_seed(3);
  at::manual_seed(2);
  auto in = input_of(at::randn({2, 16, 6, 8}), {5, 11}, 11);
  const at::Tensor both = model->forward(in);
  for (int64_t i = 0; i < 2; ++i) {
    INFO("item " << i);
    const int64_t valid = i == 0 ? 5 : 11;
    DenoiserInput one;
    one.latents = in.latents.narrow(0, i, 1);
    one.timestep = in.timestep.narrow(0, i, 1);
    one.text = in.text.narrow(0, i, 1).narrow(1, 0, valid);
    one.text_mask = in.text_mask.narrow(0, i, 1).narrow(1, 0, valid);
    const at::Tensor alone = model->forward(one);
    // Item 0 alone has a shorter text, so its text RoPE table is shorter;
    // padded keys never count, so the outputs agree.
    CHECK(relative_l2(alone, both.narrow(0, i, 1)) <= 1e-5);
  }
  // What sits in the padding does not matter.
  DenoiserInput noisy = in;
  noisy.text = in.text.clone();
  noisy.text[0].narrow(0, 5, 6).normal_(0, 100);
  CHECK(relative_l2(model->forward(noisy), both) <= 1e-6);
}

TEST_CASE(
    "edit references condition the Qwen-Image prediction; zero_cond_t "
    "modulates them with timestep 0",
    "[transformer][qwen_image]") {
  mold::test::TempDir dir;
  auto plain = make(ArchSpec::from_config(write_config(dir.path(), "")));
  auto zero = make(ArchSpec::from_config(write_config(
      dir.path(), R"(, "zero_cond_t": true, "pooled_projection_dim": 768)")));
  plain->init_from_seed(5);
  zero->init_from_seed(5);
  at::manual_seed(4);
  DenoiserInput in = input_of(at::randn({1, 16, 8, 8}), {7}, 7);
  // Without references zero_cond_t changes nothing.
  CHECK(relative_l2(zero->forward(in), plain->forward(in)) == 0);
  const at::Tensor alone = plain->forward(in);
  in.references = {at::randn({1, 16, 8, 12}), at::randn({1, 16, 4, 4})};
  const at::Tensor edit = plain->forward(in);
  CHECK(edit.sizes() == alone.sizes());  // the noisy latent's only
  CHECK(relative_l2(edit, alone) > 1e-3);
  CHECK(relative_l2(zero->forward(in), edit) > 1e-4);
  // A reference of another batch size is named.
  in.references[1] = at::randn({2, 16, 4, 4});
  CHECK_THROWS_WITH(plain->forward(in), Catch::Contains("references[1]") &&
                                            Catch::Contains("one per latent"));
}

TEST_CASE("Qwen-Image transformer inputs are checked and named",
          "[transformer][qwen_image]") {
  auto model = make(ArchSpec::parse("tiny"));
  model->init_from_seed(1);
  const auto fails = [&](DenoiserInput in, const std::string& field) {
    INFO(field);
    CHECK_THROWS_AS(model->forward(in), InvalidArgument);
    CHECK_THROWS_WITH(model->forward(in), Catch::Contains(field));
  };
  const DenoiserInput good = input_of(at::randn({1, 16, 4, 4}), {3}, 3);
  DenoiserInput bad = good;
  bad.latents = at::randn({1, 16, 5, 4});
  fails(bad, "latents");
  bad = good;
  bad.latents = at::randn({1, 4, 4, 4});
  fails(bad, "latents");
  bad = good;
  bad.timestep = at::ones({2});
  fails(bad, "timestep");
  bad = good;
  bad.text = at::randn({1, 3, 32});
  fails(bad, "text");
  bad = good;
  bad.text_mask = at::ones({1, 4}, at::kBool);
  fails(bad, "text_mask");
  bad = good;
  bad.text = at::randn({1, 4096, 64});
  bad.text_mask = at::ones({1, 4096}, at::kBool);
  fails(bad, "at most 4095 tokens");
}

TEST_CASE("Qwen-Image transformer configs are read and their errors named",
          "[transformer][qwen_image]") {
  mold::test::TempDir dir;
  const auto rejects = [&](const std::string& extra, const std::string& key,
                           const std::string& words) {
    INFO(extra);
    const std::string path = write_config(dir.path(), extra);
    try {
      make(ArchSpec::from_config(path));
      FAIL("accepted");
    } catch (const ConfigError& e) {
      CHECK_THAT(e.what(), Catch::Contains(key) && Catch::Contains(words) &&
                               Catch::Contains("config.json"));
    }
  };
  rejects(R"(, "patch_size": 4)", "patch_size", "2x2");
  rejects(R"(, "in_channels": 32)", "in_channels", "64");
  rejects(R"(, "guidance_embeds": true)", "guidance_embeds", "not implemented");
  rejects(R"(, "use_layer3d_rope": true)", "use_layer3d_rope",
          "not implemented");
  rejects(R"(, "axes_dims_rope": [8, 8, 8])", "axes_dims_rope", "sums to 24");
  rejects(R"(, "axes_dims_rope": [9, 11, 12])", "axes_dims_rope", "odd");
  rejects(R"(, "num_layers": -1)", "num_layers", "");
  rejects(R"(, "_class_name": "FluxTransformer2DModel")", "_class_name",
          "QwenImageTransformer2DModel");
  const auto model = make(ArchSpec::from_config(write_config(dir.path(), "")));
  CHECK(model->parameter_count() ==
        make(ArchSpec::parse("tiny"))->parameter_count());
}

TEST_CASE(
    "qwen-image-edit-2511 without a config.json runs its transformer with "
    "zero_cond_t, as its published config says; qwen-image does not",
    "[qwen_image]") {
  const ModelFamily& family = mold::test::real_family("qwen_image");
  auto transformer_of = [&](const std::string& model) {
    PipelineOptions options;
    options.model = model;
    options.variant = "bf16";
    options.arch = ArchSpec::parse("default");  // declared only: no memory
    options.layouts = family.layouts;
    const auto pipeline = family.make_pipeline(options);
    for (const auto& component : pipeline->components())
      if (component->name() == "transformer")
        return dynamic_cast<const ModuleComponent&>(*component)
            .module()
            .describe();
    return std::string();
  };
  CHECK(transformer_of("qwen-image-edit-2511") ==
        "qwen_image transformer (default, zero_cond_t)");
  CHECK(transformer_of("qwen-image") == "qwen_image transformer (default)");
}
