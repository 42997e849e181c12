#pragma once
/// The chat template Z-Image's pipeline applies to a prompt before the Qwen3
/// text encoder: what transformers' apply_chat_template(messages,
/// add_generation_prompt=True, enable_thinking=True) renders from Qwen3's
/// Jinja template for one user message. Not a Jinja engine.

#include <string>
#include <string_view>

namespace mold {

/// "<|im_start|>user\n" + `user_prompt` +
/// "<|im_end|>\n<|im_start|>assistant\n". The prompt is inserted as it is (the
/// template escapes nothing).
std::string qwen3_chat_prompt(std::string_view user_prompt);

}  // namespace mold
