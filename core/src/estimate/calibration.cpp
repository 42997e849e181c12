#include "mold/estimate/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "config/toml_reader.hpp"

namespace mold {

namespace fs = std::filesystem;

namespace {

double positive_number(const fs::path& file, const toml::node& node,
                       const std::string& key) {
  const auto value = node.value<double>();
  if (!value || !std::isfinite(*value) || *value <= 0)
    throw ConfigError(file, toml_reader::line_of(node), key,
                      "must be a positive number");
  return *value;
}

double nonnegative_number(const fs::path& file, const toml::node& node,
                          const std::string& key) {
  const auto value = node.value<double>();
  if (!value || !std::isfinite(*value) || *value < 0)
    throw ConfigError(file, toml_reader::line_of(node), key,
                      "must be a number of at least 0");
  return *value;
}

std::string string_value(const fs::path& file, const toml::node& node,
                         const std::string& key) {
  const auto value = node.value<std::string>();
  if (!value)
    throw ConfigError(file, toml_reader::line_of(node), key,
                      "must be a string");
  return *value;
}

// The keys both kinds of table share.
void apply_common_keys(const fs::path& file, const toml::table& table,
                       const std::string& prefix, bool& calibrated,
                       std::string& source, double& headroom) {
  if (const toml::node* node = table.get("calibrated")) {
    const auto value = node->value<bool>();
    if (!value)
      throw ConfigError(file, toml_reader::line_of(*node),
                        prefix + ".calibrated", "must be true or false");
    calibrated = *value;
  }
  if (const toml::node* node = table.get("source"))
    source = string_value(file, *node, prefix + ".source");
  if (const toml::node* node = table.get("headroom")) {
    headroom = positive_number(file, *node, prefix + ".headroom");
    if (headroom < 1.0)
      throw ConfigError(
          file, toml_reader::line_of(*node), prefix + ".headroom",
          "must be at least 1.0 (an estimate may not undercut what was "
          "measured)");
  }
}

// Sets the keys `table` has on `model`. A table that starts a model (no shipped
// table beneath it) must give bytes_per_pixel.
void apply_table(PixelLinearModel& model, const fs::path& file,
                 const toml::table& table, bool starts_model) {
  const std::string prefix = model.op + "." + model.backend +
                             (model.arch.empty() ? "" : "." + model.arch);
  // Sub-tables are architectures' (apply_or_start reads them).
  std::vector<std::string_view> known = {"bytes_per_pixel",
                                         "float32_bytes_per_pixel",
                                         "calibrated",
                                         "source",
                                         "points",
                                         "headroom",
                                         "attention_fixed_bytes",
                                         "bytes_per_latent_score"};
  for (const auto& [key, node] : table)
    if (node.is_table()) known.emplace_back(key.str());
  toml_reader::require_known_keys(file, table, prefix, known);
  if (starts_model)
    model.file = file;
  else
    model.overridden_by = file;
  if (const toml::node* k = table.get("bytes_per_pixel")) {
    model.bytes_per_pixel =
        positive_number(file, *k, prefix + ".bytes_per_pixel");
  } else if (starts_model) {
    throw ConfigError(
        file, toml_reader::line_of(table), prefix + ".bytes_per_pixel",
        "is missing: every [op.backend] table needs bytes_per_pixel (or, "
        "for a text encoder or denoiser, bytes_per_token)");
  }
  if (const toml::node* k = table.get("attention_fixed_bytes"))
    model.attention_fixed_bytes =
        nonnegative_number(file, *k, prefix + ".attention_fixed_bytes");
  if (const toml::node* k = table.get("bytes_per_latent_score"))
    model.bytes_per_latent_score =
        nonnegative_number(file, *k, prefix + ".bytes_per_latent_score");
  if (const toml::node* k = table.get("float32_bytes_per_pixel"))
    model.float32_bytes_per_pixel =
        nonnegative_number(file, *k, prefix + ".float32_bytes_per_pixel");
  apply_common_keys(file, table, prefix, model.calibrated, model.source,
                    model.headroom);
  if (const toml::node* points = table.get("points")) {
    const auto* array = points->as_array();
    const std::string key = prefix + ".points";
    if (!array)
      throw ConfigError(file, toml_reader::line_of(*points), key,
                        "must be an array of [pixels, bytes_per_pixel] pairs");
    model.points.clear();
    for (const auto& item : *array) {
      const auto* pair = item.as_array();
      if (!pair || pair->size() != 2)
        throw ConfigError(
            file, toml_reader::line_of(item), key,
            "every entry must be a [pixels, bytes_per_pixel] pair");
      model.points.emplace_back(positive_number(file, *pair->get(0), key),
                                positive_number(file, *pair->get(1), key));
    }
    std::sort(model.points.begin(), model.points.end());
  }
}

constexpr std::string_view kFactorSuffix = "_factor";
constexpr std::size_t kFactorSuffixSize = kFactorSuffix.size();

// "attention_factor": a stage's factor (SequenceModel::stage_factors).
bool is_stage_factor_key(const std::string& key) {
  return key.size() > kFactorSuffixSize &&
         key.compare(key.size() - kFactorSuffixSize, kFactorSuffixSize,
                     kFactorSuffix) == 0;
}

// A table of the per-token kind: one that names any key only that kind has.
bool is_sequence_table(const toml::table& table) {
  for (const char* key :
       {"bytes_per_token", "bytes_per_score", "fixed_bytes", "arch"})
    if (table.contains(key)) return true;
  for (const auto& [key, node] : table)
    if (is_stage_factor_key(std::string(key.str()))) return true;
  return false;
}

void apply_table(SequenceModel& model, const fs::path& file,
                 const toml::table& table, bool starts_model) {
  const std::string prefix = model.op + "." + model.backend;
  // Stage factors ("attention_factor") first: their names are the plugin's.
  toml::table rest = table;
  for (const auto& [key, node] : table) {
    const std::string name(key.str());
    if (!is_stage_factor_key(name)) continue;
    const std::string stage = name.substr(0, name.size() - kFactorSuffixSize);
    model.stage_factors[stage] =
        positive_number(file, node, prefix + "." + name);
    rest.erase(name);
  }
  toml_reader::require_known_keys(
      file, rest, prefix,
      {"bytes_per_token", "bytes_per_score", "fixed_bytes", "arch",
       "calibrated", "source", "headroom", "STAGE_factor"});
  if (starts_model)
    model.file = file;
  else
    model.overridden_by = file;
  if (const toml::node* k = table.get("bytes_per_token")) {
    model.bytes_per_token =
        nonnegative_number(file, *k, prefix + ".bytes_per_token");
  } else if (starts_model && model.stage_factors.empty()) {
    throw ConfigError(file, toml_reader::line_of(table),
                      prefix + ".bytes_per_token",
                      "is missing: a table with bytes_per_score, fixed_bytes "
                      "or arch is per token and needs bytes_per_token (or, "
                      "where the plugin counts its stages, a factor per "
                      "stage such as attention_factor)");
  }
  if (const toml::node* k = table.get("bytes_per_score"))
    model.bytes_per_score =
        nonnegative_number(file, *k, prefix + ".bytes_per_score");
  if (const toml::node* k = table.get("fixed_bytes"))
    model.fixed_bytes = nonnegative_number(file, *k, prefix + ".fixed_bytes");
  if (const toml::node* k = table.get("arch"))
    model.arch = string_value(file, *k, prefix + ".arch");
  apply_common_keys(file, table, prefix, model.calibrated, model.source,
                    model.headroom);
}

SequenceModel* find_model(std::vector<SequenceModel>& models,
                          const std::string& op, const std::string& backend) {
  for (auto& m : models)
    if (m.op == op && m.backend == backend) return &m;
  return nullptr;
}

PixelLinearModel* find_model(std::vector<PixelLinearModel>& models,
                             const std::string& op, const std::string& backend,
                             const std::string& arch = "") {
  for (auto& m : models)
    if (m.op == op && m.backend == backend && m.arch == arch) return &m;
  return nullptr;
}

// Applies `table` to the model it overrides, or starts one.
void apply_or_start(std::vector<SequenceModel>& models, const fs::path& file,
                    const toml::table& table, const std::string& op,
                    const std::string& backend) {
  SequenceModel* model = find_model(models, op, backend);
  const bool starts_model = model == nullptr;
  if (starts_model) {
    models.emplace_back();
    models.back().op = op;
    models.back().backend = backend;
    model = &models.back();
  }
  apply_table(*model, file, table, starts_model);
}

// The same for a per-pixel table, whose sub-tables are architectures'.
void apply_or_start(std::vector<PixelLinearModel>& models, const fs::path& file,
                    const toml::table& table, const std::string& op,
                    const std::string& backend, const std::string& arch = "") {
  bool has_keys = false;
  for (const auto& [key, node] : table) {
    if (!node.is_table()) {
      has_keys = true;
      continue;
    }
    if (!arch.empty())
      throw ConfigError(
          file, toml_reader::line_of(node),
          op + "." + backend + "." + arch + "." + std::string(key.str()),
          "is a table in an architecture's table: [" + op + "." + backend +
              ".ARCH] holds numbers only");
    apply_or_start(models, file, *node.as_table(), op, backend,
                   std::string(key.str()));
  }
  // A table holding only architectures' tables sets nothing itself.
  if (!has_keys && !table.empty()) return;
  PixelLinearModel* model = find_model(models, op, backend, arch);
  const bool starts_model = model == nullptr;
  if (starts_model) {
    models.emplace_back();
    models.back().op = op;
    models.back().backend = backend;
    models.back().arch = arch;
    model = &models.back();
  }
  apply_table(*model, file, table, starts_model);
}

// Reads one calibration file's tables into `models`, on top of those already
// there. Returns its [meta] family ("" when it names none).
std::string read_file(const fs::path& file,
                      std::vector<PixelLinearModel>& models,
                      std::vector<SequenceModel>& sequence_models) {
  const toml::table root = toml_reader::parse(file);
  int spatial_scale = 0;
  std::string family;
  if (const toml::node* meta = root.get("meta")) {
    if (!meta->is_table())
      throw ConfigError(file, toml_reader::line_of(*meta), "meta",
                        "must be a table");
    toml_reader::require_known_keys(file, *meta->as_table(), "meta",
                                    {"family", "spatial_scale"});
    if (const toml::node* scale = meta->as_table()->get("spatial_scale"))
      spatial_scale = int(positive_number(file, *scale, "meta.spatial_scale"));
    if (const toml::node* name = meta->as_table()->get("family")) {
      if (!name->is_string())
        throw ConfigError(file, toml_reader::line_of(*name), "meta.family",
                          "must be a string, the family's name");
      family = **name->as_string();
    }
  }
  for (const auto& [op, op_node] : root) {
    if (op.str() == "meta") continue;
    if (!op_node.is_table())
      throw ConfigError(file, toml_reader::line_of(op_node),
                        std::string(op.str()),
                        "must be a table of backends, e.g. [" +
                            std::string(op.str()) + ".cuda]");
    for (const auto& [backend, backend_node] : *op_node.as_table()) {
      const std::string key =
          std::string(op.str()) + "." + std::string(backend.str());
      if (!backend_node.is_table())
        throw ConfigError(file, toml_reader::line_of(backend_node), key,
                          "must be a table, e.g. [" + key + "]");
      const std::string op_name(op.str()), backend_name(backend.str());
      const toml::table& table = *backend_node.as_table();
      // A user's table overrides the shipped one of the same name, whatever
      // its keys; a new one's kind follows from its keys.
      const bool sequence =
          find_model(sequence_models, op_name, backend_name) ||
          (!find_model(models, op_name, backend_name) &&
           is_sequence_table(table));
      if (sequence)
        apply_or_start(sequence_models, file, table, op_name, backend_name);
      else
        apply_or_start(models, file, table, op_name, backend_name);
    }
  }
  if (spatial_scale > 0)
    for (auto& m : models) m.spatial_scale = spatial_scale;
  return family;
}

}  // namespace

void CalibrationFile::check_write_target(const fs::path& file,
                                         const std::string& family) {
  std::vector<PixelLinearModel> models;
  std::vector<SequenceModel> sequence_models;
  const std::string named = read_file(file, models, sequence_models);
  if (!named.empty() && named != family)
    throw ConfigError(
        file, 0, "meta.family",
        fmt::format("is \"{}\": this is the calibration file of the {} "
                    "family, not of {}; give {}'s file",
                    named, named, family, family));
}

double PixelLinearModel::bytes_per_pixel_at(double pixels) const {
  if (points.empty()) return bytes_per_pixel;
  if (pixels < points.front().first)
    return std::max(points.front().second * headroom, bytes_per_pixel);
  if (pixels > points.back().first)
    return std::max(points.back().second * headroom, bytes_per_pixel);
  // The larger of the measured neighbours: a conservative envelope between
  // points, since measured constants are not monotonic (allocator and kernel
  // choices change with size).
  double k = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (points[i].first == pixels) return points[i].second * headroom;
    if (i + 1 < points.size() && points[i].first < pixels &&
        pixels < points[i + 1].first)
      k = std::max(points[i].second, points[i + 1].second);
  }
  return k * headroom;
}

