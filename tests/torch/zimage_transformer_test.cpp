// The Z-Image transformer: the public checkpoint's names and shapes, output
// shapes for any even latent size, caption masks (only the valid tokens
// count), batching, seeded determinism, checkpoint round trips, config.json
// parsing and input checks. Parity with diffusers is measured outside the
// repository (see the issue's report).
#include <catch2/catch.hpp>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/model/denoiser.hpp>
#include <mold/tensor/safetensors.hpp>
#include <mold/tensor/weight_set.hpp>
#include <sstream>

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
  const ModelFamily* f = mold::test::real_plugins().family("zimage");
  REQUIRE(f);
  REQUIRE(f->make_transformer);
  return f->make_transformer(arch);
}

std::unique_ptr<Denoiser> tiny(std::uint64_t seed) {
  auto model = make(ArchSpec::parse("tiny"));
  model->init_from_seed(seed);
  return model;
}

/// Text of `length` rows whose first valid[i] rows of item i are real.
DenoiserInput input_of(const at::Tensor& latents,
                       const std::vector<int64_t>& valid, int64_t length,
                       int64_t dim = 32) {
  const int64_t b = latents.size(0);
  DenoiserInput in;
  in.latents = latents;
  in.timestep = at::linspace(0.2, 0.9, b);
  in.text = at::randn({b, length, dim});
  in.text_mask = at::zeros({b, length}, at::kBool);
  for (int64_t i = 0; i < b; ++i)
    in.text_mask[i].narrow(0, 0, valid[std::size_t(i)]).fill_(true);
  return in;
}

std::string write_config(const std::string& dir, const std::string& name,
                         const std::string& extra) {
  // The tiny built-in's values; `extra` may repeat a key to override it.
  const std::string path = dir + "/" + name;
  std::ofstream(path) << R"({"_class_name": "ZImageTransformer2DModel",
    "all_patch_size": [2], "all_f_patch_size": [1], "in_channels": 16,
    "dim": 64, "n_layers": 2, "n_refiner_layers": 1, "n_heads": 2,
    "n_kv_heads": 2, "norm_eps": 1e-05, "qk_norm": true, "cap_feat_dim": 32,
    "siglip_feat_dim": null, "rope_theta": 256.0, "t_scale": 1000.0,
    "axes_dims": [8, 12, 12], "axes_lens": [1536, 512, 512])"
                      << extra << "}";
  return path;
}

}  // namespace

TEST_CASE(
    "the Z-Image transformer declares exactly the public checkpoint's "
    "names and shapes",
    "[transformer]") {
  const auto model = make(ArchSpec::parse("default"));
  CHECK_FALSE(model->materialized());
  CHECK(model->resident_bytes() == 0);  // declared only: no memory
  const auto expected =
      mold::test::read_state_dict_listing("zimage_transformer_state_dict.tsv");
  mold::test::ShapeMap got;
  for (const auto& [name, t] : model->parameters()) got[name] = t.sizes().vec();
  mold::test::check_same_state_dict(expected, got);
  CHECK(expected.size() == 521);
  CHECK(model->parameter_count() == 6154908736);
  CHECK(model->in_channels() == 16);
  CHECK(model->latent_multiple() == 2);
  CHECK(model->text_dim() == 2560);
  CHECK(model->describe() == "zimage transformer (default)");
}

TEST_CASE("any even latent size gives an output of its shape",
          "[transformer]") {
  const auto model = tiny(1);
  CHECK(model->text_dim() == 32);
  at::manual_seed(3);
  // 1 patch; odd patch counts; non-square; a multiple of 32 tokens (8x4).
  for (const auto& [h, w] : std::vector<std::pair<int64_t, int64_t>>{
           {2, 2}, {6, 10}, {10, 4}, {16, 8}, {2, 30}}) {
    INFO(h << "x" << w);
    const at::Tensor latents = at::randn({1, 16, h, w});
    const at::Tensor out = model->forward(input_of(latents, {7}, 9));
    REQUIRE(out.sizes() == latents.sizes());
    CHECK(out.isfinite().all().item<bool>());
    CHECK(out.std().item<double>() > 0.05);  // seeded weights do something
  }
  // The timestep matters.
  const at::Tensor latents = at::randn({1, 16, 4, 6});
  auto in = input_of(latents, {5}, 5);
  const at::Tensor early = model->forward(in);
  in.timestep = at::full({1}, 0.05);
  CHECK(relative_l2(model->forward(in), early) > 1e-3);
}

