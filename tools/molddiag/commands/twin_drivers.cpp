// molddiag's (torch-free) local and remote drivers of leak and parity: both
// compute with libtorch (the pipeline; an edit's source images as tensors), so
// molddiag hands the whole command, already parsed and checked, to
// molddiag-torch (common/tensor_twin.hpp), which has the real ones
// (profile_driver.cpp, remote_driver.cpp). The black-box driver
// (process_driver.cpp) runs here.

#include "common/tensor_twin.hpp"
#include "profile_driver.hpp"
#include "remote_driver.hpp"

namespace molddiag {

mold::MemoryProfile run_profile(const ProfileRun& /*run*/) {
  mold::tools::hand_to_tensor_twin();
}

mold::MemoryProfile run_remote_profile(const RemoteProfileRun& /*run*/) {
  mold::tools::hand_to_tensor_twin();
}

}  // namespace molddiag