Estimate PixelLinearModel::estimate(const Workload& workload) const {
  workload.validate();
  const Bytes element = dtype_size(workload.dtype);
  long long height = workload.height, width = workload.width;
  std::string area_note;
  if (workload.tile > 0) {
    const long long tile_px =
        static_cast<long long>(workload.tile) * spatial_scale;
    height = std::min(height, tile_px);
    width = std::min(width, tile_px);
    area_note = fmt::format(" (one tile: {}x{} px of {}x{})", height, width,
                            workload.height, workload.width);
  }
  const double pixels = double(height) * double(width);
  const double k = bytes_per_pixel_at(pixels);
  const double bytes = k * pixels * double(element) * double(workload.batch) *
                       double(workload.frames);

  Estimate estimate;
  std::string detail =
      fmt::format("{:g} B/px/elem-byte x {:.0f} px x {} B ({}) x batch {}", k,
                  pixels, element, workload.dtype, workload.batch);
  if (workload.frames != 1)
    detail += fmt::format(" x {} frames", workload.frames);
  estimate.terms.emplace_back(
      "activations" + area_note,
      bytes_from_double(bytes, "the estimate of " + workload.describe()),
      detail, "bytes_per_pixel",
      pixels * double(element) * double(workload.batch) *
          double(workload.frames));
  if (float32_bytes_per_pixel > 0) {
    const double basis =
        pixels * 4.0 * double(workload.batch) * double(workload.frames);
    estimate.terms.emplace_back(
        "float32 activations" + area_note,
        bytes_from_double(float32_bytes_per_pixel * basis,
                          "the estimate of " + workload.describe()),
        fmt::format("{:g} B/px/float32-byte x {:.0f} px x 4 B (computed in "
                    "float32 in every dtype) x batch {}{}",
                    float32_bytes_per_pixel, pixels, workload.batch,
                    workload.frames != 1
                        ? fmt::format(" x {} frames", workload.frames)
                        : std::string()),
        "float32_bytes_per_pixel", basis);
  }
  for (const auto& t : estimate.terms) estimate.bytes += t.bytes;
  if (bytes_per_latent_score > 0) {
    // The attention's scores and the convolutions' activations peak at
    // different times: the larger of the two.
    const double tokens = pixels / (double(spatial_scale) * spatial_scale);
    const double per_item = double(workload.batch) * double(workload.frames);
    // In chunks (the bounded rung) the scores take at most the bound.
    const double scores =
        workload.attention_bound > 0
            ? std::min(
                  bytes_per_latent_score * tokens * tokens * double(element),
                  double(workload.attention_bound))
            : bytes_per_latent_score * tokens * tokens * double(element);
    const double attention =
        (attention_fixed_bytes + scores) * headroom * per_item;
    if (attention > double(estimate.bytes)) {
      estimate.terms.clear();
      estimate.terms.emplace_back(
          "attention scores" + area_note,
          bytes_from_double(attention,
                            "the estimate of " + workload.describe()),
          fmt::format("({:g} B + {:g} B x {:.0f}^2 latent tokens x {} B) x "
                      "headroom {:g} x batch {}{}",
                      attention_fixed_bytes, bytes_per_latent_score, tokens,
                      element, headroom, workload.batch,
                      workload.frames != 1
                          ? fmt::format(" x {} frames", workload.frames)
                          : std::string()),
          // affine (a fixed part and a per-score part): no one constant
          // scales it
          std::string(), 0.0);
      estimate.bytes = estimate.terms.back().bytes;
    }
  }
  estimate.calibrated = calibrated;
  estimate.source = fmt::format("{} [{}.{}{}]{}{}", file.filename().string(),
                                op, backend, arch.empty() ? "" : "." + arch,
                                source.empty() ? "" : ": ", source);
  if (!points.empty())
    estimate.source += fmt::format(" ({} measured points, headroom x{:g})",
                                   points.size(), headroom);
  if (!overridden_by.empty())
    estimate.source += fmt::format(" (keys set by {})", overridden_by.string());
  return estimate;
}

