#include "mold/catalog/model_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <set>

#include "mold/base/file_io.hpp"
#include "mold/base/text.hpp"
#include "mold/catalog/model_dir.hpp"
#include "mold/config/config.hpp"

namespace mold {

namespace fs = std::filesystem;

namespace {

bool is_dir(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

bool is_model_dir(const fs::path& path) { return ModelDir::is_model_dir(path); }

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
  std::error_code ec;
  if (fs::exists(entry / "refs" / "main", ec)) {
    // A commit hash and a newline; anything else (a FIFO, a device, a huge
    // file) is not a ref, and the newest snapshot is taken instead.
    std::string hash;
    try {
      hash = read_regular_file(entry / "refs" / "main", 256, "refs/main");
    } catch (const Error& e) {
      near_misses.push_back(e.what());
    }
    while (!hash.empty() &&
           std::isspace(static_cast<unsigned char>(hash.back())))
      hash.pop_back();
    if (is_plain_name(hash) && is_model_dir(snapshots / hash))
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
        entry.string(), ModelDir::kIndexFile));
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
        folder.string(), ModelDir::kIndexFile));
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
