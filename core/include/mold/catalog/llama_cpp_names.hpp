#pragma once
/// llama.cpp's tensor names for a decoder-only language model (its GGUFs of
/// Qwen2, Qwen2.5-VL's text model and Qwen3) as transformers names them: what
/// both families' text encoders read from a llama.cpp GGUF. Read from
/// llama.cpp's convert_hf_to_gguf tensor_mapping and ComfyUI-GGUF's
/// LLAMA_SD_MAP; llama.cpp permutes q/k rows only for its LlamaModel, never
/// for these, so every tensor is a rename. Torch-free.

#include <optional>
#include <string>

namespace mold {

/// `token_embd.weight` -> `<model>embed_tokens.weight`, `blk.N.attn_q.bias`
/// -> `<model>layers.N.self_attn.q_proj.bias`, `output_norm.weight` ->
/// `<model>norm.weight`, `output.weight` -> `lm_head.weight`, ...;
/// `model` is what the model puts before its decoder's names ("" or
/// "model."). None for a name that is not one of these.
std::optional<std::string> llama_cpp_to_transformers(const std::string& name,
                                                     const std::string& model);

}  // namespace mold
