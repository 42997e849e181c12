#pragma once
/// molddiag's commands as its usage lists them: the table of `molddiag`
/// (main.cpp) and of `molddiag-torch` (twin_main.cpp) alike.

#include <string>
#include <vector>

namespace molddiag {

struct CommandEntry {
  const char* name;
  const char* summary;
};

inline const std::vector<CommandEntry>& command_list() {
  static const std::vector<CommandEntry> list = {
      {"plugins",
       "list loaded plugins, what they registered, and plugins that failed to "
       "load"},
      {"estimate", "the working-memory estimate of one operation"},
      {"history",
       "what each device's measured history holds (what estimates learn "
       "from); prune it"},
      {"classify",
       "whether an error text is an out-of-memory error, where, and what to "
       "do"},
      {"vae",
       "run one VAE encode or decode on tensors from a safetensors file"},
      {"tiling",
       "decode one latent whole, bounded and tiled: peaks, times, differences"},
      {"calibrate",
       "measure an op's working memory on the cpu backend; write the "
       "constants"},
      {"run-component",
       "run one component (text encoder, transformer, VAE) on tensors from a "
       "safetensors file"},
      {"tokenize", "the token ids of a text, with a family's tokenizer files"},
      {"inspect",
       "what a checkpoint file holds: tensors by type, the layout, which "
       "component it fits"},
      {"leak", "make N images and say whether memory grows, and what keeps it"},
      {"parity", "make N images and check none needs more than the first"},
      {"report", "analyse a saved JSON report again; write it as HTML"},
      {"doctor",
       "libtorch's threads, the BLAS it calls, and its matrix-product speed"},
  };
  return list;
}

}  // namespace molddiag
