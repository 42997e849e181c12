// The Qwen3 text encoder of Z-Image: the public checkpoint's names and
// shapes, causal attention that never sees padding, the hidden state the
// pipeline takes, seeded determinism, checkpoint round trips, config.json
// parsing and input checks.
#include <catch2/catch.hpp>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/model/text_encoder.hpp>
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

std::unique_ptr<TextEncoder> make(const ArchSpec& arch) {
  const ModelFamily* f = mold::test::real_plugins().family("zimage");
  REQUIRE(f);
  REQUIRE(f->make_text_encoder);
  return f->make_text_encoder(arch);
}

std::unique_ptr<TextEncoder> tiny(std::uint64_t seed) {
  auto encoder = make(ArchSpec::parse("tiny"));
  encoder->init_from_seed(seed);
  return encoder;
}

at::Tensor ids_of(std::vector<int64_t> ids) {
  return at::tensor(ids, at::kLong).view({1, int64_t(ids.size())});
}

std::string write_config(const std::string& dir, const std::string& name,
                         const std::string& extra) {
  const std::string path = dir + "/" + name;
  std::ofstream out(path);
  out << R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
    "vocab_size": 1000, "hidden_size": 48, "intermediate_size": 80,
    "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 16, "rms_norm_eps": 1e-06, "rope_theta": 1000000,
    "rope_scaling": null, "hidden_act": "silu", "attention_bias": false,
    "max_position_embeddings": 64, "tie_word_embeddings": true)"
      << extra << "}";
  return path;
}

}  // namespace

TEST_CASE(
    "the Qwen3 text encoder declares exactly the published Z-Image "
    "text_encoder's names and shapes, without memory",
    "[text_encoder]") {
  const auto encoder = make(ArchSpec::parse("default"));
  const auto expected = mold::test::read_state_dict_listing(
      "zimage_qwen3_text_encoder_state_dict.tsv");
  mold::test::ShapeMap got;
  // The published checkpoint is a Qwen3ForCausalLM one: "model." + the
  // Qwen3Model names.
  for (const auto& [name, t] : encoder->parameters())
    got["model." + name] = t.sizes().vec();
  mold::test::check_same_state_dict(expected, got);
  CHECK(encoder->parameter_count() == 4022468096);
  CHECK(encoder->resident_bytes() == 0);
  CHECK_FALSE(encoder->materialized());
  CHECK(encoder->hidden_size() == 2560);
  CHECK(encoder->vocab_size() == 151936);
  CHECK_THAT(encoder->describe(), Catch::Contains("Qwen3, default"));
}

TEST_CASE("tiny Qwen3: shapes, dtype, seeded determinism", "[text_encoder]") {
  const auto encoder = tiny(7);
  CHECK(encoder->hidden_size() == 32);
  CHECK(encoder->vocab_size() == 151936);  // the real tokenizer's ids
  at::manual_seed(1);
  const at::Tensor ids = at::randint(0, 151936, {2, 9}, at::kLong);
  const at::Tensor mask = at::ones({2, 9}, at::kLong);
  const at::Tensor h = encoder->encode(ids, mask);
  CHECK(h.sizes() == at::IntArrayRef({2, 9, 32}));
  CHECK(h.scalar_type() == at::kFloat);
  CHECK(at::isfinite(h).all().item<bool>());
  CHECK(at::equal(tiny(7)->encode(ids, mask), h));
  CHECK_FALSE(at::equal(tiny(8)->encode(ids, mask), h));
  // The same weights in bfloat16 give the same hidden state, roughly, in
  // bfloat16.
  encoder->to(c10::Device(c10::kCPU), at::kBFloat16);
  const at::Tensor half = encoder->encode(ids, mask);
  CHECK(half.scalar_type() == at::kBFloat16);
  CHECK(relative_l2(half.to(at::kFloat), h) < 0.05);
}

