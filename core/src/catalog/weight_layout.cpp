#include "mold/catalog/weight_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "mold/base/text.hpp"

namespace mold {

const TensorRecipe* LayoutMapping::recipe(const std::string& target) const {
  // finish() sorts them by target.
  const auto it = std::lower_bound(
      recipes.begin(), recipes.end(), target,
      [](const TensorRecipe& r, const std::string& t) { return r.target < t; });
  return it != recipes.end() && it->target == target ? &*it : nullptr;
}

MappingBuilder::MappingBuilder(const TensorListing& listing, std::string prefix,
                               std::string layout, std::string description)
    : listing_(listing) {
  mapping_.prefix = std::move(prefix);
  mapping_.layout = std::move(layout);
  mapping_.description = std::move(description);
}

void MappingBuilder::fail(const std::string& what) const {
  throw LayoutError(fmt::format("{} ({} layout): {}", listing_.describe(),
                                mapping_.layout, what));
}

bool MappingBuilder::has(const std::string& stored) const {
  return listing_.contains(mapping_.prefix + stored);
}

const StoredTensor& MappingBuilder::at(const std::string& stored) const {
  const StoredTensor* t = listing_.find(mapping_.prefix + stored);
  if (!t)
    fail(
        fmt::format("tensor '{}' is missing; the file is incomplete or of "
                    "another model",
                    mapping_.prefix + stored));
  return *t;
}

std::vector<std::string> MappingBuilder::names() const {
  std::vector<std::string> out;
  for (const auto& t : listing_.tensors())
    if (starts_with(t.name, mapping_.prefix))
      out.push_back(t.name.substr(mapping_.prefix.size()));
  return out;
}

void MappingBuilder::use(const std::string& stored) {
  if (!used_.insert(mapping_.prefix + stored).second)
    fail(fmt::format("tensor '{}' is used twice by the layout",
                     mapping_.prefix + stored));
}

void MappingBuilder::copy(const std::string& stored,
                          const std::string& target) {
  const StoredTensor& t = at(stored);
  use(stored);
  TensorRecipe r;
  r.target = target;
  r.sources = {t.name};
  r.shape = t.shape;
  mapping_.recipes.push_back(std::move(r));
}

void MappingBuilder::squeeze(const std::string& stored,
                             const std::string& target) {
  const StoredTensor& t = at(stored);
  use(stored);
  TensorRecipe r;
  r.target = target;
  r.sources = {t.name};
  r.shape = t.shape;
  while (r.shape.size() > 1 && r.shape.back() == 1) r.shape.pop_back();
  mapping_.recipes.push_back(std::move(r));
}

void MappingBuilder::vector_as_row(const std::string& stored,
                                   const std::string& target) {
  copy(stored, target);
  std::vector<std::int64_t>& shape = mapping_.recipes.back().shape;
  if (shape.size() == 1) shape.insert(shape.begin(), 1);
}

void MappingBuilder::split_rows(const std::string& stored,
                                const std::vector<std::string>& targets) {
  const StoredTensor& t = at(stored);
  use(stored);
  const auto parts = std::int64_t(targets.size());
  if (t.shape.empty() || parts == 0 || t.shape[0] % parts != 0)
    fail(
        fmt::format("tensor '{}' has shape {}, whose rows do not split into "
                    "{} equal parts",
                    t.name, list_text(t.shape), parts));
  const std::int64_t rows = t.shape[0] / parts;
  for (std::int64_t i = 0; i < parts; ++i) {
    TensorRecipe r;
    r.target = targets[std::size_t(i)];
    r.sources = {t.name};
    r.op = TensorOp::rows;
    r.row_begin = i * rows;
    r.row_end = (i + 1) * rows;
    r.shape = t.shape;
    r.shape[0] = rows;
    mapping_.recipes.push_back(std::move(r));
  }
}

void MappingBuilder::concat(const std::vector<std::string>& stored,
                            const std::string& target) {
  TensorRecipe r;
  r.target = target;
  r.op = TensorOp::concat;
  for (const auto& name : stored) {
    const StoredTensor& t = at(name);
    use(name);
    if (t.shape.empty())
      fail(fmt::format("tensor '{}' is a scalar; it cannot be concatenated",
                       t.name));
    if (r.shape.empty()) {
      r.shape = t.shape;
    } else {
      std::vector<std::int64_t> rest(t.shape.begin() + 1, t.shape.end());
      if (t.shape.size() != r.shape.size() ||
          !std::equal(rest.begin(), rest.end(), r.shape.begin() + 1))
        fail(
            fmt::format("tensor '{}' has shape {}, which does not "
                        "concatenate with '{}' ({})",
                        t.name, list_text(t.shape), r.sources.front(),
                        list_text(at(stored.front()).shape)));
      r.shape[0] += t.shape[0];
    }
    r.sources.push_back(t.name);
  }
  mapping_.recipes.push_back(std::move(r));
}

void MappingBuilder::stack(const std::vector<std::string>& stored,
                           const std::string& target, int dim) {
  TensorRecipe r;
  r.target = target;
  r.op = TensorOp::stack;
  r.dim = dim;
  std::vector<std::int64_t> first;
  for (const auto& name : stored) {
    const StoredTensor& t = at(name);
    use(name);
    if (r.sources.empty()) first = t.shape;
    if (t.shape != first)
      fail(fmt::format(
          "tensor '{}' has shape {}, '{}' has {}: they do not "
          "stack",
          t.name, list_text(t.shape), r.sources.front(), list_text(first)));
    r.sources.push_back(t.name);
  }
  if (dim < 0 || std::size_t(dim) > first.size())
    fail(fmt::format("cannot stack tensors of shape {} along dim {}",
                     list_text(first), dim));
  r.shape = first;
  r.shape.insert(r.shape.begin() + dim, std::int64_t(stored.size()));
  mapping_.recipes.push_back(std::move(r));
}

void MappingBuilder::drop(const std::string& stored) {
  at(stored);
  use(stored);
  mapping_.dropped.push_back(mapping_.prefix + stored);
}

void MappingBuilder::imply(std::string key, std::string value) {
  mapping_.implies.emplace_back(std::move(key), std::move(value));
}

void MappingBuilder::missing_hint(std::string hint) {
  mapping_.missing_hint = std::move(hint);
}

LayoutMapping MappingBuilder::finish(bool strict) {
  mapping_.strict = strict;
  for (const auto& t : listing_.tensors())
    if (!used_.count(t.name)) mapping_.unmapped.push_back(t.name);
  if (strict && !mapping_.unmapped.empty()) {
    std::string some;
    for (std::size_t i = 0; i < mapping_.unmapped.size() && i < 3; ++i)
      some += (i ? "', '" : "") + mapping_.unmapped[i];
    fail(fmt::format(
        "{} tensor{} of the file {} not of this layout, e.g. "
        "'{}': is the file of another model, or two layouts "
        "mixed in one file?",
        mapping_.unmapped.size(), mapping_.unmapped.size() == 1 ? "" : "s",
        mapping_.unmapped.size() == 1 ? "is" : "are", some));
  }
  std::sort(mapping_.recipes.begin(), mapping_.recipes.end(),
            [](const auto& a, const auto& b) { return a.target < b.target; });
  for (std::size_t i = 1; i < mapping_.recipes.size(); ++i)
    if (mapping_.recipes[i].target == mapping_.recipes[i - 1].target)
      fail(fmt::format("two tensors map to '{}' ('{}' and '{}')",
                       mapping_.recipes[i].target,
                       mapping_.recipes[i - 1].sources.front(),
                       mapping_.recipes[i].sources.front()));
  return std::move(mapping_);
}

std::optional<std::string> WeightLayout::match(
    const TensorListing& listing) const {
  if (listing.has_gguf()) {
    if (!gguf_architectures.empty())
      for (const auto& arch : listing.gguf_architectures())
        if (std::find(gguf_architectures.begin(), gguf_architectures.end(),
                      arch) == gguf_architectures.end())
          return std::nullopt;
  } else if (!safetensors) {
    return std::nullopt;
  }
  std::vector<std::string> candidates = {""};
  candidates.insert(candidates.end(), prefixes.begin(), prefixes.end());
  for (const auto& prefix : candidates) {
    bool all = !markers.empty();
    for (const auto& marker : markers)
      all = all && listing.contains(prefix + marker);
    for (const auto& name : absent)
      all = all && !listing.contains(prefix + name);
    if (all) return prefix;
  }
  return std::nullopt;
}

namespace {

/// The prefixes ComfyUI's all-in-one checkpoints put before each part.
struct AllInOnePart {
  const char* prefix;
  const char* part;
};
constexpr AllInOnePart kAllInOneParts[] = {
    {"model.diffusion_model.", "a diffusion model"},
    {"first_stage_model.", "a VAE"},
    {"text_encoders.", "a text encoder"},
    {"cond_stage_model.", "a text encoder"},
    {"conditioner.", "a text encoder"},
};

/// Throws LayoutError naming the parts when `listing` holds two or more
/// parts of an all-in-one checkpoint.
void refuse_all_in_one(const TensorListing& listing) {
  std::map<std::string, std::string> parts;  // part -> first prefix seen
  for (const auto& t : listing.tensors())
    for (const auto& p : kAllInOneParts)
      if (starts_with(t.name, p.prefix)) parts.emplace(p.part, p.prefix);
  if (parts.size() < 2) return;
  std::string held;
  for (const auto& [part, prefix] : parts)
    held += fmt::format("{}{} ({}*)", held.empty() ? "" : ", ", part, prefix);
  throw LayoutError(fmt::format(
      "{} is an all-in-one checkpoint: it holds {} in one file. mold reads "
      "each component from a file of its own: give the model's separate "
      "files (--transformer, --vae, --text-encoder; see docs/models.md)",
      listing.describe(), held));
}

}  // namespace

std::optional<LayoutMapping> detect_layout(
    const std::vector<WeightLayout>& layouts, const std::string& component,
    const TensorListing& listing, const std::string& what) {
  refuse_all_in_one(listing);
  const WeightLayout* found = nullptr;
  std::string found_prefix;
  for (const auto& layout : layouts) {
    if (layout.component != component) continue;
    const auto prefix = layout.match(listing);
    if (!prefix) continue;
    if (found)
      throw LayoutError(fmt::format(
          "{} holds tensors of two layouts of {}: {} ('{}') and {} ('{}'); "
          "give a file of one layout",
          listing.describe(), what, found->name,
          found_prefix + found->markers.front(), layout.name,
          *prefix + layout.markers.front()));
    found = &layout;
    found_prefix = *prefix;
  }
  if (!found) return std::nullopt;
  LayoutMapping mapping = found->map(listing, found_prefix);
  mapping.layout = found->name;  // the registered name, whatever map() said
  mapping.description = found->description;
  return mapping;
}

std::string describe_layouts(const std::vector<WeightLayout>& layouts,
                             const std::string& component) {
  std::string out;
  for (const auto& layout : layouts)
    if (layout.component == component && !layout.markers.empty())
      out += fmt::format("{}{} ('{}')", out.empty() ? "" : ", ", layout.name,
                         layout.markers.front());
  return out;
}

std::optional<IndexedName> indexed_name(const std::string& name,
                                        const std::string& head) {
  if (!starts_with(name, head)) return std::nullopt;
  std::size_t end = head.size();
  int index = 0;
  while (end < name.size() && name[end] >= '0' && name[end] <= '9') {
    if (end - head.size() >= 6) return std::nullopt;
    index = index * 10 + (name[end] - '0');
    ++end;
  }
  if (end == head.size() || end >= name.size() || name[end] != '.' ||
      (name[head.size()] == '0' && end > head.size() + 1))
    return std::nullopt;
  return IndexedName{index, name.substr(end + 1)};
}

LayoutMapping map_own_names(const TensorListing& listing,
                            const std::string& prefix) {
  return identity_mapping(listing, prefix);
}

LayoutMapping identity_mapping(const TensorListing& listing,
                               const std::string& prefix, std::string layout,
                               std::string description) {
  MappingBuilder builder(listing, prefix, std::move(layout),
                         std::move(description));
  for (const auto& name : builder.names()) builder.copy(name, name);
  return builder.finish(false);
}

}  // namespace mold
