#include "mold/tensor/tensor_listing.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mold/tensor/gguf_file.hpp"

namespace mold {

std::int64_t StoredTensor::elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;  // checked by the readers
  return n;
}

void TensorListing::add(StoredTensor tensor) {
  const auto [it, fresh] = index_.emplace(tensor.name, tensors_.size());
  if (!fresh)
    throw SafetensorsError(fmt::format(
        "tensor '{}' is in both {} and {}: give each file once, and not two "
        "copies of one",
        tensor.name, files_[tensors_[it->second].file].string(),
        files_[tensor.file].string()));
  tensors_.push_back(std::move(tensor));
}

void TensorListing::add_safetensors(
    const std::filesystem::path& file,
    const std::map<std::string, SafetensorsEntry>& entries) {
  const std::size_t index = files_.size();
  files_.push_back(file);
  std::vector<const SafetensorsEntry*> in_order;
  for (const auto& [name, entry] : entries) in_order.push_back(&entry);
  std::sort(in_order.begin(), in_order.end(),
            [](const auto* a, const auto* b) { return a->begin < b->begin; });
  for (const SafetensorsEntry* entry : in_order) {
    StoredTensor t;
    t.name = entry->name;
    t.shape = entry->shape;
    t.type = entry->dtype;
    t.bytes = entry->end - entry->begin;
    t.file = index;
    t.offset = entry->begin;
    add(std::move(t));
  }
}

void TensorListing::add_gguf(const GgufFile& file) {
  const std::size_t index = files_.size();
  files_.push_back(file.path());
  const GgufValue* arch = file.find("general.architecture");
  const std::string* name = arch ? arch->as_string() : nullptr;
  gguf_architectures_.push_back(name ? *name : std::string());
  for (const GgufTensorInfo& info : file.tensors()) {
    StoredTensor t;
    t.name = info.name;
    t.shape = info.torch_shape();
    t.type = ggml_type_name(info.type);
    t.bytes = info.bytes;
    t.file = index;
    t.offset = info.offset;
    t.gguf = true;
    t.ggml_type = info.type;
    add(std::move(t));
  }
}

void TensorListing::add_file(const std::filesystem::path& file,
                             std::optional<std::string> gguf_architecture,
                             std::vector<StoredTensor> tensors) {
  const std::size_t index = files_.size();
  files_.push_back(file);
  if (gguf_architecture) gguf_architectures_.push_back(*gguf_architecture);
  for (auto& t : tensors) {
    t.file = index;
    t.gguf = gguf_architecture.has_value();
    add(std::move(t));
  }
}

const StoredTensor* TensorListing::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::string TensorListing::describe() const {
  std::string out;
  for (const auto& file : files_)
    out += (out.empty() ? "" : " + ") + file.string();
  return out.empty() ? "(no file)" : out;
}

std::uint64_t TensorListing::bytes() const {
  std::uint64_t n = 0;
  for (const auto& t : tensors_) n += t.bytes;
  return n;
}

}  // namespace mold