TEST_CASE(
    "the hidden state is the second-to-last layer's output, before the final "
    "norm: the last layer and the norm are loaded but unused",
    "[text_encoder][safetensors]") {
  mold::test::TempDir dir;
  const auto encoder = tiny(3);  // 3 layers: encode runs layers 0 and 1
  const at::Tensor ids = ids_of({9, 151935, 0, 42, 7});
  const at::Tensor mask = at::ones({1, 5}, at::kLong);
  const at::Tensor h = encoder->encode(ids, mask);
  const auto with = [&](const std::string& changed) {
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    for (const auto& [name, t] : encoder->parameters())
      tensors.emplace_back(name, name == changed ? t * 1.5 + 0.25 : t);
    const std::string path = dir.path() + "/changed.safetensors";
    save_safetensors(path, tensors);
    auto other = make(ArchSpec::parse("tiny"));
    other->load(WeightSet::open(path), c10::Device(c10::kCPU), at::kFloat);
    return other->encode(ids, mask);
  };
  CHECK(at::equal(with("norm.weight"), h));
  CHECK(at::equal(with("layers.2.mlp.down_proj.weight"), h));
  CHECK(at::equal(with("layers.2.self_attn.q_proj.weight"), h));
  CHECK_FALSE(at::equal(with("layers.1.mlp.down_proj.weight"), h));
  CHECK_FALSE(at::equal(with("layers.1.self_attn.k_norm.weight"), h));
  CHECK_FALSE(at::equal(with("layers.0.input_layernorm.weight"), h));
  CHECK_FALSE(at::equal(with("embed_tokens.weight"), h));
}

TEST_CASE(
    "attention is causal and never sees padding: padded and unpadded prompts "
    "give the same hidden states for their real tokens",
    "[text_encoder]") {
  const auto encoder = tiny(11);
  const std::vector<int64_t> a = {151644, 872, 198, 9707, 1879, 151645};
  const std::vector<int64_t> b = {151644, 872, 198, 151645};
  // Right padding to 8, as the pipeline's tokenizer pads to its max length;
  // the pad ids differ between the two batches and must not matter.
  at::Tensor ids = at::zeros({2, 8}, at::kLong);
  at::Tensor mask = at::zeros({2, 8}, at::kBool);
  for (std::size_t i = 0; i < a.size(); ++i) ids[0][i] = a[i];
  for (std::size_t i = 0; i < b.size(); ++i) ids[1][i] = b[i];
  mask.narrow(1, 0, 6)[0].fill_(true);
  mask.narrow(1, 0, 4)[1].fill_(true);
  at::Tensor other_pads = ids.clone();
  other_pads.masked_fill_(mask.logical_not(), 151643);
  const at::Tensor batch = encoder->encode(ids, mask);
  const at::Tensor repadded = encoder->encode(other_pads, mask.to(at::kLong));
  const at::Tensor alone_a =
      encoder->encode(ids_of(a), at::ones({1, 6}, at::kLong));
  const at::Tensor alone_b =
      encoder->encode(ids_of(b), at::ones({1, 4}, at::kLong));
  CHECK(relative_l2(batch[0].narrow(0, 0, 6), alone_a[0]) <= 1e-6);
  CHECK(relative_l2(batch[1].narrow(0, 0, 4), alone_b[0]) <= 1e-6);
  CHECK(relative_l2(repadded[0].narrow(0, 0, 6), alone_a[0]) <= 1e-6);
  CHECK(relative_l2(repadded[1].narrow(0, 0, 4), alone_b[0]) <= 1e-6);
  CHECK(at::isfinite(batch).all().item<bool>());
  // Causal: a later token does not change the earlier ones' states.
  std::vector<int64_t> changed = a;
  changed[4] = 3;
  const at::Tensor later =
      encoder->encode(ids_of(changed), at::ones({1, 6}, at::kLong));
  CHECK(relative_l2(later[0].narrow(0, 0, 4), alone_a[0].narrow(0, 0, 4)) <=
        1e-6);
  CHECK(relative_l2(later[0].narrow(0, 4, 2), alone_a[0].narrow(0, 4, 2)) >
        1e-3);
  // A sequence that is all padding stays finite (nothing to attend to).
  CHECK(at::isfinite(encoder->encode(ids, at::zeros({2, 8}, at::kLong)))
            .all()
            .item<bool>());
}

