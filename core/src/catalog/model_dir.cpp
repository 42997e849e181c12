#include "mold/catalog/model_dir.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "mold/base/error.hpp"
#include "mold/base/file_io.hpp"
#include "mold/base/text.hpp"
#include "mold/config/json_config.hpp"

namespace mold {

namespace fs = std::filesystem;

namespace {

bool is_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

}  // namespace

// ---- ModelDir --------------------------------------------------------------

bool ModelDir::is_model_dir(const fs::path& path) {
  return is_file(path / ModelDir::kIndexFile);
}

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
  const fs::path index = root / ModelDir::kIndexFile;
  const std::string index_type = describe_file_type(index);
  if (index_type == "missing" || index_type == "a dangling symlink")
    throw NotFound(fmt::format(
        "{} has no {}: is it a diffusers-format model directory? it must have "
        "{} at its root (download the whole model repository, not single "
        "files)",
        root.string(), ModelDir::kIndexFile, ModelDir::kIndexFile));

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
    if (!is_plain_name(key))
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

bool ModelDir::is_absent(const std::string& name) const {
  return std::find(absent_.begin(), absent_.end(), name) != absent_.end();
}

const ModelDir::Component& ModelDir::component(const std::string& name) const {
  for (const Component& c : components_)
    if (c.name == name) return c;
  const std::string index = (root_ / ModelDir::kIndexFile).string();
  if (is_absent(name))
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

namespace {

std::string quoted_list(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i)
    text += (i ? (i + 1 == names.size() ? " or " : ", ") : "") +
            ("\"" + names[i] + "\"");
  return text;
}

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

void require_model_classes(const ModelDir& dir, const ModelInfo& model,
                           const std::set<std::string>& given) {
  const fs::path index = dir.root() / ModelDir::kIndexFile;
  if (!model.pipeline_classes.empty() &&
      !listed(model.pipeline_classes, dir.pipeline_class()))
    throw ConfigError(
        index, 0, "_class_name",
        fmt::format("is \"{}\"; {} is a {} directory: is this the folder of "
                    "another model? (give {}'s, or the model this folder is)",
                    escape_control(dir.pipeline_class()), model.name,
                    quoted_list(model.pipeline_classes), model.name));
  for (const auto& [component, classes] : model.component_classes) {
    if (given.count(component)) continue;
    if (!dir.has(component))
      throw ConfigError(
          index, 0, component,
          fmt::format("is {} in it; {} needs its {} ({}): is this the folder "
                      "of another model? (or give the component as a file)",
                      dir.is_absent(component)
                          ? "[null, null] (no component)"
                          : "missing, or not a [library, class] pair,",
                      model.name, component, quoted_list(classes)));
    const std::string found = dir.component_class(component);
    if (!listed(classes, found))
      throw ConfigError(
          index, 0, component,
          fmt::format("names the class \"{}\"; {}'s {} is {}: the folder "
                      "holds another model's {}",
                      escape_control(found), model.name, component,
                      quoted_list(classes), component));
  }
}

}  // namespace mold
