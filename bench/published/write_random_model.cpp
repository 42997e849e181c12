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
// A Qwen-Image-Edit-2511 directory keeps its 20B transformer as a GGUF file
// of ggml Q4_0 blocks (as the published quantized files do; 11.4 GiB, so the
// directory fits this machine one component at a time): random 4-bit values
// whose scale gives the same spread, 1/sqrt(fan_in), the 1-D tensors in
// float32, written one tensor at a time.
//
//   write_random_model zimage|qwen-image-edit DIR [--seed N] [--shard-gib G]
//                      [--layers N]
//   write_random_model zimage-transformer|zimage-text-encoder FILE
//                      --format q8_0|q4_0|q4_k|fp8 [--seed N] [--layers N]
//
// The second form writes one component as the single file people download
// (random_files.hpp): Z-Image's transformer in ComfyUI's Lumina2 names, a
// `lumina2` GGUF as city96's converter writes it or a scaled fp8
// safetensors; its Qwen3 text encoder as llama.cpp's `qwen3` GGUF. Given to
// `mold run --transformer FILE` / `--text-encoder FILE` beside a directory of
// the first form, they are the variants of bench/published/estimates.sh.
//
// --layers N keeps the first N layers of the text encoder's language model
// and of the transformer (their configs say N; the vision tower and the VAE
// stay whole): the published widths, so every layer's working memory is the
// published one, in minutes instead of an hour (molddiag calibrate's points).
//
// Prints what it writes and checks the free disk space first (the directory's
// size + 1 GiB), refusing with what is needed instead of failing half-way.

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mold/base/bytes.hpp>
#include <mold/base/text.hpp>
#include <mold/tensor/safetensors.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench_paths.hpp"
#include "listing.hpp"
#include "random_files.hpp"

namespace fs = std::filesystem;

namespace {

using mold_bench::Listed;
using mold_bench::read_listing;

at::Tensor random_value(const Listed& l) {
  if (mold::ends_with(l.name, ".bias"))
    return at::zeros(l.shape, at::kBFloat16);
  if (l.shape.size() == 1) return at::ones(l.shape, at::kBFloat16);
  return (at::randn(l.shape) / std::sqrt(l.fan_in())).to(at::kBFloat16);
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

/// Whether `out`'s disk has `needed` bytes + 1 GiB free; says what is
/// missing when not.
bool enough_disk(const fs::path& out, std::uint64_t needed) {
  fs::create_directories(out);
  struct statvfs disk {};
  if (statvfs(out.c_str(), &disk) != 0) return true;
  const std::uint64_t free = std::uint64_t(disk.f_bavail) * disk.f_frsize;
  if (free >= needed + (std::uint64_t(1) << 30)) return true;
  fmt::print(stderr,
             "write_random_model: {} needs {} (+ 1 GiB) and its disk has {} "
             "free: free some space or give another directory\n",
             out.string(), mold::format_bytes(needed),
             mold::format_bytes(free));
  return false;
}

/// The Qwen tokenizer files a family plugin ships, as a diffusers
/// directory's tokenizer/ holds them.
void copy_tokenizer(const std::string& family, const fs::path& to) {
  const fs::path plugins = mold_bench::kPluginDir;
  fs::create_directories(to);
  for (const char* file : {"tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(plugins / (family + "." + file), to / file,
                  fs::copy_options::overwrite_existing);
}

struct Options {
  std::uint64_t shard_bytes = 0;
  std::uint64_t seed = 0;
  int layers = 0;  ///< 0: all of them
  std::optional<mold_bench::FileFormat> format;  ///< the single-file forms
};

/// The layer a tensor belongs to (the number after "model.layers.",
/// "transformer_blocks." or a leading "layers."), or -1.
long layer_of(const std::string& name) {
  for (const char* stem :
       {"model.layers.", "transformer_blocks.", "layers.", "blk."}) {
    const std::string s = stem;
    if (name.compare(0, s.size(), s) != 0) continue;
    return std::stol(name.substr(s.size()));
  }
  return -1;
}

std::vector<Listed> keep_layers(std::vector<Listed> tensors, int layers) {
  if (layers <= 0) return tensors;
  tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                               [&](const Listed& l) {
                                 return layer_of(l.name) >= layers;
                               }),
                tensors.end());
  return tensors;
}

/// Writes a config.json, each of `layer_keys` (a JSON pointer such as
/// "/text_config/num_hidden_layers", where present) set to --layers.
void write_config(const fs::path& path, const nlohmann::json& config,
                  int layers, const std::vector<std::string>& layer_keys) {
  nlohmann::json out = config;
  out.erase("_comment");  // tests/data's note of where the values were read
  for (const auto& key : layer_keys) {
    const nlohmann::json::json_pointer pointer(key);
    if (layers > 0 && out.contains(pointer)) out[pointer] = layers;
  }
  write_text(path, out.dump(2));
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

int write_zimage(const fs::path& out, const Options& o) {
  const fs::path data = mold_bench::kTestDataDir;
  const auto text = keep_layers(
      read_listing(data / "zimage_qwen3_text_encoder_state_dict.tsv"),
      o.layers);
  const auto dit = keep_layers(
      read_listing(data / "zimage_transformer_state_dict.tsv"), o.layers);
  const auto vae = read_listing(data / "zimage_flux_vae_state_dict.tsv");
  const std::uint64_t needed =
      total_bytes(text) + total_bytes(dit) + total_bytes(vae);
  if (!enough_disk(out, needed)) return 1;
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
  write_config(out / "text_encoder" / "config.json", nlohmann::json::parse(R"({
  "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"],
  "vocab_size": 151936, "hidden_size": 2560, "intermediate_size": 9728,
  "num_hidden_layers": 36, "num_attention_heads": 32,
  "num_key_value_heads": 8, "head_dim": 128, "rms_norm_eps": 1e-6,
  "rope_theta": 1000000, "rope_scaling": null, "attention_bias": false,
  "hidden_act": "silu", "max_position_embeddings": 40960,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16"})"),
               o.layers, {"/num_hidden_layers"});
  write_config(out / "transformer" / "config.json", nlohmann::json::parse(R"({
  "_class_name": "ZImageTransformer2DModel", "all_patch_size": [2],
  "all_f_patch_size": [1], "in_channels": 16, "dim": 3840, "n_layers": 30,
  "n_refiner_layers": 2, "n_heads": 30, "n_kv_heads": 30, "norm_eps": 1e-5,
  "qk_norm": true, "cap_feat_dim": 2560, "rope_theta": 256.0,
  "t_scale": 1000.0, "axes_dims": [32, 48, 48],
  "axes_lens": [1536, 512, 512]})"),
               o.layers, {"/n_layers"});
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
  copy_tokenizer("zimage", out / "tokenizer");
  write_component(out / "text_encoder", "model", text, o.shard_bytes);
  write_component(out / "transformer", "diffusion_pytorch_model", dit,
                  o.shard_bytes);
  write_component(out / "vae", "diffusion_pytorch_model", vae,
                  std::uint64_t(1) << 40);
  return 0;
}