TEST_CASE(
    "Qwen3 weights load from a Qwen3ForCausalLM checkpoint (model. prefix); "
    "a wrong checkpoint is named",
    "[text_encoder][safetensors]") {
  mold::test::TempDir dir;
  const auto encoder = tiny(5);
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const auto& [name, t] : encoder->parameters())
    tensors.emplace_back("model." + name, t);
  // The tied lm_head a causal-LM checkpoint may carry is not ours: a warning.
  tensors.emplace_back("lm_head.weight",
                       encoder->parameters().at("embed_tokens.weight"));
  const std::string path = dir.path() + "/model.safetensors";
  save_safetensors(path, tensors);
  auto fresh = make(ArchSpec::parse("tiny"));
  const WeightSet weights = WeightSet::open(path);
  const LoadReport report =
      fresh->load(weights, c10::Device(c10::kCPU), at::kFloat,
                  LoadOptions{"model.", false, {}});
  CHECK(report.tensors == encoder->parameters().size());
  CHECK(report.unexpected_count == 1);
  CHECK_THAT(report.warning(), Catch::Contains("lm_head.weight"));
  CHECK(fresh->materialized());
  const at::Tensor ids = ids_of({1, 2, 3, 4});
  CHECK(at::equal(fresh->encode(ids, at::ones({1, 4}, at::kLong)),
                  encoder->encode(ids, at::ones({1, 4}, at::kLong))));
  // In bfloat16 on load.
  auto half = make(ArchSpec::parse("tiny"));
  half->load(weights, c10::Device(c10::kCPU), at::kBFloat16,
             LoadOptions{"model.", false, {}});
  CHECK(half->dtype() == at::kBFloat16);
  // Without the prefix every tensor is missing, and the message says so.
  CHECK_THROWS_WITH(make(ArchSpec::parse("tiny"))
                        ->load(weights, c10::Device(c10::kCPU), at::kFloat),
                    Catch::Contains(path) &&
                        Catch::Contains("'embed_tokens.weight'") &&
                        Catch::Contains("zimage text encoder (Qwen3, tiny)"));
  // Another width, the same names: the shapes are named.
  const std::string wider = dir.write(
      "wider.json",
      R"({"vocab_size": 151936, "hidden_size": 40, "intermediate_size": 64,
          "num_hidden_layers": 3, "num_attention_heads": 4,
          "num_key_value_heads": 2, "head_dim": 8})");
  CHECK_THROWS_WITH(make(ArchSpec::from_config(wider))
                        ->load(weights, c10::Device(c10::kCPU), at::kFloat,
                               LoadOptions{"model.", false, {}}),
                    Catch::Contains("has shape [151936, 32]") &&
                        Catch::Contains("expects [151936, 40]"));
  // Unseeded, unloaded: encode says what to do.
  CHECK_THROWS_WITH(
      make(ArchSpec::parse("tiny"))->encode(ids, at::ones({1, 4}, at::kLong)),
      Catch::Contains("load weights or seed"));
}

TEST_CASE("a transformers config.json describes the architecture",
          "[text_encoder][config]") {
  mold::test::TempDir dir;
  const auto encoder =
      make(ArchSpec::from_config(write_config(dir.path(), "ok.json", "")));
  const auto& params = encoder->parameters();
  CHECK(encoder->hidden_size() == 48);
  CHECK(encoder->vocab_size() == 1000);
  // 4 heads of 16 (64 wide, not the hidden size), 2 key/value heads.
  CHECK(params.at("layers.3.self_attn.q_proj.weight").sizes() ==
        at::IntArrayRef({64, 48}));
  CHECK(params.at("layers.3.self_attn.k_proj.weight").sizes() ==
        at::IntArrayRef({32, 48}));
  CHECK(params.at("layers.3.self_attn.o_proj.weight").sizes() ==
        at::IntArrayRef({48, 64}));
  CHECK(params.at("layers.0.self_attn.q_norm.weight").sizes() ==
        at::IntArrayRef({16}));
  CHECK(params.at("layers.0.mlp.down_proj.weight").sizes() ==
        at::IntArrayRef({48, 80}));
  CHECK(params.count("layers.0.self_attn.q_proj.bias") == 0);
  encoder->init_from_seed(1);
  CHECK(
      encoder->encode(ids_of({999, 0}), at::ones({1, 2}, at::kLong)).sizes() ==
      at::IntArrayRef({1, 2, 48}));
  // max_position_embeddings bounds the sequence.
  CHECK_THROWS_WITH(
      encoder->encode(at::zeros({1, 65}, at::kLong),
                      at::ones({1, 65}, at::kLong)),
      Catch::Contains("65 tokens") && Catch::Contains("at most 64"));

  // attention_bias: q/k/v/o biases, as transformers declares them.
  const auto biased = make(ArchSpec::from_config(
      write_config(dir.path(), "bias.json", R"(, "attention_bias": true)")));
  CHECK(biased->parameters().at("layers.1.self_attn.k_proj.bias").sizes() ==
        at::IntArrayRef({32}));
  CHECK(biased->parameters().count("layers.1.self_attn.o_proj.bias") == 1);
  // transformers 5's rope_parameters with the default rope is fine.
  CHECK_NOTHROW(make(ArchSpec::from_config(write_config(
      dir.path(), "rope5.json",
      R"(, "rope_parameters": {"rope_type": "default", "rope_theta": 5e5})"))));

  // What cannot be honoured is a ConfigError naming the file and the key.
  const std::vector<std::tuple<std::string, std::string, std::string>> bad = {
      {R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0})",
       "'rope_scaling'", "yarn"},
      {R"(, "rope_parameters": {"rope_type": "linear", "factor": 2.0})",
       "'rope_parameters'", "linear"},
      {R"(, "hidden_act": "gelu")", "'hidden_act'", "gelu"},
      {R"(, "num_key_value_heads": 3)", "'num_key_value_heads'",
       "does not divide"},
      {R"(, "use_sliding_window": true)", "'use_sliding_window'",
       "sliding-window"},
      {R"(, "model_type": "qwen2")", "'model_type'", "qwen2"},
      {R"(, "head_dim": 15)", "'head_dim'", "even"},
      {R"(, "hidden_size": 0)", "'hidden_size'", "out of range"},
      // Refused by name, not run into an out-of-memory.
      {R"(, "hidden_size": 1099511627776)", "'hidden_size'", "out of range"},
      {R"(, "num_hidden_layers": 100000)", "'num_hidden_layers'",
       "out of range"},
      {R"(, "num_hidden_layers": "4")", "'num_hidden_layers'", ""},
  };
  int n = 0;
  for (const auto& [extra, key, problem] : bad) {
    INFO(extra);
    // A repeated key: nlohmann keeps the last one, so `extra` overrides.
    const std::string path =
        write_config(dir.path(), "bad" + std::to_string(n++) + ".json", extra);
    CHECK_THROWS_AS(make(ArchSpec::from_config(path)), ConfigError);
    CHECK_THROWS_WITH(make(ArchSpec::from_config(path)),
                      Catch::Contains(path) && Catch::Contains(key) &&
                          Catch::Contains(problem));
  }
  {
    const std::string path = dir.path() + "/missing.json";
    std::ofstream(path) << R"({"model_type": "qwen3", "vocab_size": 10})";
    CHECK_THROWS_WITH(make(ArchSpec::from_config(path)),
                      Catch::Contains(path) && Catch::Contains("hidden_size") &&
                          Catch::Contains("missing"));
  }
  CHECK_THROWS_AS(make(ArchSpec::from_config(dir.path() + "/absent.json")),
                  ConfigError);
  ArchSpec unknown;
  unknown.name = "huge";
  CHECK_THROWS_WITH(make(unknown), Catch::Contains("'default', 'tiny'") &&
                                       Catch::Contains("'huge'"));
}

