#include "mold/catalog/llama_cpp_names.hpp"

#include <cctype>
#include <cstring>
#include <utility>

namespace mold {

namespace {

// Per block: llama.cpp's suffix -> transformers' (after "layers.N.").
constexpr std::pair<const char*, const char*> kBlock[] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
};

}  // namespace

std::optional<std::string> llama_cpp_to_transformers(const std::string& name,
                                                     const std::string& model) {
  if (name == "token_embd.weight") return model + "embed_tokens.weight";
  if (name == "output_norm.weight") return model + "norm.weight";
  if (name == "output.weight") return std::string("lm_head.weight");
  if (name.compare(0, 4, "blk.") != 0) return std::nullopt;
  std::size_t end = 4;
  while (end < name.size() &&
         std::isdigit(static_cast<unsigned char>(name[end])))
    ++end;
  if (end == 4 || end - 4 > 6 || end >= name.size() || name[end] != '.' ||
      (name[4] == '0' && end > 5))
    return std::nullopt;
  const std::string layer = name.substr(4, end - 4);
  const std::string rest = name.substr(end + 1);
  for (const auto& [from, to] : kBlock)
    if (rest == from) return model + "layers." + layer + "." + to;
  return std::nullopt;
}

}  // namespace mold