TEST_CASE("only the valid caption tokens count, wherever they are",
          "[transformer]") {
  const auto model = tiny(2);
  at::manual_seed(4);
  auto in = input_of(at::randn({1, 16, 6, 4}), {11}, 20);
  const at::Tensor out = model->forward(in);

  // Whatever the padding holds, the output is the same.
  auto noisy = in;
  noisy.text = in.text.clone();
  noisy.text[0].narrow(0, 11, 9).normal_(0, 100);
  CHECK(at::equal(model->forward(noisy), out));

  // The valid tokens may sit anywhere (the pipeline selects them by mask).
  auto moved = in;
  moved.text = at::zeros({1, 30, 32});
  moved.text_mask = at::zeros({1, 30}, at::kBool);
  for (int64_t i = 0; i < 11; ++i) {
    const int64_t at_row = 3 + 2 * i;
    moved.text[0][at_row].copy_(in.text[0][i]);
    moved.text_mask[0][at_row] = true;
  }
  CHECK(relative_l2(model->forward(moved), out) <= 1e-6);
  // An integer mask works like a bool one.
  auto integral = in;
  integral.text_mask = in.text_mask.to(at::kLong);
  CHECK(at::equal(model->forward(integral), out));

  // But a valid token matters, and so does the caption's length.
  auto changed = in;
  changed.text = in.text.clone();
  changed.text[0][4].normal_();
  CHECK(relative_l2(model->forward(changed), out) > 1e-4);
  auto longer = in;
  longer.text_mask = in.text_mask.clone();
  longer.text_mask[0][11] = true;
  CHECK(relative_l2(model->forward(longer), out) > 1e-4);
}

TEST_CASE("a batch of two is two batches of one", "[transformer]") {
  const auto model = tiny(3);
  at::manual_seed(5);
  // Captions of 5 and 40 valid tokens: padded to 32 and 64, so the shorter
  // one is also padded to the batch (those keys are masked).
  auto in = input_of(at::randn({2, 16, 6, 10}), {5, 40}, 45);
  const at::Tensor both = model->forward(in);
  for (int64_t i = 0; i < 2; ++i) {
    INFO("item " << i);
    DenoiserInput one{in.latents.narrow(0, i, 1),
                      in.timestep.narrow(0, i, 1),
                      in.text.narrow(0, i, 1),
                      in.text_mask.narrow(0, i, 1),
                      {}};
    CHECK(relative_l2(model->forward(one), both.narrow(0, i, 1)) <= 1e-5);
  }
}

TEST_CASE("seeded weights are deterministic and bf16 follows float32",
          "[transformer]") {
  at::manual_seed(6);
  const auto in = input_of(at::randn({2, 16, 4, 4}), {3, 33}, 40);
  const at::Tensor a = tiny(7)->forward(in);
  CHECK(at::equal(tiny(7)->forward(in), a));
  CHECK(relative_l2(tiny(8)->forward(in), a) > 1e-2);

  auto half = make(ArchSpec::parse("tiny"));
  half->init_from_seed(7, c10::Device(c10::kCPU), at::kBFloat16);
  const at::Tensor b = half->forward(in);
  CHECK(b.scalar_type() == at::kBFloat16);
  CHECK(relative_l2(b.to(at::kFloat), a) < 5e-2);
}

