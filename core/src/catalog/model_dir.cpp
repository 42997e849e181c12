#include "mold/catalog/model_dir.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <set>

#include "mold/base/error.hpp"
#include "mold/base/file_io.hpp"
#include "mold/base/text.hpp"
#include "mold/config/config.hpp"
#include "mold/config/json_config.hpp"

namespace mold {

namespace fs = std::filesystem;

namespace {

constexpr const char* kIndex = "model_index.json";

bool is_dir(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

bool is_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

bool is_model_dir(const fs::path& path) { return is_file(path / kIndex); }

/// A component name must be a plain folder name: model_index.json must not
/// point outside the model directory.
bool plain_folder_name(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.';
  });
}

/// The subdirectories of `dir`, sorted by name; empty when unreadable.
std::vector<fs::path> subdirectories(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec))
    if (is_dir(it->path())) out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string name_of(const fs::path& dir) {
  const fs::path normal = dir.lexically_normal();
  fs::path name = normal.filename();
  if (name.empty()) name = normal.parent_path().filename();  // "dir/"
  return name.string();
}

/// The snapshot of a Hugging Face cache entry (models--ORG--NAME): the one
/// refs/main names, else the newest with model_index.json.
std::optional<fs::path> hf_snapshot(const fs::path& entry,
                                    std::vector<std::string>& near_misses) {
  const fs::path snapshots = entry / "snapshots";
  if (std::ifstream ref{entry / "refs" / "main"}) {
    std::string hash;
    std::getline(ref, hash);
    while (!hash.empty() &&
           std::isspace(static_cast<unsigned char>(hash.back())))
      hash.pop_back();
    if (plain_folder_name(hash) && is_model_dir(snapshots / hash))
      return snapshots / hash;
  }
  std::optional<fs::path> best;
  fs::file_time_type best_time{};
  for (const fs::path& snapshot : subdirectories(snapshots)) {
    if (!is_model_dir(snapshot)) continue;
    std::error_code ec;
    const auto time = fs::last_write_time(snapshot, ec);
    if (ec) continue;
    if (!best || time > best_time) {
      best = snapshot;
      best_time = time;
    }
  }
  if (!best)
    near_misses.push_back(fmt::format(
        "{}: a Hugging Face cache entry with no complete snapshot (no "
        "snapshots/<hash>/{}); download the whole repository",
        entry.string(), kIndex));
  return best;
}

