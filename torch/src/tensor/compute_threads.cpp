#include "mold/tensor/compute_threads.hpp"

#include <ATen/Parallel.h>

namespace mold {

int compute_threads(std::string_view backend) {
  return backend == "cpu" ? at::get_num_threads() : 1;
}

}  // namespace mold
