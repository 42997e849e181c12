#include "mold/runtime/encoding_memo.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "mold/runtime/pipeline.hpp"

namespace mold {

namespace {

/// FNV-1a over an image's bytes: equal images, equal hashes; a collision
/// between two different source images of one prompt is out of reach in
/// practice (64 bits), and the shape is in the key too.
std::uint64_t fnv1a(const at::Tensor& image) {
  const at::Tensor bytes = image.contiguous().to(at::kCPU).to(at::kByte);
  const auto* data = bytes.data_ptr<std::uint8_t>();
  std::uint64_t hash = 14695981039346656037ull;
  for (int64_t i = 0; i < bytes.numel(); ++i) {
    hash ^= data[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace

std::string EncodingMemo::key_of(const GenerateRequest& request,
                                 bool with_negative) {
  // Lengths first, so that no two requests make the same key.
  std::string key = fmt::format("{}:{}", request.prompt.size(), request.prompt);
  if (with_negative) {
    const std::string negative = request.negative_prompt.value_or("");
    key += fmt::format("|{}:{}", negative.size(), negative);
  }
  for (const at::Tensor& image : request.images)
    key += fmt::format("|{}:{:016x}", c10::str(image.sizes()), fnv1a(image));
  return key;
}

const std::vector<at::Tensor>* EncodingMemo::find(
    const std::string& key) const {
  return !tensors_.empty() && key == key_ ? &tensors_ : nullptr;
}

void EncodingMemo::keep(std::string key, std::vector<at::Tensor> tensors) {
  clear();
  for (at::Tensor& t : tensors)
    if (t.defined()) t = t.to(at::kCPU);
  key_ = std::move(key);
  tensors_ = std::move(tensors);
}

void EncodingMemo::clear() {
  key_.clear();
  tensors_.clear();
}

Bytes EncodingMemo::bytes() const {
  Bytes total = 0;
  for (const at::Tensor& t : tensors_)
    if (t.defined()) total += Bytes(t.numel()) * Bytes(t.element_size());
  return total;
}

}  // namespace mold