/// Rules b-d of the header inside one search directory.
std::optional<fs::path> find_inside(const fs::path& dir,
                                    const std::string& wanted,
                                    std::vector<std::string>& near_misses) {
  const std::vector<fs::path> entries = subdirectories(dir);
  auto miss = [&](const fs::path& folder) {
    near_misses.push_back(fmt::format(
        "{}: named like the model but has no {}; is it a diffusers-format "
        "model directory?",
        folder.string(), kIndex));
  };
  // b. NAME
  for (const fs::path& entry : entries)
    if (ascii_lower(entry.filename().string()) == wanted) {
      if (is_model_dir(entry)) return entry;
      miss(entry);
    }
  // c. ORG--NAME
  for (const fs::path& entry : entries) {
    const std::string name = ascii_lower(entry.filename().string());
    if (!starts_with(name, "models--") && name.size() > wanted.size() + 2 &&
        ends_with(name, "--" + wanted)) {
      if (is_model_dir(entry)) return entry;
      miss(entry);
    }
  }
  // d. models--ORG--NAME, here or under hub/
  for (const fs::path& root : {dir, dir / "hub"}) {
    const std::vector<fs::path> candidates =
        root == dir ? entries : subdirectories(root);
    for (const fs::path& entry : candidates) {
      const std::string name = ascii_lower(entry.filename().string());
      if (starts_with(name, "models--") && ends_with(name, "--" + wanted) &&
          name.size() > std::string("models--").size() + wanted.size() + 2) {
        if (auto snapshot = hf_snapshot(entry, near_misses)) return snapshot;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

// ---- ModelDir --------------------------------------------------------------

ModelDir ModelDir::open(const fs::path& root) {
  const std::string type = describe_file_type(root);
  if (type == "missing" || type == "a dangling symlink")
    throw NotFound(fmt::format(
        "model directory {} does not exist: check the path (it is the "
        "directory with model_index.json)",
        root.string()));
  if (type != "a directory")
    throw InvalidArgument(fmt::format(
        "model directory {} is {}, not a directory: give the directory that "
        "holds model_index.json",
        root.string(), type));
  const fs::path index = root / kIndex;
  const std::string index_type = describe_file_type(index);
  if (index_type == "missing" || index_type == "a dangling symlink")
    throw NotFound(fmt::format(
        "{} has no {}: is it a diffusers-format model directory? it must have "
        "{} at its root (download the whole model repository, not single "
        "files)",
        root.string(), kIndex, kIndex));

  const JsonConfig json = JsonConfig::read(index);
  ModelDir dir;
  dir.root_ = root;
  dir.pipeline_class_ = json.string("_class_name");
  if (dir.pipeline_class_.empty())
    throw ConfigError(
        index, 0, "_class_name",
        "is empty; it names the pipeline, e.g. \"ZImagePipeline\"");

  for (const std::string& key : json.keys()) {
    if (starts_with(key, "_")) continue;
    const std::string value = json.dump(key);
    if (value == "true" || value == "false" ||
        (!value.empty() &&
         (std::isdigit(static_cast<unsigned char>(value[0])) ||
          value[0] == '-')))
      continue;  // a pipeline option ("requires_safety_checker": true)
    if (value == "[null,null]") {
      dir.absent_.push_back(key);
      continue;
    }
    auto not_a_pair = [&]() {
      return ConfigError(
          index, 0, key,
          fmt::format(
              "must be a [library, class] pair such as [\"diffusers\", "
              "\"AutoencoderKL\"], or [null, null] for an absent "
              "component; found {}",
              escape_control(value.size() > 80 ? value.substr(0, 77) + "..."
                                               : value)));
    };
    if (value.empty() || value[0] != '[') throw not_a_pair();
    std::vector<std::string> pair;
    try {
      pair = json.strings(key);
    } catch (const ConfigError&) {
      throw not_a_pair();
    }
    if (pair.size() != 2 || pair[0].empty() || pair[1].empty())
      throw not_a_pair();
    if (!plain_folder_name(key))
      throw ConfigError(index, 0, key,
                        "a component's name is its folder and must be a plain "
                        "folder name (letters, digits, '_', '-', '.')");
    dir.components_.push_back({key, pair[0], pair[1]});
  }
  std::sort(
      dir.components_.begin(), dir.components_.end(),
      [](const Component& a, const Component& b) { return a.name < b.name; });

  for (const Component& component : dir.components_) {
    const fs::path folder = root / component.name;
    const std::string folder_type = describe_file_type(folder);
    if (folder_type == "missing" || folder_type == "a dangling symlink")
      throw NotFound(fmt::format(
          "{} lists the component '{}' ({}) but {} is missing: the download "
          "is incomplete; fetch the {}/ folder of the model again",
          index.string(), component.name, component.class_name, folder.string(),
          component.name));
    if (folder_type != "a directory")
      throw InvalidArgument(fmt::format(
          "{} lists the component '{}' ({}) but {} is {}, not a directory: "
          "fetch the {}/ folder of the model again",
          index.string(), component.name, component.class_name, folder.string(),
          folder_type, component.name));
  }
  return dir;
}

std::vector<std::string> ModelDir::components() const {
  std::vector<std::string> names;
  for (const Component& component : components_)
    names.push_back(component.name);
  return names;
}

bool ModelDir::has(const std::string& name) const {
  return std::any_of(components_.begin(), components_.end(),
                     [&](const Component& c) { return c.name == name; });
}

const ModelDir::Component& ModelDir::component(const std::string& name) const {
  for (const Component& c : components_)
    if (c.name == name) return c;
  const std::string index = (root_ / kIndex).string();
  if (std::find(absent_.begin(), absent_.end(), name) != absent_.end())
    throw NotFound(fmt::format(
        "the model in {} has no '{}': {} lists it as [null, null] (absent)",
        root_.string(), escape_control(name), index));
  std::string present;
  for (const Component& c : components_)
    present += (present.empty() ? "" : ", ") + c.name;
  throw NotFound(fmt::format(
      "the model in {} has no component '{}' ({} lists: {}); is it the right "
      "model for this pipeline?",
      root_.string(), escape_control(name), index,
      present.empty() ? "none" : present));
}

std::string ModelDir::component_library(const std::string& name) const {
  return component(name).library;
}

std::string ModelDir::component_class(const std::string& name) const {
  return component(name).class_name;
}

fs::path ModelDir::component_dir(const std::string& name) const {
  return root_ / component(name).name;
}

fs::path ModelDir::config_path(const std::string& name) const {
  const Component& c = component(name);
  const char* file = "config.json";
  if (ends_with(c.class_name, "Scheduler"))
    file = "scheduler_config.json";
  else if (c.class_name.find("Tokenizer") != std::string::npos)
    file = "tokenizer_config.json";
  else if (c.class_name.find("ImageProcessor") != std::string::npos ||
           c.class_name.find("FeatureExtractor") != std::string::npos)
    file = "preprocessor_config.json";
  const fs::path path = root_ / c.name / file;
  if (!is_file(path))
    throw NotFound(fmt::format(
        "{} ({}) has no {}: {} is {}; the download is incomplete, fetch the "
        "{}/ folder of the model again",
        (root_ / c.name).string(), c.class_name, file, path.string(),
        describe_file_type(path), c.name));
  return path;
}

fs::path ModelDir::weights_path(const std::string& name) const {
  const Component& c = component(name);
  const fs::path folder = root_ / c.name;
  std::vector<fs::path> indexes, files, others;
  std::error_code ec;
  fs::directory_iterator it(folder, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (!is_file(it->path())) continue;
    if (ends_with(file, ".safetensors.index.json"))
      indexes.push_back(it->path());
    else if (ends_with(file, ".safetensors"))
      files.push_back(it->path());
    else if (ends_with(file, ".bin") || ends_with(file, ".pt") ||
             ends_with(file, ".ckpt") || ends_with(file, ".gguf"))
      others.push_back(it->path());
  }
  std::sort(indexes.begin(), indexes.end());
  std::sort(files.begin(), files.end());
  if (indexes.size() == 1) return indexes.front();
  if (indexes.size() > 1)
    throw InvalidArgument(fmt::format(
        "{} ({}) has {} weight indexes ({} and {}): keep one "
        "*.safetensors.index.json",
        folder.string(), c.class_name, indexes.size(),
        indexes[0].filename().string(), indexes[1].filename().string()));
  if (files.size() == 1) return files.front();
  if (files.size() > 1) return folder;
  if (!others.empty())
    throw NotFound(fmt::format(
        "{} ({}) has no *.safetensors weights, only {}: mold reads safetensors "
        "only; download the safetensors files of the model",
        folder.string(), c.class_name, others.front().filename().string()));
  throw NotFound(fmt::format(
      "{} ({}) has no weights (*.safetensors or *.safetensors.index.json): "
      "the download is incomplete, fetch the {}/ folder of the model again",
      folder.string(), c.class_name, c.name));
}

// ---- where models live -----------------------------------------------------

fs::path default_models_dir() {
  if (const char* xdg = std::getenv("XDG_DATA_HOME");
      xdg && *xdg && fs::path(xdg).is_absolute())
    return fs::path(xdg) / "mold" / "models";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".local" / "share" / "mold" / "models";
  return {};
}

std::vector<fs::path> model_search_dirs(const std::vector<fs::path>& from_flag,
                                        const Config& config) {
  std::vector<fs::path> dirs = from_flag;
  if (const char* env = std::getenv("MOLD_MODELS_DIR"); env && *env) {
    const std::string list = env;
    std::size_t start = 0;
    while (start <= list.size()) {
      const std::size_t colon = std::min(list.find(':', start), list.size());
      if (colon > start) dirs.emplace_back(list.substr(start, colon - start));
      start = colon + 1;
    }
  }
  dirs.insert(dirs.end(), config.model_dirs.begin(), config.model_dirs.end());
  if (fs::path fallback = default_models_dir(); !fallback.empty())
    dirs.push_back(std::move(fallback));
  return dirs;
}

ModelLookup find_model_dir(const std::string& model_name,
                           const std::vector<fs::path>& search_dirs,
                           std::size_t explicit_dirs) {
  ModelLookup lookup;
  const std::string wanted = ascii_lower(model_name);
  std::set<fs::path> seen;
  for (std::size_t i = 0; i < search_dirs.size(); ++i) {
    const fs::path& dir = search_dirs[i];
    if (!seen.insert(dir.lexically_normal()).second) continue;
    lookup.looked_in.push_back(dir);
    if (wanted.empty() || !is_dir(dir)) continue;
    if (is_model_dir(dir) &&
        (i < explicit_dirs || ascii_lower(name_of(dir)) == wanted)) {
      lookup.found = dir;
      return lookup;
    }
    if (auto found = find_inside(dir, wanted, lookup.near_misses)) {
      lookup.found = *found;
      return lookup;
    }
  }
  return lookup;
}

ModelLookup find_model_dir(const std::string& model_name,
                           const std::vector<fs::path>& from_flag,
                           const Config& config) {
  return find_model_dir(model_name, model_search_dirs(from_flag, config),
                        from_flag.size());
}

std::string describe_lookup(const ModelLookup& lookup,
                            const std::string& model_name) {
  const std::string model = escape_control(model_name);
  if (lookup.found)
    return fmt::format("{}: weights in {}", model, lookup.found->string());
  std::string text = fmt::format("no weights found for {}.", model);
  if (lookup.looked_in.empty()) {
    text +=
        " There was nowhere to look (no --model-dir, MOLD_MODELS_DIR, "
        "[models] dirs, and neither XDG_DATA_HOME nor HOME is set).";
  } else {
    text += " Looked in:";
    for (const fs::path& dir : lookup.looked_in) {
      const std::string type = describe_file_type(dir);
      text += "\n  " + escape_control(dir.string());
      if (type != "a directory") text += " (" + type + ")";
    }
  }
  if (!lookup.near_misses.empty()) {
    text += "\nNear misses:";
    for (const std::string& miss : lookup.near_misses)
      text += "\n  " + escape_control(miss);
  }
  text += fmt::format(
      "\nPoint mold at the model, a diffusers-format directory with "
      "model_index.json (e.g. a download of the Hugging Face repository), "
      "with one of:\n"
      "  --model-dir DIR                the model directory itself, or a "
      "directory holding it as {}/\n"
      "  MOLD_MODELS_DIR=DIR[:DIR...]   directories holding models\n"
      "  [models] dirs = [\"DIR\"]        in the config file\n"
      "or run with --tiny: the tiny architecture with seeded weights (no "
      "download; the image is noise, not a picture).",
      model);
  return text;
}

}  // namespace mold
