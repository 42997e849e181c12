#include "mold/model/chat_template.hpp"

namespace mold {

std::string qwen3_chat_prompt(std::string_view user_prompt) {
  constexpr std::string_view kBefore = "<|im_start|>user\n";
  constexpr std::string_view kAfter = "<|im_end|>\n<|im_start|>assistant\n";
  std::string out;
  out.reserve(kBefore.size() + user_prompt.size() + kAfter.size());
  out.append(kBefore).append(user_prompt).append(kAfter);
  return out;
}

}  // namespace mold
