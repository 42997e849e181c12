// Writes a model directory at a published architecture with random weights,
// as the published checkpoint lays it out (diffusers' model_index.json, each
// component's config.json, bf16 safetensors shards with their index, the
// tokenizer files, the scheduler config): the test bed for estimates, loading
// and parking at the sizes users run (bench/published/run.sh). The tensor
// names and shapes come from the listings in tests/data (read from the
// reference implementations at the published configs); the values are random,
// scaled so that activations stay finite through every layer:
//
//   1-D weights (norm scales)     1
//   biases                        0
//   other tensors                 normal(0, 1) / sqrt(fan_in), fan_in the
//                                 product of every dimension but the first
//
//   write_random_model zimage DIR [--seed N] [--shard-gib G]
//
// Prints what it writes and checks the free disk space first (the directory's
// size + 1 GiB), refusing with what is needed instead of failing half-way.

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <sys/statvfs.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <mold/base/bytes.hpp>
#include <mold/tensor/safetensors.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench_paths.hpp"

namespace fs = std::filesystem;

namespace {

struct Listed {
  std::string name;
  std::vector<std::int64_t> shape;
  std::uint64_t bytes() const {
    std::uint64_t n = 2;  // bf16
    for (auto d : shape) n *= std::uint64_t(d);
    return n;
  }
};

/// A listing of tests/data: "name<TAB>AxBxC" lines, '#' comments.
std::vector<Listed> read_listing(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::vector<Listed> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    if (tab == std::string::npos)
      throw std::runtime_error(path.string() + ": no tab in: " + line);
    Listed l;
    l.name = line.substr(0, tab);
    std::stringstream dims(line.substr(tab + 1));
    std::string dim;
    while (std::getline(dims, dim, 'x')) l.shape.push_back(std::stoll(dim));
    out.push_back(std::move(l));
  }
  return out;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

at::Tensor random_value(const Listed& l) {
  if (ends_with(l.name, ".bias")) return at::zeros(l.shape, at::kBFloat16);
  if (l.shape.size() == 1) return at::ones(l.shape, at::kBFloat16);
  double fan_in = 1;
  for (std::size_t i = 1; i < l.shape.size(); ++i) fan_in *= double(l.shape[i]);
  return (at::randn(l.shape) / std::sqrt(fan_in)).to(at::kBFloat16);
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

/// The component's tensors in shards of at most `shard_bytes` (one tensor
/// larger than that gets a shard of its own), named as the published ones are,
/// with the index beside them when there is more than one.
void write_component(const fs::path& dir, const std::string& stem,
                     const std::vector<Listed>& tensors,
                     std::uint64_t shard_bytes) {
  fs::create_directories(dir);
  std::vector<std::vector<const Listed*>> shards(1);
  std::uint64_t in_shard = 0;
  for (const Listed& l : tensors) {
    if (in_shard > 0 && in_shard + l.bytes() > shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(&l);
    in_shard += l.bytes();
  }
  nlohmann::json index;
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const std::string file =
        shards.size() == 1 ? stem + ".safetensors"
                           : fmt::format("{}-{:05d}-of-{:05d}.safetensors",
                                         stem, i + 1, shards.size());
    std::vector<std::pair<std::string, at::Tensor>> values;
    std::uint64_t bytes = 0;
    for (const Listed* l : shards[i]) {
      values.emplace_back(l->name, random_value(*l));
      index["weight_map"][l->name] = file;
      bytes += l->bytes();
    }
    mold::save_safetensors(dir / file, values, {{"format", "pt"}});
    total += bytes;
    fmt::print("  {} ({}, {} tensors)\n", (dir / file).string(),
               mold::format_bytes(bytes), values.size());
  }
  if (shards.size() > 1) {
    index["metadata"]["total_size"] = total;
    write_text(dir / (stem + ".safetensors.index.json"), index.dump(2));
  }
}

std::uint64_t total_bytes(const std::vector<Listed>& tensors) {
  std::uint64_t n = 0;
  for (const auto& l : tensors) n += l.bytes();
  return n;
}

int write_zimage(const fs::path& out, std::uint64_t shard_bytes) {
  const fs::path data = mold_bench::kTestDataDir;
  const auto text =
      read_listing(data / "zimage_qwen3_text_encoder_state_dict.tsv");
  const auto dit = read_listing(data / "zimage_transformer_state_dict.tsv");
  const auto vae = read_listing(data / "zimage_flux_vae_state_dict.tsv");
  const std::uint64_t needed =
      total_bytes(text) + total_bytes(dit) + total_bytes(vae);
  fs::create_directories(out);
  struct statvfs disk {};
  if (statvfs(out.c_str(), &disk) == 0) {
    const std::uint64_t free = std::uint64_t(disk.f_bavail) * disk.f_frsize;
    if (free < needed + (std::uint64_t(1) << 30)) {
      fmt::print(stderr,
                 "write_random_model: {} needs {} (+ 1 GiB) and its disk has "
                 "{} free: free some space or give another directory\n",
                 out.string(), mold::format_bytes(needed),
                 mold::format_bytes(free));
      return 1;
    }
  }
  fmt::print(
      "Z-Image-Turbo at the published architecture, random bf16 "
      "weights: {} in {}\n",
      mold::format_bytes(needed), out.string());
  // Tongyi-MAI/Z-Image-Turbo's configs (the values the listings were made
  // at; tests/data/README.md).
  write_text(out / "model_index.json", R"({
  "_class_name": "ZImagePipeline", "_diffusers_version": "0.36.0",
  "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"],
  "text_encoder": ["transformers", "Qwen3Model"],
  "tokenizer": ["transformers", "Qwen2Tokenizer"],
  "transformer": ["diffusers", "ZImageTransformer2DModel"],
  "vae": ["diffusers", "AutoencoderKL"]})");
  write_text(out / "scheduler" / "scheduler_config.json", R"({
  "_class_name": "FlowMatchEulerDiscreteScheduler", "num_train_timesteps": 1000,
  "shift": 3.0, "use_dynamic_shifting": false})");
  write_text(out / "text_encoder" / "config.json", R"({
  "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"],
  "vocab_size": 151936, "hidden_size": 2560, "intermediate_size": 9728,
  "num_hidden_layers": 36, "num_attention_heads": 32,
  "num_key_value_heads": 8, "head_dim": 128, "rms_norm_eps": 1e-6,
  "rope_theta": 1000000, "rope_scaling": null, "attention_bias": false,
  "hidden_act": "silu", "max_position_embeddings": 40960,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16"})");
  write_text(out / "transformer" / "config.json", R"({
  "_class_name": "ZImageTransformer2DModel", "all_patch_size": [2],
  "all_f_patch_size": [1], "in_channels": 16, "dim": 3840, "n_layers": 30,
  "n_refiner_layers": 2, "n_heads": 30, "n_kv_heads": 30, "norm_eps": 1e-5,
  "qk_norm": true, "cap_feat_dim": 2560, "rope_theta": 256.0,
  "t_scale": 1000.0, "axes_dims": [32, 48, 48],
  "axes_lens": [1536, 512, 512]})");
  // As published (diffusers builds a one-block VAE without the block types).
  write_text(out / "vae" / "config.json", R"({
  "_class_name": "AutoencoderKL", "in_channels": 3, "out_channels": 3,
  "latent_channels": 16, "block_out_channels": [128, 256, 512, 512],
  "down_block_types": ["DownEncoderBlock2D", "DownEncoderBlock2D",
                       "DownEncoderBlock2D", "DownEncoderBlock2D"],
  "up_block_types": ["UpDecoderBlock2D", "UpDecoderBlock2D",
                     "UpDecoderBlock2D", "UpDecoderBlock2D"],
  "act_fn": "silu", "layers_per_block": 2, "norm_num_groups": 32,
  "mid_block_add_attention": true, "force_upcast": true, "sample_size": 1024,
  "scaling_factor": 0.3611, "shift_factor": 0.1159,
  "use_quant_conv": false, "use_post_quant_conv": false})");
  const fs::path plugins = mold_bench::kPluginDir;
  fs::create_directories(out / "tokenizer");
  fs::copy_file(plugins / "zimage.tokenizer.json",
                out / "tokenizer" / "tokenizer.json",
                fs::copy_options::overwrite_existing);
  fs::copy_file(plugins / "zimage.tokenizer_config.json",
                out / "tokenizer" / "tokenizer_config.json",
                fs::copy_options::overwrite_existing);
  write_component(out / "text_encoder", "model", text, shard_bytes);
  write_component(out / "transformer", "diffusion_pytorch_model", dit,
                  shard_bytes);
  write_component(out / "vae", "diffusion_pytorch_model", vae,
                  std::uint64_t(1) << 40);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr,
               "usage: write_random_model zimage DIR [--seed N] "
               "[--shard-gib G]\n");
    return 2;
  }
  const std::string family = argv[1];
  const fs::path out = argv[2];
  std::uint64_t seed = 0;
  double shard_gib = 5;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seed") {
      seed = std::stoull(argv[i + 1]);
    } else if (flag == "--shard-gib") {
      shard_gib = std::stod(argv[i + 1]);
    } else {
      fmt::print(stderr, "write_random_model: unknown flag {}\n", flag);
      return 2;
    }
  }
  if (!(shard_gib > 0)) {
    fmt::print(stderr, "write_random_model: --shard-gib must be above 0\n");
    return 2;
  }
  at::manual_seed(seed);
  const auto shard_bytes = std::uint64_t(shard_gib * double(1ull << 30));
  try {
    if (family == "zimage") return write_zimage(out, shard_bytes);
    fmt::print(stderr, "write_random_model: family '{}': give zimage\n",
               family);
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "write_random_model: {}\n", e.what());
    return 1;
  }
}
