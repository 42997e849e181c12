#include "support/foreign_layouts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <mold/tensor/ggml_quant.hpp>
#include <set>
#include <stdexcept>

#include "support/gguf_writer.hpp"

namespace mold::test {

namespace {

bool starts(const std::string& s, const std::string& head) {
  return s.rfind(head, 0) == 0;
}

/// `s` with the first `from` replaced by `to` (unchanged when absent).
std::string replace(std::string s, const std::string& from,
                    const std::string& to) {
  const auto at = s.find(from);
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

/// The number after `head` in `s` and what follows its dot.
std::pair<int, std::string> number_after(const std::string& s,
                                         const std::string& head) {
  std::size_t end = head.size();
  while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end])))
    ++end;
  return {std::stoi(s.substr(head.size(), end - head.size())),
          s.substr(end + 1)};
}

int count_blocks(const Module& module, const std::string& head) {
  std::set<int> seen;
  for (const auto& [name, t] : module.parameters())
    if (starts(name, head)) seen.insert(number_after(name, head).first);
  return int(seen.size());
}

}  // namespace

NamedTensors zimage_comfy_transformer(const Module& module,
                                      const std::string& prefix) {
  NamedTensors out;
  const auto& p = module.parameters();
  std::int64_t dim = 0;
  for (const auto& [name, t] : p) {
    std::string n = name;
    if (starts(n, "all_x_embedder.2-1."))
      n = "x_embedder." + n.substr(19);
    else if (starts(n, "all_final_layer.2-1."))
      n = "final_layer." + n.substr(20);
    if (n.find(".attention.to_k.") != std::string::npos ||
        n.find(".attention.to_v.") != std::string::npos)
      continue;  // fused below
    if (n.find(".attention.to_q.weight") != std::string::npos) {
      const std::string base =
          name.substr(0, name.size() - 11);  // "to_q.weight"
      out.emplace_back(
          prefix + replace(n, "to_q.weight", "qkv.weight"),
          at::cat({t, p.at(base + "to_k.weight"), p.at(base + "to_v.weight")}));
      continue;
    }
    n = replace(n, ".attention.to_out.0.", ".attention.out.");
    n = replace(n, ".attention.norm_q.", ".attention.q_norm.");
    n = replace(n, ".attention.norm_k.", ".attention.k_norm.");
    if (n == "x_pad_token") dim = t.size(1);
    out.emplace_back(prefix + n, t);
  }
  // Built by ComfyUI's NextDiT and never used: the loader drops it.
  out.emplace_back(prefix + "norm_final.weight", at::ones({dim}));
  return out;
}

NamedTensors flux_ldm_vae(const Module& module) {
  NamedTensors out;
  const int up_blocks = count_blocks(module, "decoder.up_blocks.");
  auto resnet = [](std::string rest) {
    return replace(rest, "conv_shortcut.", "nin_shortcut.");
  };
  for (const auto& [name, t] : module.parameters()) {
    const std::string side = name.substr(0, name.find('.') + 1);
    const std::string rest = name.substr(side.size());
    std::string n;
    at::Tensor value = t;
    if (starts(rest, "conv_norm_out.")) {
      n = side + "norm_out." + rest.substr(14);
    } else if (starts(rest, "down_blocks.")) {
      const auto [i, r] = number_after(rest, "down_blocks.");
      if (starts(r, "resnets.")) {
        const auto [j, x] = number_after(r, "resnets.");
        n = fmt::format("{}down.{}.block.{}.{}", side, i, j, resnet(x));
      } else {
        n = fmt::format("{}down.{}.downsample.conv.{}", side, i,
                        r.substr(std::string("downsamplers.0.conv.").size()));
      }
    } else if (starts(rest, "up_blocks.")) {
      const auto [u, r] = number_after(rest, "up_blocks.");
      const int b = up_blocks - 1 - u;
      if (starts(r, "resnets.")) {
        const auto [j, x] = number_after(r, "resnets.");
        n = fmt::format("{}up.{}.block.{}.{}", side, b, j, resnet(x));
      } else {
        n = fmt::format("{}up.{}.upsample.conv.{}", side, b,
                        r.substr(std::string("upsamplers.0.conv.").size()));
      }
    } else if (starts(rest, "mid_block.resnets.")) {
      const auto [k, x] = number_after(rest, "mid_block.resnets.");
      n = fmt::format("{}mid.block_{}.{}", side, k + 1, resnet(x));
    } else if (starts(rest, "mid_block.attentions.0.")) {
      std::string x = rest.substr(23);
      x = replace(x, "group_norm.", "norm.");
      x = replace(x, "to_out.0.", "proj_out.");
      for (const char* q : {"q", "k", "v"})
        x = replace(x, std::string("to_") + q + ".", std::string(q) + ".");
      if (t.dim() == 2) value = t.view({t.size(0), t.size(1), 1, 1});
      n = side + "mid.attn_1." + x;
    } else {
      n = name;  // conv_in, conv_out, quant_conv, post_quant_conv
    }
    out.emplace_back(n, value);
  }
  return out;
}

