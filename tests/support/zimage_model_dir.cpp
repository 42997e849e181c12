#include "support/zimage_model_dir.hpp"

#include <fmt/format.h>

#include <fstream>
#include <mold/model/denoiser.hpp>
#include <mold/model/text_encoder.hpp>
#include <mold/model/vae.hpp>
#include <mold/tensor/safetensors.hpp>
#include <string>
#include <utility>
#include <vector>

#include "support/aten_for_tests.hpp"
#include "support/paths.hpp"

namespace mold::test {

namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

void copy_to(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

std::vector<std::pair<std::string, at::Tensor>> named(
    const mold::Module& module, const std::string& prefix = "") {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& [name, t] : module.parameters())
    out.emplace_back(prefix + name, t);
  return out;
}

}  // namespace

fs::path make_zimage_model_dir(const mold::ModelFamily& family,
                               const fs::path& root,
                               const fs::path& tokenizer_json,
                               const ZImageWidths& w) {
  const fs::path dir = root / "z-image-turbo";
  write(dir / "model_index.json", R"({
    "_class_name": "ZImagePipeline", "_diffusers_version": "0.36.0",
    "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"],
    "text_encoder": ["transformers", "Qwen3Model"],
    "tokenizer": ["transformers", "Qwen2Tokenizer"],
    "transformer": ["diffusers", "ZImageTransformer2DModel"],
    "vae": ["diffusers", "AutoencoderKL"]})");
  write(dir / "scheduler" / "scheduler_config.json",
        R"({"_class_name": "FlowMatchEulerDiscreteScheduler",
            "num_train_timesteps": 1000, "shift": 3.0,
            "use_dynamic_shifting": false})");
  write(dir / "text_encoder" / "config.json",
        fmt::format(
            R"({{"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"],
            "vocab_size": 151936, "hidden_size": {}, "intermediate_size": {},
            "num_hidden_layers": 3, "num_attention_heads": {},
            "num_key_value_heads": {}, "head_dim": {}, "rms_norm_eps": 1e-6,
            "rope_theta": 1000000, "rope_scaling": null,
            "attention_bias": false, "hidden_act": "silu",
            "max_position_embeddings": 40960, "tie_word_embeddings": true}})",
            w.text_hidden, w.text_intermediate, w.text_heads, w.text_kv,
            w.text_head_dim));
  write(dir / "transformer" / "config.json",
        fmt::format(R"({{"_class_name": "ZImageTransformer2DModel",
            "all_patch_size": [2], "all_f_patch_size": [1],
            "in_channels": 16, "dim": {}, "n_layers": 2,
            "n_refiner_layers": 1, "n_heads": {}, "n_kv_heads": {},
            "norm_eps": 1e-5, "qk_norm": true, "cap_feat_dim": {},
            "rope_theta": 256.0, "t_scale": 1000.0,
            "axes_dims": [8, 12, 12], "axes_lens": [1536, 512, 512]}})",
                    w.dit_heads * 32, w.dit_heads, w.dit_heads, w.text_hidden));
  write(dir / "vae" / "config.json",
        R"({"_class_name": "AutoencoderKL", "in_channels": 3,
            "out_channels": 3, "latent_channels": 16, "layers_per_block": 2,
            "block_out_channels": [32, 32, 64, 64],
            "scaling_factor": 0.3611, "shift_factor": 0.1159,
            "use_quant_conv": false, "use_post_quant_conv": false})");
  const fs::path tokenizer_dir =
      fs::path(mold::test::kDataDir) / "tokenizer" / "qwen3";
  copy_to(tokenizer_json, dir / "tokenizer" / "tokenizer.json");
  copy_to(tokenizer_dir / "tokenizer_config.json",
          dir / "tokenizer" / "tokenizer_config.json");

  auto encoder = family.make_text_encoder(
      mold::ArchSpec::from_config(dir / "text_encoder" / "config.json"));
  encoder->init_from_seed(1);
  // As published: a Qwen3ForCausalLM checkpoint, names under "model.", in
  // two shards with an index.
  auto tensors = named(*encoder, "model.");
  const std::size_t half = tensors.size() / 2;
  std::vector<std::pair<std::string, at::Tensor>> first(tensors.begin(),
                                                        tensors.begin() + half),
      second(tensors.begin() + half, tensors.end());
  mold::save_safetensors(
      dir / "text_encoder" / "model-00001-of-00002.safetensors", first);
  mold::save_safetensors(
      dir / "text_encoder" / "model-00002-of-00002.safetensors", second);
  std::string map;
  for (std::size_t i = 0; i < tensors.size(); ++i)
    map += (i ? ",\n" : "") + std::string("\"") + tensors[i].first + "\": \"" +
           (i < half ? "model-00001-of-00002.safetensors"
                     : "model-00002-of-00002.safetensors") +
           "\"";
  write(dir / "text_encoder" / "model.safetensors.index.json",
        "{\"metadata\": {}, \"weight_map\": {" + map + "}}");

  auto transformer = family.make_transformer(
      mold::ArchSpec::from_config(dir / "transformer" / "config.json"));
  transformer->init_from_seed(2);
  mold::save_safetensors(
      dir / "transformer" / "diffusion_pytorch_model.safetensors",
      named(*transformer));
  auto vae = family.make_vae("tiny", 3);
  mold::save_safetensors(dir / "vae" / "diffusion_pytorch_model.safetensors",
                         named(*vae));
  return dir;
}

}  // namespace mold::test
