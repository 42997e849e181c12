// backend_cuda: registers the CUDA/HIP OOM classifiers, the advice for CUDA
// and ROCm OOMs and, where built with the CUDA runtime, the `cuda` Backend.

#include <mold/plugin/plugin.hpp>

#include "cuda_oom_classifier.hpp"
#include "cuda_oom_hints.hpp"
#if MOLD_WITH_CUDA_RUNTIME
#  include "cuda_backend.hpp"
#endif

namespace {

void register_all(mold::Registrar& registrar) {
  registrar.add_classifier("cuda", backend_cuda::classify_cuda_oom,
                           mold::kSpecificClassifier);
  registrar.add_classifier("cuda-inferred",
                           backend_cuda::classify_cuda_oom_inferred,
                           mold::kInferringClassifier);
  registrar.add_hint_provider("cuda", backend_cuda::cuda_oom_hints);
  registrar.add_hint_provider("rocm", backend_cuda::rocm_oom_hints);
#if MOLD_WITH_CUDA_RUNTIME
  registrar.add_backend("cuda",
                        [] { return backend_cuda::make_cuda_backend(0); });
#endif
}

}  // namespace

MOLD_PLUGIN("backend_cuda", "0.1.0", register_all)
