#include "mold/tensor/checkpoint.hpp"

#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <utility>

#include "mold/base/error.hpp"
#include "mold/base/text.hpp"

namespace mold {

void Checkpoint::add(Part part) {
  const std::size_t index = parts_.size();
  const std::size_t files_before = listing_.files().size();
  std::string path;
  if (part.gguf) {
    listing_.add_gguf(*part.gguf);
    path = part.gguf->path().string();
  } else {
    part.weights->add_to(listing_);
    path = part.weights->origin().string();
    gguf_only_ = false;
  }
  for (std::size_t f = files_before; f < listing_.files().size(); ++f)
    part_of_file_.push_back(index);
  origin_ += (origin_.empty() ? "" : " + ") + path;
  parts_.push_back(std::move(part));
}

Checkpoint Checkpoint::open(const std::vector<std::filesystem::path>& paths) {
  Checkpoint checkpoint;
  for (const auto& path : paths) {
    Part part;
    if (ends_with(path.filename().string(), ".gguf"))
      part.gguf = GgufFile::open(path);
    else
      part.weights = WeightSet::open(path);
    checkpoint.add(std::move(part));
  }
  checkpoint.listing_.check_scales();
  return checkpoint;
}

Checkpoint Checkpoint::of(WeightSet weights) {
  Checkpoint checkpoint;
  Part part;
  part.weights = std::move(weights);
  checkpoint.add(std::move(part));
  checkpoint.listing_.check_scales();
  return checkpoint;
}

Checkpoint Checkpoint::of(GgufFile file) {
  Checkpoint checkpoint;
  Part part;
  part.gguf = std::move(file);
  checkpoint.add(std::move(part));
  return checkpoint;
}

bool Checkpoint::blocks(const StoredTensor& t) {
  if (!t.gguf) return float8_format(t.type).has_value();
  const auto type = GgmlType(t.ggml_type);
  return type != GgmlType::f32 && type != GgmlType::f16 &&
         type != GgmlType::bf16;
}

const GgufFile& Checkpoint::gguf_of(const StoredTensor& t) const {
  return *parts_[part_of_file_[t.file]].gguf;
}

at::ScalarType Checkpoint::stored_dtype(const StoredTensor& t) const {
  if (t.gguf) {
    switch (GgmlType(t.ggml_type)) {
    case GgmlType::f32:
      return at::kFloat;
    case GgmlType::f16:
      return at::kHalf;
    case GgmlType::bf16:
      return at::kBFloat16;
    default:
      throw GgufError(fmt::format("{}: tensor '{}' is {} blocks, not values",
                                  origin_, t.name, t.type));
    }
  }
  if (float8_format(t.type)) return at::kFloat;  // decoded
  const Part& part = parts_[part_of_file_[t.file]];
  return part.weights->view(t.name).scalar_type();
}

void Checkpoint::read_values(const StoredTensor& t, std::int64_t first,
                             at::Tensor& destination) const {
  const Part& part = parts_[part_of_file_[t.file]];
  if (part.weights) {
    part.weights->file_of(t.name).read_range_into(t.name, first, destination);
    return;
  }
  const GgufFile& file = gguf_of(t);
  const GgufTensorInfo& info = *file.tensor(t.name);
  at::NoGradGuard no_grad;
  if (blocks(t)) {  // small (a vector): dequantized whole
    const at::Tensor values =
        dequantize(load_quantized(file, info, at::Device(at::kCPU)), at::kFloat)
            .view({-1});
    destination.view({-1}).copy_(values.narrow(0, first, destination.numel()));
    return;
  }
  const at::ScalarType stored = stored_dtype(t);
  const auto element = std::uint64_t(c10::elementSize(stored));
  const std::uint64_t from = std::uint64_t(first) * element;
  const std::uint64_t count = std::uint64_t(destination.numel()) * element;
  if (destination.scalar_type() == stored) {
    file.read(info, destination.data_ptr(), from, count);
    return;
  }
  at::Tensor host =
      at::empty(destination.sizes(), at::TensorOptions().dtype(stored));
  file.read(info, host.data_ptr(), from, count);
  destination.copy_(host);
}

void Checkpoint::read_block_rows(const StoredTensor& t, std::int64_t row_begin,
                                 std::int64_t row_end,
                                 at::Tensor& destination) const {
  const std::int64_t rows = t.rows();
  auto fail = [&](const std::string& what) {
    const std::string message =
        fmt::format("{}: tensor '{}' {}", origin_, t.name, what);
    if (t.gguf) throw GgufError(message);
    throw SafetensorsError(message);
  };
  if (!blocks(t)) fail(fmt::format("is {}, not blocks or fp8 bytes", t.type));
  if (row_begin < 0 || row_end < row_begin || row_end > rows || rows == 0)
    fail(fmt::format("has {} rows, not {}..{}", rows, row_begin, row_end));
  const std::uint64_t row_bytes = t.bytes / std::uint64_t(rows);
  const std::uint64_t count = std::uint64_t(row_end - row_begin) * row_bytes;
  if (destination.scalar_type() != at::kByte || !destination.is_contiguous() ||
      !destination.device().is_cpu() ||
      std::uint64_t(destination.numel()) != count)
    throw InvalidArgument(fmt::format(
        "{}: rows {}..{} of tensor '{}' are {} bytes; the destination is not "
        "a contiguous cpu uint8 tensor of that size",
        origin_, row_begin, row_end, t.name, count));
  const std::uint64_t from = std::uint64_t(row_begin) * row_bytes;
  const Part& part = parts_[part_of_file_[t.file]];
  if (part.weights) {
    part.weights->file_of(t.name).read_bytes_into(
        t.name, std::size_t(from), std::size_t(count), destination.data_ptr());
    return;
  }
  const GgufFile& file = gguf_of(t);
  file.read(*file.tensor(t.name), destination.data_ptr(), from, count);
}

at::Tensor Checkpoint::row_scales(const StoredTensor& t, std::int64_t row_begin,
                                  std::int64_t row_end) const {
  const std::int64_t rows = row_end - row_begin;
  const StoredTensor* scale = listing_.scale_of(t);
  if (!scale) return at::ones({rows}, at::kFloat);
  at::Tensor values = at::empty({scale->elements()}, at::kFloat);
  read_values(*scale, 0, values);
  if (values.numel() == 1) return values.expand({rows}).contiguous();
  return values.narrow(0, row_begin, rows).contiguous();
}

}  // namespace mold