NamedTensors wan_vae(const Module& module) {
  NamedTensors out;
  // Resnets per up block: the most any block has.
  int resnets = 0;
  for (const auto& [name, t] : module.parameters())
    if (starts(name, "decoder.up_blocks.")) {
      const auto [g, r] = number_after(name, "decoder.up_blocks.");
      if (starts(r, "resnets."))
        resnets = std::max(resnets, number_after(r, "resnets.").first + 1);
    }
  auto resnet = [](const std::string& x) {
    for (const auto& [from, to] :
         std::map<std::string, std::string>{{"norm1.gamma", "residual.0.gamma"},
                                            {"conv1.", "residual.2."},
                                            {"norm2.gamma", "residual.3.gamma"},
                                            {"conv2.", "residual.6."},
                                            {"conv_shortcut.", "shortcut."}})
      if (starts(x, from)) return to + x.substr(from.size());
    throw std::logic_error("wan_vae: no rule for " + x);
  };
  for (const auto& [name, t] : module.parameters()) {
    std::string n;
    if (starts(name, "quant_conv.")) {
      n = "conv1." + name.substr(11);
    } else if (starts(name, "post_quant_conv.")) {
      n = "conv2." + name.substr(16);
    } else {
      const std::string side = name.substr(0, name.find('.') + 1);
      const std::string rest = name.substr(side.size());
      if (starts(rest, "conv_in."))
        n = side + "conv1." + rest.substr(8);
      else if (rest == "norm_out.gamma")
        n = side + "head.0.gamma";
      else if (starts(rest, "conv_out."))
        n = side + "head.2." + rest.substr(9);
      else if (starts(rest, "mid_block.resnets.")) {
        const auto [k, x] = number_after(rest, "mid_block.resnets.");
        n = fmt::format("{}middle.{}.{}", side, 2 * k, resnet(x));
      } else if (starts(rest, "mid_block.attentions.0."))
        n = side + "middle.1." + rest.substr(23);
      else if (starts(rest, "down_blocks.")) {
        const auto [i, x] = number_after(rest, "down_blocks.");
        const bool resample = starts(x, "resample.") || starts(x, "time_conv.");
        n = fmt::format("{}downsamples.{}.{}", side, i,
                        resample ? x : resnet(x));
      } else if (starts(rest, "up_blocks.")) {
        const auto [g, x] = number_after(rest, "up_blocks.");
        if (starts(x, "resnets.")) {
          const auto [r, y] = number_after(x, "resnets.");
          n = fmt::format("{}upsamples.{}.{}", side, g * (resnets + 1) + r,
                          resnet(y));
        } else {
          n = fmt::format("{}upsamples.{}.{}", side,
                          g * (resnets + 1) + resnets,
                          x.substr(std::string("upsamplers.0.").size()));
        }
      } else {
        throw std::logic_error("wan_vae: no rule for " + name);
      }
    }
    out.emplace_back(n, t);
  }
  return out;
}

