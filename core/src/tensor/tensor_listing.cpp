#include "mold/tensor/tensor_listing.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "mold/base/file_io.hpp"
#include "mold/base/text.hpp"
#include "mold/tensor/float8.hpp"
#include "mold/tensor/gguf_file.hpp"
#include "mold/tensor/weight_scales.hpp"

namespace mold {

std::int64_t StoredTensor::elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;  // checked by the readers
  return n;
}

void TensorListing::add(StoredTensor tensor, bool safetensors) {
  auto twice = [&](const StoredTensor& first) {
    return SafetensorsError(fmt::format(
        "tensor '{}' is in both {} and {}: give each file once, and not two "
        "copies of one",
        tensor.name, files_[first.file].string(),
        files_[tensor.file].string()));
  };
  if (safetensors && weight_companion(tensor.name)) {
    const auto [it, fresh] = companions_.emplace(tensor.name, tensor);
    if (!fresh) throw twice(it->second);
    return;
  }
  const auto [it, fresh] = index_.emplace(tensor.name, tensors_.size());
  if (!fresh) throw twice(tensors_[it->second]);
  tensors_.push_back(std::move(tensor));
}

const StoredTensor* TensorListing::scale_of(const StoredTensor& weight) const {
  if (weight.gguf) return nullptr;
  for (const auto& [name, t] : companions_) {
    const auto companion = weight_companion(name);
    if (companion->scale && companion->weight == weight.name) return &t;
  }
  return nullptr;
}

void TensorListing::check_scales() const {
  auto fail = [&](const StoredTensor& t, const std::string& what) {
    return SafetensorsError(fmt::format("{}: tensor '{}' {}",
                                        files_[t.file].string(), t.name, what));
  };
  const std::string instead = "use the model's bf16, fp8 (e4m3fn) or GGUF file";
  for (const auto& t : tensors_)
    if (const auto quantization = unread_quantization(t.name))
      throw fail(t, fmt::format("belongs to a {} quantization, which mold "
                                "does not read: {}",
                                *quantization, instead));
  std::map<std::string, const StoredTensor*> scale_of_weight;
  for (const auto& [name, t] : companions_) {
    const auto companion = weight_companion(name);
    if (!companion->scale) continue;
    const StoredTensor* weight = find(companion->weight);
    if (!weight)
      throw fail(t, fmt::format("scales a weight '{}' the file does not have; "
                                "is the file complete?",
                                companion->weight));
    const auto [other, fresh] = scale_of_weight.emplace(weight->name, &t);
    if (!fresh)
      throw fail(t, fmt::format("and '{}' both scale '{}': one scale per "
                                "weight",
                                other->second->name, weight->name));
    if (!float8_format(weight->type)) {
      const std::string what =
          weight->type == "I8"   ? "an int8 weight (ComfyUI int8_tensorwise)"
          : weight->type == "U8" ? "a packed 4-bit weight (nvfp4, AWQ)"
                                 : "a " + weight->type + " weight";
      throw fail(t, fmt::format("scales '{}', {}, which mold does not read "
                                "with a scale (it scales fp8 weights): {}",
                                weight->name, what, instead));
    }
    if (t.type != "F32" && t.type != "F16" && t.type != "BF16")
      throw fail(t, fmt::format("is a {} scale; mold reads F32, F16 and BF16 "
                                "scales of fp8 weights: {}",
                                t.type, instead));
    const std::int64_t count = t.elements();
    if (count != 1 && (count != weight->rows() || weight->shape.size() < 2 ||
                       t.shape.empty() || t.shape[0] != count))
      throw fail(t, fmt::format("has shape {} for weight '{}' of shape {}: "
                                "mold reads one scale per tensor or one per "
                                "row, not block-wise scales (mxfp8, "
                                "DeepSeek fp8): {}",
                                list_text(t.shape), weight->name,
                                list_text(weight->shape), instead));
  }
  // A scaled fp8 file (a scale beside some fp8 weight, or the scaled_fp8
  // marker) scales every fp8 weight: one without its scale would load with its
  // raw fp8 values, a wrong image without a word. A plain fp8 cast (no scale
  // anywhere) is read as it is.
  std::size_t fp8_scaled = 0;
  for (const auto& [weight, scale] : scale_of_weight)
    fp8_scaled += float8_format(find(weight)->type) ? 1 : 0;
  const bool marked = std::any_of(
      companions_.begin(), companions_.end(), [](const auto& companion) {
        const auto c = weight_companion(companion.first);
        return c && c->weight.empty();
      });
  if (fp8_scaled == 0 && !marked) return;
  for (const auto& t : tensors_) {
    if (t.gguf || !float8_format(t.type) || scale_of_weight.count(t.name))
      continue;
    const std::string layer = ends_with(t.name, ".weight")
                                  ? t.name.substr(0, t.name.size() - 7)
                                  : t.name;
    throw fail(
        t, fmt::format("is {} with no scale ('{}.scale_weight' or "
                       "'{}.weight_scale'), though this is a scaled fp8 file "
                       "({}): read unscaled it would give a wrong image. The "
                       "file is incomplete or was converted wrongly: convert "
                       "it again, or {}",
                       t.type, layer, layer,
                       fp8_scaled
                           ? fmt::format("{} other fp8 weight{} {} one",
                                         fp8_scaled, fp8_scaled == 1 ? "" : "s",
                                         fp8_scaled == 1 ? "has" : "have")
                           : std::string("it has the scaled_fp8 marker"),
                       instead));
  }
}