TEST_CASE("bad input ids and masks are named with their values",
          "[text_encoder]") {
  const auto encoder = tiny(2);
  const at::Tensor ones = at::ones({1, 3}, at::kLong);
  CHECK_THROWS_WITH(encoder->encode(ids_of({5, 151936, 7}), ones),
                    Catch::Contains("input_ids[0, 1] is 151936") &&
                        Catch::Contains("[0, 151936)"));
  CHECK_THROWS_WITH(encoder->encode(ids_of({5, 6, -1}), ones),
                    Catch::Contains("input_ids[0, 2] is -1"));
  CHECK_THROWS_AS(encoder->encode(ids_of({5, 151936, 7}), ones),
                  InvalidArgument);
  CHECK_THROWS_WITH(
      encoder->encode(ids_of({1, 2, 3}).to(at::kInt), ones),
      Catch::Contains("input_ids has dtype Int") && Catch::Contains("int64"));
  CHECK_THROWS_WITH(encoder->encode(at::zeros({3}, at::kLong), ones),
                    Catch::Contains("input_ids has shape [3]"));
  CHECK_THROWS_WITH(encoder->encode(at::zeros({1, 0}, at::kLong),
                                    at::zeros({1, 0}, at::kLong)),
                    Catch::Contains("no tokens"));
  CHECK_THROWS_WITH(encoder->encode(ids_of({1, 2, 3}), at::ones({1, 4})),
                    Catch::Contains("attention_mask has shape [1, 4]") &&
                        Catch::Contains("[1, 3]"));
  CHECK_THROWS_WITH(encoder->encode(ids_of({1, 2, 3}), at::ones({1, 3})),
                    Catch::Contains("attention_mask has dtype Float"));
  CHECK_THROWS_AS(encoder->encode(ids_of({1, 2, 3}), at::Tensor()),
                  InvalidArgument);
  CHECK_NOTHROW(
      encoder->encode(ids_of({1, 2, 3}), at::ones({1, 3}, at::kBool)));
  CHECK_NOTHROW(encoder->encode(ids_of({1, 2, 3}), at::ones({1, 3}, at::kInt)));
}
