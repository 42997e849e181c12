// The Qwen-Image and Z-Image VAEs: names, shapes and parameter counts of the
// public checkpoints; the single-frame causal convolution; determinism, exact
// bounded runs, checkpoint round trips.
#include <catch2/catch.hpp>
#include <fstream>
#include <mold/model/vae.hpp>
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

std::unique_ptr<Vae> make(const std::string& family, const std::string& config,
                          std::uint64_t seed = 1) {
  const ModelFamily* f = mold::test::real_plugins().family(family);
  REQUIRE(f);
  REQUIRE(f->make_vae);
  return f->make_vae(config, seed);
}

}  // namespace

TEST_CASE("the VAEs expose exactly the public checkpoints' names and shapes",
          "[vae]") {
  for (const auto& [family, file, count] :
       {std::tuple<std::string, std::string, int64_t>{
            "qwen_image", "qwen_image_vae_state_dict.tsv", 126892531},
        {"zimage", "zimage_flux_vae_state_dict.tsv", 83819683}}) {
    INFO(family);
    const auto vae = make(family, "default");
    const auto expected = mold::test::read_state_dict_listing(file);
    mold::test::ShapeMap got;
    for (const auto& [name, t] : vae->parameters()) got[name] = t.sizes().vec();
    mold::test::check_same_state_dict(expected, got);
    CHECK(vae->parameter_count() == count);
  }
}

TEST_CASE(
    "a causal 3-D convolution on one frame is the 2-D one with the last "
    "temporal slice",
    "[vae]") {
  at::manual_seed(2);
  const at::Tensor x = at::randn({2, 5, 11, 9});
  const at::Tensor w = at::randn({7, 5, 3, 3, 3});
  const at::Tensor b = at::randn({7});
  // The causal pad: two zero frames in front, one pixel around.
  const at::Tensor padded =
      at::constant_pad_nd(x.unsqueeze(2), {1, 1, 1, 1, 2, 0}, 0);
  const at::Tensor three_d = at::conv3d(padded, w, b).squeeze(2);
  const at::Tensor two_d = at::conv2d(x, w.select(2, 2), b, {1, 1}, {1, 1});
  CHECK(relative_l2(two_d, three_d) <= 1e-6);
  const at::Tensor center = at::conv2d(x, w.select(2, 1), b, {1, 1}, {1, 1});
  CHECK(relative_l2(center, three_d) > 0.1);  // the centre slice would be wrong
}

TEST_CASE("tiny VAEs: shapes, determinism, exact bounded runs", "[vae]") {
  at::manual_seed(4);
  const at::Tensor image = at::rand({1, 3, 64, 48}) * 2 - 1;
  for (const std::string family : {"qwen_image", "zimage"}) {
    INFO(family);
    const auto vae = make(family, "tiny", 7);
    const auto again = make(family, "tiny", 7);
    const auto other = make(family, "tiny", 8);
    const VaeRunOptions whole;
    const at::Tensor z = vae->encode(image, whole);
    CHECK(z.sizes() == at::IntArrayRef({1, 16, 8, 6}));
    const at::Tensor x = vae->decode(z, whole);
    CHECK(x.sizes() == at::IntArrayRef({1, 3, 64, 48}));
    CHECK(at::isfinite(x).all().item<bool>());
    CHECK(at::equal(again->encode(image, whole), z));
    CHECK_FALSE(at::equal(other->encode(image, whole), z));
    // Bounded convolutions and chunked attention: the same sums in another
    // order; each convolution is within 1e-6, the whole network within 1e-5.
    VaeRunOptions bounded;
    bounded.bounded = true;
    bounded.workspace_bound = 64 * kKiB;
    CHECK(relative_l2(vae->encode(image, bounded), z) <= 1e-5);
    CHECK(relative_l2(vae->decode(z, bounded), x) <= 1e-5);
    // Latent scaling round trip.
    CHECK(relative_l2(vae->unscale_latent(vae->scale_latent(z)), z) <= 1e-6);
  }
}

TEST_CASE(
    "VAE weights round-trip through safetensors; a wrong checkpoint is named",
    "[vae][safetensors]") {
  mold::test::TempDir dir;
  const auto vae = make("zimage", "tiny", 3);
  std::vector<std::pair<std::string, at::Tensor>> tensors(
      vae->parameters().begin(), vae->parameters().end());
  const std::string path = dir.path() + "/vae.safetensors";
  save_safetensors(path, tensors);
  auto fresh = make("zimage", "tiny", 99);
  const auto load = [](mold::Vae& vae, const std::string& file) {
    return vae.load(mold::WeightSet::open(file), c10::Device(c10::kCPU),
                    at::kFloat);
  };
  CHECK(load(*fresh, path).warning().empty());
  const at::Tensor latent = at::randn({1, 16, 4, 4});
  CHECK(at::equal(fresh->decode(latent, {}), vae->decode(latent, {})));

  // A Z-Image checkpoint is not a Qwen-Image one.
  auto qwen = make("qwen_image", "tiny");
  CHECK_THROWS_WITH(load(*qwen, path), Catch::Contains(path) &&
                                           Catch::Contains("are missing") &&
                                           Catch::Contains("qwen_image VAE"));
  // A tensor of the wrong shape is named, with both shapes.
  auto misshaped = tensors;
  for (auto& [name, t] : misshaped)
    if (name == "decoder.conv_in.weight") t = at::zeros({1});
  save_safetensors(path, misshaped);
  CHECK_THROWS_WITH(load(*make("zimage", "tiny"), path),
                    Catch::Contains("'decoder.conv_in.weight' has shape [1]") &&
                        Catch::Contains("expects [64, 16, 3, 3]"));
  // An extra tensor (a post_quant_conv the FLUX VAE does not have) is a
  // warning that names it, and an error when strict.
  tensors.emplace_back("post_quant_conv.weight", at::zeros({16, 16, 1, 1}));
  save_safetensors(path, tensors);
  const mold::LoadReport report = load(*fresh, path);
  CHECK(report.unexpected_count == 1);
  CHECK_THAT(report.warning(), Catch::Contains("'post_quant_conv.weight'"));
  CHECK_THROWS_WITH(
      fresh->load(mold::WeightSet::open(path), c10::Device(c10::kCPU),
                  at::kFloat, mold::LoadOptions{"", true, {}}),
      Catch::Contains("post_quant_conv.weight"));
  CHECK_THROWS_WITH(make("zimage", "huge"),
                    Catch::Contains("'default' and 'tiny'"));
}
