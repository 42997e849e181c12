#pragma once
/// What a pipeline's encoders made for the last prompt (the text embeddings,
/// a vision tower's features, source images' latents), kept on the host so
/// that the next image with the same conditioning reuses them instead of
/// running, and under a memory limit reloading, the encoders again: images
/// 2..N of a batch, and the next request of a `mold serve` model with the same
/// prompt, negative prompt and source images. One entry, replaced by the next
/// prompt's: a bounded cache, never a growing one.

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "mold/base/bytes.hpp"

namespace mold {

struct GenerateRequest;

class EncodingMemo {
 public:
  /// The key of a request's conditioning: the prompt, the negative prompt
  /// when `with_negative` (the pipeline encodes it), and each source image's
  /// shape and bytes.
  static std::string key_of(const GenerateRequest& request, bool with_negative);

  /// The tensors kept for `key`, or nullptr.
  const std::vector<at::Tensor>* find(const std::string& key) const;
  /// Keeps `tensors` (each moved to the host) for `key`, replacing what was
  /// kept. Later phases only read them: a pipeline must not change them in
  /// place.
  void keep(std::string key, std::vector<at::Tensor> tensors);
  void clear();
  /// The bytes of the kept tensors.
  Bytes bytes() const;

 private:
  std::string key_;
  std::vector<at::Tensor> tensors_;
};

}  // namespace mold