void TensorListing::add_safetensors(
    const std::filesystem::path& file,
    const std::map<std::string, SafetensorsEntry>& entries) {
  const std::size_t index = files_.size();
  files_.push_back(file);
  data_starts_.push_back(std::nullopt);
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
    add(std::move(t), true);
  }
}

void TensorListing::add_safetensors(const std::filesystem::path& file,
                                    const SafetensorsHeader& header) {
  add_safetensors(file, header.entries);
  data_starts_.back() = header.data_offset;
}

void TensorListing::add_gguf(const GgufFile& file) {
  const std::size_t index = files_.size();
  files_.push_back(file.path());
  data_starts_.push_back(file.data_start());
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
    add(std::move(t), false);
  }
}

void TensorListing::add_file(const std::filesystem::path& file,
                             std::optional<std::string> gguf_architecture,
                             std::vector<StoredTensor> tensors) {
  const std::size_t index = files_.size();
  files_.push_back(file);
  data_starts_.push_back(std::nullopt);
  if (gguf_architecture) gguf_architectures_.push_back(*gguf_architecture);
  for (auto& t : tensors) {
    t.file = index;
    t.gguf = gguf_architecture.has_value();
    add(std::move(t), !gguf_architecture);
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
  for (const auto& [name, t] : companions_) n += t.bytes;
  return n;
}

namespace {

/// A safetensors file's header, read with two bounded reads.
SafetensorsHeader read_safetensors_header(const std::filesystem::path& path) {
  auto fail = [&](const std::string& what) {
    return SafetensorsError(fmt::format("{}: {}", path.string(), what));
  };
  const OpenSafetensors file = open_safetensors_file(path.string());
  const int fd = file.fd;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const std::uint64_t size = file.size;
  std::string bytes(8, '\0');
  if (size >= 8) read_at(fd, bytes.data(), 8, 0);
  std::uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = (header << 8) | std::uint8_t(bytes[i]);
  if (size >= 8 && header <= size - 8) {
    if (header > kMaxSafetensorsHeader)
      throw fail(fmt::format(
          "its header is {} bytes; mold reads headers of at most {} (is it a "
          "safetensors file?)",
          header, kMaxSafetensorsHeader));
    bytes.resize(8 + header);
    read_at(fd, bytes.data() + 8, header, 8);
  }
  // The parser reads only the header's bytes; `size` checks the offsets.
  return parse_safetensors_header(bytes.data(), std::size_t(size),
                                  path.string());
}

}  // namespace

TensorListing read_tensor_listing(
    const std::vector<std::filesystem::path>& paths) {
  namespace fs = std::filesystem;
  TensorListing listing;
  for (const fs::path& path : paths) {
    std::error_code ec;
    std::vector<fs::path> files;
    if (fs::is_directory(path, ec)) {
      std::vector<fs::path> shards, ggufs;
      for (const auto& entry : fs::directory_iterator(path, ec)) {
        const std::string name = entry.path().filename().string();
        if (ends_with(name, ".safetensors")) shards.push_back(entry.path());
        if (ends_with(name, ".gguf")) ggufs.push_back(entry.path());
      }
      std::sort(shards.begin(), shards.end());
      files = shards.empty() && ggufs.size() == 1 ? ggufs : shards;
      if (files.empty())
        throw SafetensorsError(fmt::format(
            "{}: no .safetensors file (or one .gguf) in it", path.string()));
    } else {
      files.push_back(path);
    }
    for (const fs::path& file : files) {
      if (ends_with(file.filename().string(), ".gguf"))
        listing.add_gguf(GgufFile::open(file));
      else
        listing.add_safetensors(file, read_safetensors_header(file));
    }
  }
  listing.check_scales();
  return listing;
}

}  // namespace mold
