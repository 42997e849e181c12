#pragma once
/// The layouts a component's checkpoint may come in (diffusers' names,
/// ComfyUI's single files, the original LDM or Wan names, llama.cpp GGUFs),
/// each detected from the file's tensors, never from its name, and mapped to
/// the names and shapes the model declares. A mapping is data: per parameter a
/// recipe (copy, a block of rows of a fused tensor, a concatenation, a stack,
/// a reshape that drops size-1 dims), which the loader applies while it
/// streams tensors (mold/model/module.hpp). Families register their layouts
/// with the family (mold/catalog/model_family.hpp). Torch-free.

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mold/base/error.hpp"
#include "mold/tensor/tensor_listing.hpp"

namespace mold {

/// A checkpoint that matches no layout, two at once, or one whose tensors do
/// not fit the layout it matched. The message names the file, the layout and
/// the tensor.
class LayoutError : public Error {
 public:
  using Error::Error;
};

enum class TensorOp {
  copy,    ///< one stored tensor, reshaped to `shape` when the layout says
  rows,    ///< rows [row_begin, row_end) of dim 0 of one stored tensor
  concat,  ///< the stored tensors concatenated along dim 0
  stack,   ///< the stored tensors stacked along a new dim `dim`
};

/// How one parameter is made from stored tensors.
struct TensorRecipe {
  std::string target;                ///< the model's name
  std::vector<std::string> sources;  ///< stored names, prefix included
  TensorOp op = TensorOp::copy;
  std::int64_t row_begin = 0, row_end = 0;  ///< rows
  int dim = 0;                              ///< stack
  std::vector<std::int64_t> shape;          ///< the result's
};

/// A checkpoint's tensors as the model names them.
struct LayoutMapping {
  std::string layout;       ///< "comfyui"
  std::string description;  ///< "ComfyUI single file (Lumina2 names)"
  std::string prefix;       ///< removed from every stored name ("" for none)
  std::vector<TensorRecipe> recipes;
  /// Stored tensors the layout knows and the model never uses.
  std::vector<std::string> dropped;
  /// Stored tensors the layout has no rule for: a foreign layout refuses
  /// them (LayoutMapping::strict), diffusers' reports them as unexpected.
  std::vector<std::string> unmapped;
  bool strict = false;
  /// What the file says about the model's config ({"zero_cond_t", "true"}
  /// from Qwen-Image-Edit-2511's marker tensor): the pipeline checks it.
  std::vector<std::pair<std::string, std::string>> implies;
  /// Said after a message about missing parameters ("the vision tower is in
  /// the mmproj GGUF: give it with --mmproj").
  std::string missing_hint;

  const TensorRecipe* recipe(const std::string& target) const;
};

/// Writes a mapping: stored names are given without the prefix; every helper
/// checks what it reads and throws LayoutError naming the file, the layout
/// and the tensor.
class MappingBuilder {
 public:
  MappingBuilder(const TensorListing& listing, std::string prefix,
                 std::string layout, std::string description);

  const TensorListing& listing() const { return listing_; }
  bool has(const std::string& stored) const;
  /// The stored tensor; LayoutError when absent.
  const StoredTensor& at(const std::string& stored) const;
  /// Stored names under the prefix, prefix removed, in file order.
  std::vector<std::string> names() const;

  void copy(const std::string& stored, const std::string& target);
  /// A copy whose trailing size-1 dims are dropped (a 1x1 conv's [C, C, 1, 1]
  /// as a linear's [C, C]).
  void squeeze(const std::string& stored, const std::string& target);
  /// A vector [C] read as the one row [1, C] the model holds (the Z-Image
  /// pad tokens as stable-diffusion.cpp's converter writes them); a stored
  /// tensor that is already [1, C] is copied.
  void vector_as_row(const std::string& stored, const std::string& target);
  /// Equal blocks of rows, one per target (a fused qkv into q, k, v); the
  /// stored tensor's rows must divide evenly.
  void split_rows(const std::string& stored,
                  const std::vector<std::string>& targets);
  /// Concatenated along dim 0 (q, k, v into a fused qkv); the other dims
  /// must agree.
  void concat(const std::vector<std::string>& stored,
              const std::string& target);
  /// Stacked along a new dim `dim`; the shapes must agree.
  void stack(const std::vector<std::string>& stored, const std::string& target,
             int dim);
  /// Known, not used by the model.
  void drop(const std::string& stored);
  void imply(std::string key, std::string value);
  void missing_hint(std::string hint);

  /// The mapping; stored tensors no helper took are `unmapped` (all of them
  /// when `strict` is false, the caller reports them).
  LayoutMapping finish(bool strict);

 private:
  [[noreturn]] void fail(const std::string& what) const;
  void use(const std::string& stored);
  const TensorListing& listing_;
  LayoutMapping mapping_;
  std::set<std::string> used_;
};

/// One layout a family reads for one component.
struct WeightLayout {
  std::string component;    ///< "transformer", "vae", "text_encoder"
  std::string name;         ///< "diffusers", "comfyui", "ldm", "llama.cpp"
  std::string description;  ///< for --plan, molddiag inspect and errors
  /// Stored names (after the prefix) every file of this layout has and no
  /// other layout of the component has: how it is recognised.
  std::vector<std::string> markers;
  /// Stored names (after the prefix) its files never have.
  std::vector<std::string> absent;
  /// Prefixes its files may put before every name; "" is always tried first.
  std::vector<std::string> prefixes;
  /// For a GGUF: the general.architecture values it accepts (empty: any).
  std::vector<std::string> gguf_architectures;
  /// Whether safetensors files of this layout exist (a llama.cpp layout is
  /// GGUF only).
  bool safetensors = true;
  /// Builds the mapping of a listing that matched, with the prefix found.
  std::function<LayoutMapping(const TensorListing&, const std::string& prefix)>
      map;

  /// The prefix with which `listing` has every marker, when it matches.
  std::optional<std::string> match(const TensorListing& listing) const;
};

/// The layout of `listing` among `layouts` for `component` (`what` names
/// the model in messages: "the zimage transformer"): its mapping, or none
/// when no layout matches. Two layouts matching at once is a LayoutError
/// naming both and a marker of each; so is an all-in-one checkpoint (a
/// diffusion model, a VAE and a text encoder under ComfyUI's prefixes in one
/// file), naming its parts and what to give instead.
std::optional<LayoutMapping> detect_layout(
    const std::vector<WeightLayout>& layouts, const std::string& component,
    const TensorListing& listing, const std::string& what);

/// "diffusers ('layers.0.attention.to_q.weight'), comfyui
/// ('layers.0.attention.qkv.weight')": the layouts of `component` and a
/// marker of each, for a message about a file that matched none.
std::string describe_layouts(const std::vector<WeightLayout>& layouts,
                             const std::string& component);

/// A name `head` + N + "." + rest (N decimal, no leading zero): {N, rest};
/// none otherwise. What layouts' renames of numbered blocks parse with.
struct IndexedName {
  int index = 0;
  std::string rest;
};
std::optional<IndexedName> indexed_name(const std::string& name,
                                        const std::string& head);

/// identity_mapping(listing, prefix) as a layout's map (WeightLayout::map).
LayoutMapping map_own_names(const TensorListing& listing,
                            const std::string& prefix);

/// The identity mapping: every stored name under `prefix`, the prefix
/// removed (diffusers' and transformers' own layout), not strict.
LayoutMapping identity_mapping(const TensorListing& listing,
                               const std::string& prefix,
                               std::string layout = "diffusers",
                               std::string description = {});

}  // namespace mold
