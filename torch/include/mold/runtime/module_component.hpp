#pragma once
/// A model component (a Module: text encoder, transformer, VAE) as the model
/// cache sees it: its weights come from a checkpoint or from a seed, and go
/// onto the backend's device in the dtype asked for.

#include <ATen/ATen.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mold/cache/cache.hpp"
#include "mold/catalog/weight_layout.hpp"
#include "mold/model/module.hpp"

namespace mold {

class Checkpoint;

/// Where a component's weights come from.
struct WeightSource {
  /// A checkpoint (a .gguf file, or a safetensors file, index or folder:
  /// WeightSet::open; a folder holding one .gguf is that file); none:
  /// seeded.
  std::optional<std::filesystem::path> checkpoint;
  /// More files of the same checkpoint (a llama.cpp text model's mmproj).
  std::vector<std::filesystem::path> more_files;
  /// The layouts the component's files may come in (the family's, for all
  /// its components: mold/catalog/weight_layout.hpp), detected from the
  /// file; none matching: diffusers' names, as the module's stored_prefix()
  /// says.
  std::vector<WeightLayout> layouts;
  std::uint64_t seed = 0;  ///< when seeded
  /// Seeded weights kept quantized (a tiny model's q4 or q8 variant): every
  /// matrix Module::quantizable() takes, as ggml's reference quantizer makes
  /// its blocks. A GGUF checkpoint says for itself what is quantized.
  std::optional<GgmlType> quantize;
  LoadOptions options;

  bool seeded() const { return !checkpoint.has_value(); }
  /// "seeded weights (seed 7)" or the checkpoint's path.
  std::string describe() const;
  /// The files to open: the checkpoint (or the one .gguf of its folder),
  /// then more_files. Empty when seeded.
  std::vector<std::filesystem::path> files() const;
};

class ModuleComponent final : public CachedComponent {
 public:
  /// `warn` receives load warnings (unexpected checkpoint tensors).
  ModuleComponent(std::string name, std::unique_ptr<Module> module,
                  WeightSource source, at::ScalarType dtype,
                  std::function<void(const std::string&)> warn = {});

  const std::string& name() const override { return name_; }
  /// Exact: the parameters' count times the dtype's size, or for weights
  /// held quantized their blocks' bytes (a GGUF checkpoint's as its file
  /// stores them).
  Bytes device_bytes() const override;
  Residency residency() const override { return residency_; }
  /// From the parked host copy, or else from the checkpoint or the seed.
  void load(Backend& backend) override;
  /// Off a GPU the weights move to host memory; on the cpu backend (device
  /// and host are one memory) they are dropped and rebuilt from their source
  /// on the next load. Either way no device byte stays.
  void park() override;
  void unload() override;

  Module& module() { return *module_; }
  const Module& module() const { return *module_; }
  const WeightSource& source() const { return source_; }
  at::ScalarType dtype() const { return dtype_; }
  /// Whether some matrix is held as ggml blocks, dequantized as its layer
  /// runs (a GGUF checkpoint's quantized tensors, or seeded weights with
  /// WeightSource::quantize): the ops' workloads say so (Workload::quantized).
  bool quantized() const { return quantized_; }
  /// How the checkpoint is read: its layout's mapping (the layout's name,
  /// description, what it implies about the config); none when seeded.
  const std::optional<LayoutMapping>& mapping() const { return mapping_; }
  /// "x.safetensors (comfyui: ComfyUI's single file ...)" or "seeded
  /// weights (seed 7)": for --plan and --json.
  std::string describe_source() const;

 private:
  std::string name_;
  std::unique_ptr<Module> module_;
  WeightSource source_;
  at::ScalarType dtype_;
  std::function<void(const std::string&)> warn_;
  Residency residency_ = Residency::unloaded;
  bool host_copy_ = false;  // parked weights are in host memory
  /// The checkpoint's files, open from construction (where the layout is
  /// detected and checked) to every load: what was checked is what loads,
  /// even when a file is replaced on disk in between.
  std::shared_ptr<const Checkpoint> checkpoint_;
  std::optional<LayoutMapping> mapping_;
  Bytes device_bytes_ = 0;
  bool quantized_ = false;
};

/// The GGUF file a checkpoint path names: the path itself when it ends in
/// .gguf, or the one .gguf file of a directory with no .safetensors (or of
/// two, the one that is not a llama.cpp mmproj, "clip"); none
/// otherwise. Throws GgufError naming the files when a directory holds
/// several.
std::optional<std::filesystem::path> gguf_checkpoint(
    const std::filesystem::path& checkpoint);

}  // namespace mold
