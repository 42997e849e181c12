// backend_cuda: registers the CUDA/HIP OOM classifiers and, where built with
// the CUDA runtime, the `cuda` Backend.

#include <mold/plugin.hpp>

#include "cuda_oom_classifier.hpp"
#if MOLD_WITH_CUDA_RUNTIME
#  include "cuda_backend.hpp"
#endif

namespace {

void register_all(mold::Registrar& registrar) {
  registrar.add_classifier("cuda", mold::backend_cuda::classify_cuda_oom,
                           mold::kSpecificClassifier);
  registrar.add_classifier("cuda-inferred",
                           mold::backend_cuda::classify_cuda_oom_inferred,
                           mold::kInferringClassifier);
#if MOLD_WITH_CUDA_RUNTIME
  registrar.add_backend(
      "cuda", [] { return mold::backend_cuda::make_cuda_backend(0); });
#endif
}

}  // namespace

MOLD_PLUGIN("backend_cuda", "0.1.0", register_all)
