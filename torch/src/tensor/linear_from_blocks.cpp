#include "mold/tensor/linear_from_blocks.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "mold/base/error.hpp"
#include "mold/tensor/few_rows_product.hpp"

namespace mold {

namespace {

bool fits(const at::Tensor& x, const QuantizedTensor& weight) {
  return weight.shape.size() == 2 && weight.blocks.is_cpu() && x.defined() &&
         x.is_cpu() && at::isFloatingType(x.scalar_type()) && x.dim() >= 1 &&
         x.size(-1) == weight.shape[1] && x.size(-1) > 0;
}

}  // namespace

bool linear_from_blocks_takes(const at::Tensor& x,
                              const QuantizedTensor& weight) {
  return fits(x, weight) &&
         cpu_multiplies_from_blocks(c10::elementSize(x.scalar_type()),
                                    double(x.numel() / x.size(-1)));
}

at::Tensor linear_from_blocks(const at::Tensor& x,
                              const QuantizedTensor& weight,
                              const at::Tensor& bias) {
  if (!fits(x, weight))
    throw InvalidArgument(fmt::format(
        "linear_from_blocks: a {} [{}] matrix on {} does not take an input "
        "of {} x {}",
        weight.type_name(), fmt::join(weight.shape, ", "),
        weight.blocks.device().str(), fmt::join(x.sizes(), " x "),
        std::string(c10::toString(x.scalar_type()))));
  const std::int64_t columns = weight.shape[1], outputs = weight.shape[0];
  if (bias.defined() && bias.numel() != outputs)
    throw InvalidArgument(
        fmt::format("linear_from_blocks: a bias of {} values for {} outputs",
                    bias.numel(), outputs));
  const std::int64_t rows = x.numel() / columns;
  const at::Tensor in = x.reshape({rows, columns}).to(at::kFloat).contiguous();
  at::Tensor out = at::empty({rows, outputs}, in.options());
  const at::Tensor blocks = weight.blocks.contiguous();
  at::Tensor scales;
  QuantizedMatrixView matrix;
  matrix.data = blocks.data_ptr<std::uint8_t>();
  matrix.columns = std::size_t(columns);
  matrix.type = weight.type;
  if (weight.float8) {
    scales = weight.scale.to(at::kFloat).contiguous();
    matrix.float8 = weight.float8;
    matrix.row_scales = scales.data_ptr<float>();
  }
  const float* in_data = in.data_ptr<float>();
  float* out_data = out.data_ptr<float>();
  // Chunks of matrix rows over the intra-op threads, each writing its own
  // columns of the result.
  at::parallel_for(0, outputs, 16, [&](std::int64_t begin, std::int64_t end) {
    few_rows_product(matrix, std::size_t(begin), std::size_t(end), in_data,
                     std::size_t(rows), out_data + begin, std::size_t(outputs));
  });
  if (bias.defined()) out.add_(bias.to(at::kFloat).view({1, outputs}));
  std::vector<std::int64_t> shape = x.sizes().vec();
  shape.back() = outputs;
  return out.view(shape).to(x.scalar_type());
}

}  // namespace mold
