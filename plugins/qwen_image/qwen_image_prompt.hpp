#pragma once
// How Qwen-Image turns a prompt, and an edit's images, into the text
// encoder's token ids, and which of its hidden states the denoiser sees: the
// chat templates of diffusers' QwenImagePipeline and
// QwenImageEditPlusPipeline (prompt_template_encode), the system turn's
// tokens they drop (prompt_template_encode_start_idx), and each image's
// <|image_pad|> repeated for its merged patches, as the processor expands it.

#include <cstdint>
#include <memory>
#include <mold/model/tokenizer.hpp>
#include <string>
#include <vector>

namespace qwen_image {

/// An edit image's vision grid in patches (rows, columns).
struct PatchGrid {
  int64_t rows = 0;
  int64_t columns = 0;
};

class QwenPrompt {
 public:
  /// `image_token_id` and `spatial_merge_size` are the text encoder's
  /// (Qwen2.5-VL's config); `edit`: the edit pipeline's template.
  QwenPrompt(std::shared_ptr<const mold::BpeTokenizer> tokenizer,
             int64_t image_token_id, int64_t spatial_merge_size, bool edit);

  /// The template around `prompt` (and an edit's "Picture N:" parts, one per
  /// grid), each image's pad repeated for its merged patches. Text-to-image
  /// truncates at 1024 tokens after the dropped ones (the tokenizer's
  /// max_length).
  std::vector<int64_t> ids(const std::string& prompt,
                           const std::vector<PatchGrid>& images) const;
  /// The system turn's tokens the pipeline drops from the hidden states.
  int dropped() const;
  /// The text tokens the denoiser attends to, of a template's `ids`.
  int kept_tokens(const std::vector<int64_t>& ids) const;

 private:
  std::shared_ptr<const mold::BpeTokenizer> tokenizer_;
  int64_t image_token_id_;
  int64_t spatial_merge_size_;
  bool edit_;
};

}  // namespace qwen_image