NamedTensors llama_cpp_decoder(const Module& module, const std::string& model) {
  const std::map<std::string, std::string> block = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
  };
  NamedTensors out;
  for (const auto& [name, t] : module.parameters()) {
    if (name == model + "embed_tokens.weight") {
      out.emplace_back("token_embd.weight", t);
    } else if (name == model + "norm.weight") {
      out.emplace_back("output_norm.weight", t);
    } else if (name == "lm_head.weight") {
      out.emplace_back("output.weight", t);
    } else if (starts(name, model + "layers.")) {
      const auto [n, rest] = number_after(name, model + "layers.");
      out.emplace_back(fmt::format("blk.{}.{}", n, block.at(rest)), t);
    }
  }
  return out;
}

NamedTensors qwen25vl_mmproj(const Module& module) {
  const std::map<std::string, std::string> block = {
      {"attn.proj.weight", "attn_out.weight"},
      {"attn.proj.bias", "attn_out.bias"},
      {"norm1.weight", "ln1.weight"},
      {"norm2.weight", "ln2.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.gate_proj.bias", "ffn_gate.bias"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.up_proj.bias", "ffn_up.bias"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
      {"mlp.down_proj.bias", "ffn_down.bias"},
  };
  NamedTensors out;
  for (const auto& [name, t] : module.parameters()) {
    if (!starts(name, "visual.")) continue;
    if (name == "visual.patch_embed.proj.weight") {
      out.emplace_back("v.patch_embd.weight", t.select(2, 0).contiguous());
      out.emplace_back("v.patch_embd.weight.1", t.select(2, 1).contiguous());
    } else if (name == "visual.merger.ln_q.weight") {
      out.emplace_back("v.post_ln.weight", t);
    } else if (starts(name, "visual.merger.mlp.")) {
      out.emplace_back("mm." + name.substr(18), t);
    } else {
      const auto [n, rest] = number_after(name, "visual.blocks.");
      if (starts(rest, "attn.qkv.")) {
        const std::string kind = rest.substr(9);
        const auto parts = t.chunk(3, 0);
        const char* names[] = {"attn_q", "attn_k", "attn_v"};
        for (int i = 0; i < 3; ++i)
          out.emplace_back(fmt::format("v.blk.{}.{}.{}", n, names[i], kind),
                           parts[std::size_t(i)].contiguous());
      } else {
        out.emplace_back(fmt::format("v.blk.{}.{}", n, block.at(rest)), t);
      }
    }
  }
  return out;
}

void write_gguf(const std::filesystem::path& path, const std::string& arch,
                const NamedTensors& tensors, bool q8) {
  GgufWriter writer;
  // stable-diffusion.cpp's converter writes no architecture at all.
  if (!arch.empty()) writer.metadata_string("general.architecture", arch);
  for (const auto& [name, tensor] : tensors) {
    const at::Tensor t = tensor.to(at::kCPU, at::kFloat).contiguous();
    std::vector<std::uint64_t> dims;
    for (std::int64_t d = t.dim() - 1; d >= 0; --d)
      dims.push_back(std::uint64_t(t.size(d)));
    if (dims.empty()) dims.push_back(1);
    const bool blocks = q8 && t.dim() == 2 && t.size(1) % 32 == 0;
    std::vector<std::uint8_t> bytes;
    if (blocks) {
      bytes.resize(std::size_t(t.numel()) / 32 * 34);
      quantize_blocks(GgmlType::q8_0, t.data_ptr<float>(),
                      std::size_t(t.numel()), bytes.data());
    } else {
      bytes.resize(std::size_t(t.numel()) * 4);
      std::memcpy(bytes.data(), t.data_ptr<float>(), bytes.size());
    }
    writer.tensor(name, dims, blocks ? 8 : 0, bytes);
  }
  writer.write(path.string());
}

}  // namespace mold::test