TEST_CASE(
    "transformer weights round-trip through safetensors; a wrong checkpoint "
    "is named",
    "[transformer][safetensors]") {
  mold::test::TempDir dir;
  const auto model = tiny(9);
  std::vector<std::pair<std::string, at::Tensor>> tensors(
      model->parameters().begin(), model->parameters().end());
  const std::string path = dir.path() + "/transformer.safetensors";
  save_safetensors(path, tensors);
  auto fresh = make(ArchSpec::parse("tiny"));
  const auto load = [](Denoiser& m, const std::string& file) {
    return m.load(WeightSet::open(file), c10::Device(c10::kCPU), at::kFloat);
  };
  const auto report = load(*fresh, path);
  CHECK(report.warning().empty());
  CHECK(report.tensors == model->parameters().size());
  at::manual_seed(10);
  const auto in = input_of(at::randn({1, 16, 6, 6}), {12}, 12);
  CHECK(at::equal(fresh->forward(in), model->forward(in)));

  auto misshaped = tensors;
  for (auto& [name, t] : misshaped)
    if (name == "layers.1.feed_forward.w2.weight") t = at::zeros({64, 3});
  save_safetensors(path, misshaped);
  CHECK_THROWS_WITH(load(*fresh, path),
                    Catch::Contains(path) &&
                        Catch::Contains("layers.1.feed_forward.w2.weight") &&
                        Catch::Contains("zimage transformer"));
}

