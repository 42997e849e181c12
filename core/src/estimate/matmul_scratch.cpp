#include "mold/estimate/matmul_scratch.hpp"

#include <algorithm>
#include <cmath>

namespace mold {

namespace {

bool power_of_two(double value) {
  if (value < 1 || value != std::floor(value)) return false;
  const auto v = static_cast<unsigned long long>(value);
  return (v & (v - 1)) == 0;
}

}  // namespace

double cpu_matmul_thread_scratch(std::string_view dtype, double rows,
                                 double inner, double outer) {
  if (dtype != "bfloat16" || rows <= 0 || inner <= 0) return 0;
  // The packing buffers: up to an inner dimension of 512 one block that
  // grows with it in steps of 32 (the bfloat16 kernels' blocking of the
  // inner dimension); above, two or three blocks' worth plus a part that
  // grows with the rows, to a block of 256 rows.
  const double row_part = 256 * std::min(rows, 256.0);
  double bytes = 0;
  if (inner <= 512)
    bytes = 128 * 32 * std::ceil(std::max(inner, 32.0) / 32) + 1024;
  else if (inner <= 1024)
    bytes = 66688 + row_part;
  else
    bytes = 132224 + row_part;
  // A power-of-two leading dimension from 4096 with rows from 1024: the
  // input copied to a padded one, which grows with the output's width.
  if (inner >= 4096 && power_of_two(inner) && rows >= 1024)
    bytes += 1024 * 1024 + 256 * outer;
  return bytes;
}

}  // namespace mold
