#pragma once
/// molddiag's commands as its usage lists them, and which of them compute with
/// tensors (common/tensor_twin.hpp): `molddiag` runs the others itself and
/// hands these to `molddiag-torch`, whose table has them all.

#include <string>
#include <vector>

namespace molddiag {

struct CommandEntry {
  const char* name;
  const char* summary;
  /// runs in molddiag-torch (leak and parity run here until a local or
  /// remote run reaches its tensors: commands/twin_drivers.cpp)
  bool tensors;
};

inline const std::vector<CommandEntry>& command_list() {
  static const std::vector<CommandEntry> list = {
      {"plugins",
       "list loaded plugins, what they registered, and plugins that failed to "
       "load",
       false},
      {"estimate", "the working-memory estimate of one operation", false},
      {"classify",
       "whether an error text is an out-of-memory error, where, and what to do",
       false},
      {"vae", "run one VAE encode or decode on tensors from a safetensors file",
       true},
      {"tiling",
       "decode one latent whole, bounded and tiled: peaks, times, differences",
       true},
      {"calibrate",
       "measure an op's working memory on the cpu backend; write the constants",
       true},
      {"run-component",
       "run one component (text encoder, transformer, VAE) on tensors from a "
       "safetensors file",
       true},
      {"tokenize", "the token ids of a text, with a family's tokenizer files",
       false},
      {"leak", "make N images and say whether memory grows, and what keeps it",
       false},
      {"parity", "make N images and check none needs more than the first",
       false},
      {"report", "analyse a saved JSON report again; write it as HTML", false},
      {"doctor",
       "libtorch's threads, the BLAS it calls, and its matrix-product speed",
       true},
  };
  return list;
}

}  // namespace molddiag
