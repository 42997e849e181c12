#include "mold/runtime/module_component.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "mold/base/error.hpp"
#include "mold/device/backend.hpp"
#include "mold/tensor/checkpoint.hpp"
#include "mold/tensor/gguf_file.hpp"
#include "mold/tensor/weight_set.hpp"

namespace mold {

std::string WeightSource::describe() const {
  return checkpoint ? checkpoint->string()
                    : fmt::format("seeded weights (seed {})", seed);
}

std::vector<std::filesystem::path> WeightSource::files() const {
  std::vector<std::filesystem::path> out;
  if (!checkpoint) return out;
  const auto gguf = gguf_checkpoint(*checkpoint);
  out.push_back(gguf ? *gguf : *checkpoint);
  // A folder's text GGUF comes with the mmproj beside it.
  std::error_code ec;
  if (gguf && std::filesystem::is_directory(*checkpoint, ec))
    for (const auto& entry :
         std::filesystem::directory_iterator(*checkpoint, ec))
      if (entry.path().extension() == ".gguf" && entry.path() != *gguf)
        out.push_back(entry.path());
  out.insert(out.end(), more_files.begin(), more_files.end());
  return out;
}

namespace {

/// The layout of `checkpoint` for `component`: detected among `layouts`, or
/// else diffusers' names with the module's prefix.
LayoutMapping layout_of(const Checkpoint& checkpoint,
                        const WeightSource& source,
                        const std::string& component, const Module& module) {
  if (auto detected = detect_layout(source.layouts, component,
                                    checkpoint.listing(), module.describe()))
    return std::move(*detected);
  std::string prefix = source.options.prefix;
  if (prefix.empty() && checkpoint.weights())
    prefix = module.stored_prefix(*checkpoint.weights());
  return identity_mapping(checkpoint.listing(), prefix);
}

}  // namespace

ModuleComponent::ModuleComponent(std::string name,
                                 std::unique_ptr<Module> module,
                                 WeightSource source, at::ScalarType dtype,
                                 std::function<void(const std::string&)> warn)
    : name_(std::move(name)),
      module_(std::move(module)),
      source_(std::move(source)),
      dtype_(dtype),
      warn_(std::move(warn)) {
  const Bytes element = Bytes(c10::elementSize(dtype_));
  if (source_.checkpoint) {
    // As the layout puts them there: quantized matrices' blocks at their
    // stored size, the rest in the run's dtype.
    checkpoint_ =
        std::make_shared<const Checkpoint>(Checkpoint::open(source_.files()));
    const Checkpoint& checkpoint = *checkpoint_;
    mapping_ = layout_of(checkpoint, source_, name_, *module_);
    // What would stop the load, found now: before a plan or a run.
    LoadOptions options = source_.options;
    options.layouts = describe_layouts(source_.layouts, name_);
    module_->check_load(checkpoint.listing(), *mapping_, checkpoint.origin(),
                        options);
    device_bytes_ =
        module_->loaded_bytes(checkpoint.listing(), *mapping_, dtype_);
    for (const auto& [param, t] : module_->parameters())
      if (const TensorRecipe* recipe = mapping_->recipe(param))
        quantized_ =
            quantized_ || module_->keeps_blocks(param, *recipe,
                                                checkpoint.listing(), t.dim());
  } else if (source_.seeded() && source_.quantize) {
    const GgmlTypeInfo* info = ggml_type_info(std::uint32_t(*source_.quantize));
    for (const auto& [name, t] : module_->parameters()) {
      const bool blocks =
          info && Module::quantizable(name, t.sizes().vec(), *source_.quantize);
      quantized_ = quantized_ || blocks;
      device_bytes_ += blocks
                           ? Bytes(*ggml_bytes(*info, std::uint64_t(t.numel())))
                           : Bytes(t.numel()) * element;
    }
  } else {
    device_bytes_ = module_->parameter_bytes(dtype_);
  }
}

std::string ModuleComponent::describe_source() const {
  if (!mapping_) return source_.describe();
  std::string files;
  for (const auto& file : source_.files())
    files += (files.empty() ? "" : " + ") + file.string();
  return fmt::format("{} ({} layout)", files, mapping_->layout);
}

Bytes ModuleComponent::device_bytes() const { return device_bytes_; }

namespace {

/// Whether `path` is a GGUF whose general.architecture is "clip" (a
/// llama.cpp mmproj); false for what cannot be read.
bool is_mmproj(const std::filesystem::path& path) {
  try {
    const GgufFile file = GgufFile::open(path);
    const GgufValue* arch = file.find("general.architecture");
    const std::string* name = arch ? arch->as_string() : nullptr;
    return name && *name == "clip";
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

std::optional<std::filesystem::path> gguf_checkpoint(
    const std::filesystem::path& checkpoint) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(checkpoint, ec))
    return checkpoint.extension() == ".gguf"
               ? std::optional<fs::path>(checkpoint)
               : std::nullopt;
  if (!fs::is_directory(checkpoint, ec)) return std::nullopt;
  std::vector<fs::path> ggufs;
  bool safetensors = false;
  for (const auto& entry : fs::directory_iterator(checkpoint, ec)) {
    const fs::path& path = entry.path();
    if (path.extension() == ".gguf") ggufs.push_back(path);
    if (path.extension() == ".safetensors") safetensors = true;
  }
  if (ggufs.empty() || safetensors) return std::nullopt;
  std::sort(ggufs.begin(), ggufs.end());
  if (ggufs.size() == 2) {
    // A llama.cpp text model and its mmproj (the vision tower, "clip"): one
    // checkpoint, the text model first (WeightSource::files() adds the other).
    const bool first_clip = is_mmproj(ggufs[0]),
               second_clip = is_mmproj(ggufs[1]);
    if (first_clip != second_clip) return first_clip ? ggufs[1] : ggufs[0];
  }
  if (ggufs.size() > 1) {
    std::sort(ggufs.begin(), ggufs.end());
    throw GgufError(fmt::format(
        "{} holds {} GGUF files ({}, ...): keep the one to run there (or "
        "give its path with --transformer, --vae or --text-encoder)",
        checkpoint.string(), ggufs.size(), ggufs.front().filename().string()));
  }
  return ggufs.front();
}

void ModuleComponent::load(Backend& backend) {
  if (residency_ == Residency::device) return;
  const c10::Device device = backend.torch_device();
  try {
    if (host_copy_) {
      module_->to(device, dtype_);
    } else if (source_.checkpoint) {
      const Checkpoint& checkpoint = *checkpoint_;
      LoadOptions options = source_.options;
      options.layouts = describe_layouts(source_.layouts, name_);
      const LoadReport report =
          module_->load(checkpoint, *mapping_, device, dtype_, options);
      if (warn_ && !report.warning().empty())
        warn_(fmt::format("{}: {}", checkpoint.origin(), report.warning()));
    } else {
      module_->init_from_seed(source_.seed, device, dtype_, source_.quantize);
    }
  } catch (...) {
    // Leave it where it was: a half-moved module holds memory on two sides.
    if (!host_copy_) module_->release();
    throw;
  }
  host_copy_ = false;
  residency_ = Residency::device;
}

void ModuleComponent::park() {
  if (residency_ != Residency::device) return;
  if (module_->device().is_cpu()) {
    module_->release();
    host_copy_ = false;
  } else {
    module_->to(c10::Device(c10::kCPU));
    host_copy_ = true;
  }
  residency_ = Residency::parked;
}

void ModuleComponent::unload() {
  module_->release();
  host_copy_ = false;
  residency_ = Residency::unloaded;
}

}  // namespace mold
