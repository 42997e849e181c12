#include "mold/tensor/weight_set.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mold/base/text.hpp"
#include "mold/config/json_config.hpp"

namespace mold {

namespace fs = std::filesystem;

namespace {}  // namespace

WeightSet WeightSet::single(SafetensorsFile file) {
  WeightSet set;
  set.origin_ = file.path();
  for (const auto& name : file.names()) set.where_[name] = 0;
  set.files_.push_back(std::move(file));
  return set;
}

WeightSet WeightSet::open(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> indexes, shards;
    for (const auto& item : fs::directory_iterator(path, ec)) {
      const std::string name = item.path().filename().string();
      if (ends_with(name, ".safetensors.index.json"))
        indexes.push_back(item.path());
      else if (ends_with(name, ".safetensors"))
        shards.push_back(item.path());
    }
    if (ec)
      throw SafetensorsError(
          fmt::format("{}: cannot list it ({})", path.string(), ec.message()));
    std::sort(indexes.begin(), indexes.end());
    std::sort(shards.begin(), shards.end());
    if (indexes.size() > 1)
      throw SafetensorsError(fmt::format(
          "{}: {} index files ({} and {}); keep one, or give the index to use",
          path.string(), indexes.size(), indexes[0].filename().string(),
          indexes[1].filename().string()));
    if (indexes.size() == 1) {
      WeightSet set = open(indexes[0]);
      set.origin_ = path;
      return set;
    }
    if (shards.empty())
      throw SafetensorsError(fmt::format(
          "{}: no .safetensors file or *.safetensors.index.json in it; is it "
          "a model component's folder?",
          path.string()));
    WeightSet set;
    set.origin_ = path;
    for (const auto& shard : shards) {
      SafetensorsFile file = SafetensorsFile::open(shard);
      for (const auto& name : file.names()) {
        auto [it, fresh] = set.where_.emplace(name, set.files_.size());
        if (!fresh)
          throw SafetensorsError(fmt::format(
              "{}: tensor '{}' is in both {} and {}; remove the stray file",
              path.string(), name,
              set.files_[it->second].path().filename().string(),
              shard.filename().string()));
      }
      set.files_.push_back(std::move(file));
    }
    return set;
  }
  if (ends_with(path.filename().string(), ".json")) {
    const JsonConfig index = JsonConfig::read(path);
    const JsonConfig map = index.object("weight_map");
    WeightSet set;
    set.origin_ = path;
    std::map<std::string, std::size_t> by_file;
    for (const auto& tensor : map.keys()) {
      const std::string shard = map.string(tensor);
      const fs::path shard_path = path.parent_path() / shard;
      if (shard.empty() || fs::path(shard).is_absolute() ||
          shard.find("..") != std::string::npos ||
          shard.find('/') != std::string::npos)
        throw SafetensorsError(fmt::format(
            "{}: tensor '{}' is mapped to '{}', which is not a file name "
            "beside the index",
            path.string(), tensor, shard));
      auto it = by_file.find(shard);
      if (it == by_file.end()) {
        if (!fs::exists(shard_path, ec))
          throw SafetensorsError(fmt::format(
              "{}: shard {} (of tensor '{}') is missing; download every "
              "file the index names",
              path.string(), shard, tensor));
        it = by_file.emplace(shard, set.files_.size()).first;
        set.files_.push_back(SafetensorsFile::open(shard_path));
      }
      if (!set.files_[it->second].contains(tensor))
        throw SafetensorsError(fmt::format(
            "{}: tensor '{}' should be in {} but is not; the shard and the "
            "index disagree (a partial download?)",
            path.string(), tensor, shard));
      set.where_[tensor] = it->second;
    }
    if (set.files_.empty())
      throw SafetensorsError(
          fmt::format("{}: the weight_map is empty; is it the right index?",
                      path.string()));
    return set;
  }
  return single(SafetensorsFile::open(path));
}

std::vector<std::string> WeightSet::names() const {
  std::vector<std::string> out;
  out.reserve(where_.size());
  for (const auto& [name, file] : where_) out.push_back(name);
  return out;
}

const SafetensorsFile& WeightSet::file_of(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end())
    throw SafetensorsError(
        fmt::format("{}: no tensor '{}'", origin_.string(), name));
  return files_[it->second];
}

const SafetensorsEntry& WeightSet::entry(const std::string& name) const {
  return file_of(name).entry(name);
}

at::Tensor WeightSet::view(const std::string& name) const {
  return file_of(name).view(name);
}

void WeightSet::read_into(const std::string& name,
                          at::Tensor& destination) const {
  file_of(name).read_into(name, destination);
}

std::vector<std::string> WeightSet::in_file_order(
    std::vector<std::string> names) const {
  std::vector<std::pair<std::pair<std::size_t, std::size_t>, std::string>>
      keyed;
  keyed.reserve(names.size());
  for (auto& name : names) {
    auto it = where_.find(name);
    const std::size_t file = it == where_.end() ? files_.size() : it->second;
    const std::size_t offset =
        it == where_.end() ? 0 : files_[file].file_offset(name);
    keyed.push_back({{file, offset}, std::move(name)});
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::string> out;
  out.reserve(keyed.size());
  for (auto& [key, name] : keyed) out.push_back(std::move(name));
  return out;
}

void WeightSet::add_to(TensorListing& listing) const {
  for (std::size_t i = 0; i < files_.size(); ++i) {
    std::map<std::string, SafetensorsEntry> entries;
    for (const auto& [name, entry] : files_[i].entries()) {
      const auto it = where_.find(name);
      if (it != where_.end() && it->second == i) entries.emplace(name, entry);
    }
    listing.add_safetensors(files_[i].path(), entries);
  }
}

std::size_t WeightSet::largest_tensor_bytes() const {
  std::size_t largest = 0;
  for (const auto& [name, file] : where_) {
    const SafetensorsEntry& e = files_[file].entry(name);
    largest = std::max(largest, e.end - e.begin);
  }
  return largest;
}

}  // namespace mold