int write_qwen_image_edit(const fs::path& out, const Options& o) {
  const fs::path data = mold_bench::kTestDataDir;
  const auto text = keep_layers(
      read_listing(data / "qwen25vl_text_encoder_state_dict.tsv"), o.layers);
  const auto dit = keep_layers(
      read_listing(data / "qwen_image_transformer_state_dict.tsv"), o.layers);
  const auto vae = read_listing(data / "qwen_image_vae_state_dict.tsv");
  const auto q4_0 = mold_bench::FileFormat::q4_0;
  const std::uint64_t dit_bytes = mold_bench::random_file_bytes(dit, q4_0);
  const std::uint64_t needed = total_bytes(text) + dit_bytes + total_bytes(vae);
  if (!enough_disk(out, needed)) return 1;
  fmt::print(
      "Qwen-Image-Edit-2511 at the published architecture, random weights "
      "(text encoder and VAE bf16, transformer Q4_0): {} in {}\n",
      mold::format_bytes(needed), out.string());
  // Qwen/Qwen-Image-Edit-2511's model_index.json and scheduler config; the
  // text encoder's and transformer's configs from tests/data (their sources
  // in tests/data/qwen_image_sources.md).
  write_text(out / "model_index.json", R"({
  "_class_name": "QwenImageEditPlusPipeline", "_diffusers_version": "0.36.0",
  "processor": ["transformers", "Qwen2VLProcessor"],
  "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"],
  "text_encoder": ["transformers", "Qwen2_5_VLForConditionalGeneration"],
  "tokenizer": ["transformers", "Qwen2Tokenizer"],
  "transformer": ["diffusers", "QwenImageTransformer2DModel"],
  "vae": ["diffusers", "AutoencoderKLQwenImage"]})");
  write_text(out / "scheduler" / "scheduler_config.json", R"({
  "_class_name": "FlowMatchEulerDiscreteScheduler", "base_image_seq_len": 256,
  "base_shift": 0.5, "invert_sigmas": false, "max_image_seq_len": 8192,
  "max_shift": 0.9, "num_train_timesteps": 1000, "shift": 1.0,
  "shift_terminal": 0.02, "stochastic_sampling": false,
  "time_shift_type": "exponential", "use_beta_sigmas": false,
  "use_dynamic_shifting": true, "use_exponential_sigmas": false,
  "use_karras_sigmas": false})");
  write_config(out / "text_encoder" / "config.json",
               read_json(data / "qwen_image_text_encoder_config.json"),
               o.layers,
               {"/num_hidden_layers", "/text_config/num_hidden_layers"});
  write_config(out / "transformer" / "config.json",
               read_json(data / "qwen_image_transformer_config.json"), o.layers,
               {"/num_layers"});
  write_text(out / "vae" / "config.json", R"({
  "_class_name": "AutoencoderKLQwenImage", "attn_scales": [], "base_dim": 96,
  "dim_mult": [1, 2, 4, 4], "dropout": 0.0, "num_res_blocks": 2,
  "temperal_downsample": [false, true, true], "z_dim": 16})");
  copy_tokenizer("qwen_image", out / "tokenizer");
  // The image processor's settings (Qwen2.5-VL-7B-Instruct's, which mold's
  // edit pipeline implements) and its tokenizer.
  write_text(out / "processor" / "preprocessor_config.json", R"({
  "image_processor_type": "Qwen2VLImageProcessor",
  "processor_class": "Qwen2_5_VLProcessor", "min_pixels": 3136,
  "max_pixels": 12845056, "patch_size": 14, "temporal_patch_size": 2,
  "merge_size": 2, "image_mean": [0.48145466, 0.4578275, 0.40821073],
  "image_std": [0.26862954, 0.26130258, 0.27577711]})");
  copy_tokenizer("qwen_image", out / "processor");
  write_component(out / "text_encoder", "model", text, o.shard_bytes);
  const fs::path gguf = out / "transformer" / "qwen-image-edit-2511-Q4_0.gguf";
  mold_bench::write_random_file(gguf, dit, q4_0, "qwen_image", o.seed);
  fmt::print("  {} ({}, {} tensors, Q4_0 and float32)\n", gguf.string(),
             mold::format_bytes(dit_bytes), dit.size());
  write_component(out / "vae", "diffusion_pytorch_model", vae,
                  std::uint64_t(1) << 40);
  return 0;
}