CalibrationFile CalibrationFile::load(const fs::path& shipped,
                                      const fs::path& user_override) {
  CalibrationFile result;
  read_file(shipped, result.models_, result.sequence_models_);
  if (result.models_.empty() && result.sequence_models_.empty())
    throw ConfigError(shipped, 0, "",
                      "has no [op.backend] tables: nothing to estimate with");
  std::error_code ec;
  if (!user_override.empty() && fs::is_regular_file(user_override, ec))
    read_file(user_override, result.models_, result.sequence_models_);
  return result;
}

const PixelLinearModel* CalibrationFile::find(const std::string& op,
                                              const std::string& backend,
                                              const std::string& arch) const {
  for (const auto& model : models_)
    if (model.op == op && model.backend == backend && model.arch == arch)
      return &model;
  return nullptr;
}

const SequenceModel* CalibrationFile::find_sequence(
    const std::string& op, const std::string& backend) const {
  for (const auto& model : sequence_models_)
    if (model.op == op && model.backend == backend) return &model;
  return nullptr;
}

std::vector<std::pair<EstimatorKey, Estimator>> CalibrationFile::estimators(
    const std::string& family) const {
  std::vector<std::pair<EstimatorKey, Estimator>> out;
  for (const auto& model : models_) {
    if (!model.arch.empty()) continue;
    // An architecture's table on this backend, else its cpu table (marked
    // not calibrated here), else the published one's.
    std::vector<PixelLinearModel> archs, cpu_archs;
    for (const auto& other : models_) {
      if (other.arch.empty() || other.op != model.op) continue;
      if (other.backend == model.backend) archs.push_back(other);
      if (other.backend == "cpu" && model.backend != "cpu") {
        cpu_archs.push_back(other);
        cpu_archs.back().calibrated = false;
      }
    }
    out.emplace_back(EstimatorKey{family, model.op, model.backend},
                     [model, archs, cpu_archs](const Workload& workload) {
                       for (const auto* list : {&archs, &cpu_archs})
                         for (const auto& a : *list)
                           if (a.arch == workload.arch)
                             return a.estimate(workload);
                       return model.estimate(workload);
                     });
  }
  return out;
}

}  // namespace mold
