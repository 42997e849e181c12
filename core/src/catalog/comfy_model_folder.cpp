#include "mold/catalog/comfy_model_folder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "mold/base/error.hpp"
#include "mold/base/text.hpp"
#include "mold/catalog/components.hpp"
#include "mold/tensor/tensor_listing.hpp"

namespace mold {

namespace fs = std::filesystem;

namespace {

std::vector<const char*> folders_of(const std::string& component) {
  if (component == components::kTransformer)
    return {"diffusion_models", "unet"};
  if (component == components::kVae) return {"vae"};
  return {"text_encoders", "clip"};
}

/// The model name's words ("qwen", "image", "edit", "2511") found in the
/// file's name, ignoring case and separators.
int name_score(const fs::path& file, const std::string& model) {
  auto words = [](const std::string& text) {
    std::vector<std::string> out(1);
    for (char c : text) {
      if (std::isalnum(static_cast<unsigned char>(c)))
        out.back() += char(std::tolower(static_cast<unsigned char>(c)));
      else if (!out.back().empty())
        out.emplace_back();
    }
    if (out.back().empty()) out.pop_back();
    return out;
  };
  const auto in_name = words(file.stem().string());
  int score = 0;
  for (const auto& word : words(model))
    if (std::find(in_name.begin(), in_name.end(), word) != in_name.end())
      ++score;
  return score;
}

std::vector<fs::path> checkpoint_files(
    const fs::path& dir, const std::vector<const char*>& folders) {
  std::vector<fs::path> out;
  for (const char* folder : folders) {
    std::error_code ec;
    // Subfolders too (ComfyUI users sort files into them), not symlink loops.
    fs::recursive_directory_iterator it(dir / folder, ec), end;
    for (std::size_t seen = 0; !ec && it != end && seen < 10000;
         it.increment(ec), ++seen) {
      if (it.depth() > 3) it.disable_recursion_pending();
      const std::string name = it->path().filename().string();
      if ((ends_with(name, ".safetensors") || ends_with(name, ".gguf")) &&
          it->is_regular_file(ec))
        out.push_back(it->path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Candidate {
  fs::path file;
  int score = 0;
  bool gguf = false;
};

}  // namespace

bool is_comfy_model_folder(const fs::path& dir) {
  for (const char* folder :
       {"diffusion_models", "unet", "vae", "text_encoders", "clip"}) {
    std::error_code ec;
    if (fs::is_directory(dir / folder, ec)) return true;
  }
  return false;
}

std::map<std::string, fs::path> find_component_files(
    const fs::path& dir, const std::vector<WeightLayout>& layouts,
    const std::vector<std::string>& wanted, const std::string& model) {
  std::map<std::string, fs::path> found;
  for (const std::string& component : wanted) {
    std::vector<Candidate> candidates;
    for (const fs::path& file : checkpoint_files(dir, folders_of(component))) {
      try {
        const TensorListing listing = read_tensor_listing({file});
        if (detect_layout(layouts, component, listing, component))
          candidates.push_back(
              {file, name_score(file, model), listing.has_gguf()});
      } catch (const Error&) {
        // Unreadable, or of no layout of this component: not a candidate.
      }
    }
    if (candidates.empty()) continue;
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) {
                       return a.score > b.score;
                     });
    if (candidates.size() > 1 && candidates[0].score == candidates[1].score) {
      std::string names;
      for (const auto& c : candidates)
        if (c.score == candidates[0].score)
          names += (names.empty() ? "" : ", ") + c.file.filename().string();
      std::string flag = component;
      std::replace(flag.begin(), flag.end(), '_', '-');
      throw InvalidArgument(fmt::format(
          "{}: several files could be {}'s {} ({}); give the one to use with "
          "--{}",
          dir.string(), model, component, names, flag));
    }
    found[component] = candidates[0].file;
    // A llama.cpp text GGUF's vision tower, when the family reads one.
    if (component == components::kTextEncoder && candidates[0].gguf) {
      for (const fs::path& file :
           checkpoint_files(dir, folders_of(component))) {
        if (file == candidates[0].file) continue;
        try {
          if (read_tensor_listing({file}).gguf_architectures() !=
              std::vector<std::string>{"clip"})
            continue;
          const TensorListing both =
              read_tensor_listing({candidates[0].file, file});
          const auto mapping =
              detect_layout(layouts, component, both, component);
          if (mapping && mapping->missing_hint.empty()) {
            found["mmproj"] = file;
            break;
          }
        } catch (const Error&) {
        }
      }
    }
  }
  return found;
}

}  // namespace mold