TEST_CASE("a diffusers config.json describes the architecture",
          "[transformer][config]") {
  mold::test::TempDir dir;
  const auto model =
      make(ArchSpec::from_config(write_config(dir.path(), "ok.json", "")));
  const auto reference = make(ArchSpec::parse("tiny"));
  REQUIRE(model->parameters().size() == reference->parameters().size());
  for (const auto& [name, t] : reference->parameters()) {
    INFO(name);
    REQUIRE(model->parameters().count(name));
    CHECK(model->parameters().at(name).sizes() == t.sizes());
  }
  // The tiny layout: SwiGLU int(64 / 3 * 8) = 170 wide, adaLN from 64.
  CHECK(model->parameters().at("layers.1.feed_forward.w1.weight").sizes() ==
        at::IntArrayRef({170, 64}));
  CHECK(model->parameters().at("layers.1.adaLN_modulation.0.weight").sizes() ==
        at::IntArrayRef({256, 64}));
  CHECK(model->parameters()
            .at("context_refiner.0.attention.norm_k.weight")
            .sizes() == at::IntArrayRef({32}));
  CHECK(model->parameters().count(
            "context_refiner.0.adaLN_modulation.0.bias") == 0);

  // Without qk_norm there are no query/key norms; more patch sizes each
  // bring their embedder and final layer.
  const auto plain = make(ArchSpec::from_config(
      write_config(dir.path(), "plain.json",
                   R"(, "qk_norm": false, "all_patch_size": [2, 4],
                      "all_f_patch_size": [1, 1])")));
  CHECK(plain->parameters().count("layers.0.attention.norm_q.weight") == 0);
  CHECK(plain->parameters().at("all_x_embedder.4-1.weight").sizes() ==
        at::IntArrayRef({64, 256}));
  // Absent keys take diffusers' defaults (the published sizes).
  {
    const std::string path = dir.path() + "/defaults.json";
    std::ofstream(path) << R"({"_class_name": "ZImageTransformer2DModel"})";
    CHECK(make(ArchSpec::from_config(path))->parameter_count() == 6154908736);
  }

  const std::vector<std::tuple<std::string, std::string, std::string>> bad = {
      {R"(, "n_kv_heads": 1)", "'n_kv_heads'", "grouped"},
      {R"(, "siglip_feat_dim": 1152)", "'siglip_feat_dim'", "Omni"},
      {R"(, "all_f_patch_size": [2])", "'all_f_patch_size'", "only 1"},
      {R"(, "all_patch_size": [4])", "'all_patch_size'", "patch size 2"},
      {R"(, "all_patch_size": [2, 4])", "'all_f_patch_size'", "as long as"},
      {R"(, "axes_dims": [8, 8, 8])", "'axes_dims'", "sums to 24"},
      {R"(, "axes_dims": [7, 13, 12])", "'axes_dims'", "odd"},
      {R"(, "axes_dims": [16, 16])", "'axes_dims'", "3-D"},
      {R"(, "axes_lens": [64, 64])", "'axes_lens'", "2 entries"},
      {R"(, "n_heads": 3, "n_kv_heads": 3)", "'n_heads'", "do not divide"},
      {R"(, "dim": 0)", "'dim'", "out of range"},
      {R"(, "norm_eps": 0)", "'norm_eps'", "(0, 1]"},
      {R"(, "_class_name": "FluxTransformer2DModel")", "'_class_name'",
       "FluxTransformer2DModel"},
      {R"(, "n_layers": "2")", "'n_layers'", ""},
  };
  int n = 0;
  for (const auto& [extra, key, problem] : bad) {
    INFO(extra);
    const std::string path =
        write_config(dir.path(), "bad" + std::to_string(n++) + ".json", extra);
    CHECK_THROWS_AS(make(ArchSpec::from_config(path)), ConfigError);
    CHECK_THROWS_WITH(make(ArchSpec::from_config(path)),
                      Catch::Contains(path) && Catch::Contains(key) &&
                          Catch::Contains(problem));
  }
  CHECK_THROWS_AS(make(ArchSpec::from_config(dir.path() + "/absent.json")),
                  ConfigError);
  ArchSpec unknown;
  unknown.name = "huge";
  CHECK_THROWS_AS(make(unknown), InvalidArgument);
  CHECK_THROWS_WITH(make(unknown), Catch::Contains("'default', 'tiny'") &&
                                       Catch::Contains("'huge'"));
}

TEST_CASE("inputs the transformer cannot take are named with their shapes",
          "[transformer]") {
  const auto model = tiny(11);
  at::manual_seed(12);
  const auto good = input_of(at::randn({2, 16, 4, 4}), {3, 4}, 6);
  CHECK_NOTHROW(model->forward(good));
  const auto fails = [&](DenoiserInput in, const std::string& field,
                         const std::string& detail) {
    INFO(field << " " << detail);
    CHECK_THROWS_AS(model->forward(in), InvalidArgument);
    CHECK_THROWS_WITH(model->forward(in),
                      Catch::Contains(field) && Catch::Contains(detail));
  };
  auto in = good;
  in.latents = at::randn({2, 16, 5, 4});
  fails(in, "latents is [2, 16, 5, 4]", "multiples of 2");
  in.latents = at::randn({2, 4, 4, 4});
  fails(in, "latents is [2, 4, 4, 4]", "(B, 16, H, W)");
  in.latents = at::randn({16, 4, 4});
  fails(in, "latents", "(B, 16, H, W)");
  in = good;
  in.timestep = at::ones({3});
  fails(in, "timestep is [3]", "(2,)");
  in = good;
  in.text = at::randn({2, 6, 31});
  fails(in, "text is [2, 6, 31]", "(2, L, 32)");
  in = good;
  in.text_mask = at::ones({2, 5}, at::kBool);
  fails(in, "text_mask is [2, 5]", "(2, 6)");
  in.text_mask = at::ones({2, 6}, at::kFloat);
  fails(in, "text_mask", "bool");
  in = good;
  in.text_mask = good.text_mask.clone();
  in.text_mask[1].fill_(false);
  fails(in, "text_mask row 1", "at least one valid caption token");
  // Positions beyond the RoPE tables.
  in = input_of(at::randn({1, 16, 2, 1026}), {3}, 3);
  fails(in, "latents", "512 (axes_lens[1]");
  in = input_of(at::randn({1, 16, 2, 2}), {1510}, 1510);
  fails(in, "text has up to 1510 valid tokens", "axes_lens[0]");
}
