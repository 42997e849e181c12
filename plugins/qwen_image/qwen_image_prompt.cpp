#include "qwen_image_prompt.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace qwen_image {

namespace {

constexpr int kMaxSequenceLength = 512;  // QwenImagePipeline's default
constexpr const char* kTextTemplate =
    "<|im_start|>system\nDescribe the image by detailing the color, shape, "
    "size, texture, quantity, text, spatial relationships of the objects and "
    "background:<|im_end|>\n<|im_start|>user\n{}<|im_end|>\n<|im_start|>"
    "assistant\n";
constexpr int kTextDropped = 34;
constexpr const char* kEditTemplate =
    "<|im_start|>system\nDescribe the key features of the input image "
    "(color, shape, size, texture, objects, background), then explain how "
    "the user's text instruction should alter or modify the image. Generate "
    "a new image that meets the user's requirements while maintaining "
    "consistency with the original input where appropriate.<|im_end|>\n"
    "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n";
constexpr int kEditDropped = 64;

}  // namespace

QwenPrompt::QwenPrompt(std::shared_ptr<const mold::BpeTokenizer> tokenizer,
                       int64_t image_token_id, int64_t spatial_merge_size,
                       bool edit)
    : tokenizer_(std::move(tokenizer)),
      image_token_id_(image_token_id),
      spatial_merge_size_(spatial_merge_size),
      edit_(edit) {}

std::vector<int64_t> QwenPrompt::ids(
    const std::string& prompt, const std::vector<PatchGrid>& images) const {
  std::string text;
  if (edit_) {
    std::string pictures;
    for (std::size_t i = 0; i < images.size(); ++i)
      pictures += fmt::format(
          "Picture {}: <|vision_start|><|image_pad|><|vision_end|>", i + 1);
    text = fmt::format(kEditTemplate, pictures + prompt);
  } else {
    text = fmt::format(kTextTemplate, prompt);
  }
  const std::vector<std::int32_t> ids = tokenizer_->encode(text);
  std::vector<int64_t> out;
  std::size_t image = 0;
  for (const std::int32_t id : ids) {
    if (edit_ && id == image_token_id_ && image < images.size()) {
      const int64_t m = spatial_merge_size_;
      const int64_t n = images[image].rows / m * (images[image].columns / m);
      out.insert(out.end(), std::size_t(n), id);
      ++image;
    } else {
      out.push_back(id);
    }
  }
  if (!edit_ && out.size() > std::size_t(1024 + kTextDropped))
    out.resize(1024 + kTextDropped);
  return out;
}

int QwenPrompt::dropped() const { return edit_ ? kEditDropped : kTextDropped; }

int QwenPrompt::kept_tokens(const std::vector<int64_t>& ids) const {
  int n = std::max(0, int(ids.size()) - dropped());
  if (!edit_) n = std::min(n, kMaxSequenceLength);
  return n;
}

}  // namespace qwen_image