/// One Z-Image component as a single file of `o.format`.
int write_zimage_file(const std::string& component, const fs::path& file,
                      const Options& o) {
  const fs::path data = mold_bench::kTestDataDir;
  const bool transformer = component == "zimage-transformer";
  if (!o.format) {
    fmt::print(stderr,
               "write_random_model: {} needs --format "
               "q8_0|q4_0|q4_k|fp8\n",
               component);
    return 2;
  }
  if (!transformer && !mold_bench::is_gguf(*o.format)) {
    fmt::print(stderr,
               "write_random_model: --format fp8: the text encoder's "
               "files are GGUFs (q8_0, q4_0, q4_k)\n");
    return 2;
  }
  const auto tensors = keep_layers(
      read_listing(data / (transformer
                               ? "zimage_transformer_comfy_state_dict.tsv"
                               : "zimage_qwen3_gguf_tensors.tsv")),
      o.layers);
  const std::uint64_t bytes = mold_bench::random_file_bytes(tensors, *o.format);
  if (!enough_disk(file.has_parent_path() ? file.parent_path() : ".", bytes))
    return 1;
  const std::string architecture = transformer ? "lumina2" : "qwen3";
  mold_bench::write_random_file(
      file, tensors, *o.format,
      mold_bench::is_gguf(*o.format) ? architecture : "", o.seed);
  fmt::print("  {} ({}, {} tensors, {} and float32)\n", file.string(),
             mold::format_bytes(bytes), tensors.size(),
             mold_bench::file_format_name(*o.format));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(
        stderr,
        "usage: write_random_model zimage|qwen-image-edit DIR [--seed N] "
        "[--shard-gib G] [--layers N]\n"
        "       write_random_model zimage-transformer|zimage-text-encoder "
        "FILE --format q8_0|q4_0|q4_k|fp8 [--seed N] [--layers N]\n");
    return 2;
  }
  const std::string family = argv[1];
  const fs::path out = argv[2];
  Options o;
  double shard_gib = 5;
  if ((argc - 3) % 2 != 0) {
    fmt::print(stderr, "write_random_model: {} needs a value\n",
               argv[argc - 1]);
    return 2;
  }
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    // A whole number (or for --shard-gib a positive one) or a usage error.
    const auto number = [&](double low, double high) {
      std::size_t used = 0;
      double n = 0;
      try {
        n = std::stod(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != value.size() || !(n >= low && n <= high))
        throw std::invalid_argument(fmt::format(
            "{} {}: give a number from {:g} to {:g}", flag, value, low, high));
      return n;
    };
    try {
      if (flag == "--seed") {
        o.seed = std::uint64_t(number(0, 1e15));
      } else if (flag == "--shard-gib") {
        shard_gib = number(0.001, 1024);
      } else if (flag == "--layers") {
        o.layers = int(number(1, 1000));
      } else if (flag == "--format") {
        o.format = mold_bench::file_format(value);
        if (!o.format)
          throw std::invalid_argument("--format " + value +
                                      ": give q8_0, q4_0, q4_k or fp8");
      } else {
        fmt::print(stderr, "write_random_model: unknown flag {}\n", flag);
        return 2;
      }
    } catch (const std::invalid_argument& e) {
      fmt::print(stderr, "write_random_model: {}\n", e.what());
      return 2;
    }
  }
  at::manual_seed(o.seed);
  o.shard_bytes = std::uint64_t(shard_gib * double(1ull << 30));
  try {
    if (family == "zimage") return write_zimage(out, o);
    if (family == "qwen-image-edit") return write_qwen_image_edit(out, o);
    if (family == "zimage-transformer" || family == "zimage-text-encoder")
      return write_zimage_file(family, out, o);
    fmt::print(stderr,
               "write_random_model: '{}': give zimage, qwen-image-edit, "
               "zimage-transformer or zimage-text-encoder\n",
               family);
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "write_random_model: {}\n", e.what());
    return 1;
  }
}
