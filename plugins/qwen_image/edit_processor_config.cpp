#include "edit_processor_config.hpp"

#include <fmt/format.h>

#include <cmath>
#include <mold/config/json_config.hpp>
#include <string>
#include <vector>

namespace qwen_image {

namespace {

bool near(double a, double b) {
  return std::abs(a - b) <= 1e-6 * std::max(1.0, std::abs(b));
}

void require_numbers(const mold::JsonConfig& json, const char* key,
                     const std::vector<double>& expected, const char* what) {
  if (!json.has_value(key)) return;
  const std::vector<double> found = json.numbers(key);
  bool same = found.size() == expected.size();
  for (std::size_t i = 0; same && i < found.size(); ++i)
    same = near(found[i], expected[i]);
  if (!same)
    json.fail(key, fmt::format("is {}; mold's Qwen-Image-Edit processor "
                               "normalises with {} (the published one)",
                               json.shown(key), what));
}

void require_number(const mold::JsonConfig& json, const char* key,
                    double expected, const char* what) {
  if (json.has_value(key) && !near(json.number(key), expected))
    json.fail(key, fmt::format("is {}; mold's Qwen-Image-Edit processor "
                               "takes {} (the published value)",
                               json.shown(key), what));
}

void require_true(const mold::JsonConfig& json, const char* key) {
  if (json.has_value(key) && !json.boolean(key))
    json.fail(key,
              "is false; mold's Qwen-Image-Edit processor always does "
              "this step, as the published one does");
}

}  // namespace

void check_edit_processor_config(const std::filesystem::path& file) {
  const mold::JsonConfig json = mold::JsonConfig::read(file);
  require_numbers(json, "image_mean", {0.48145466, 0.4578275, 0.40821073},
                  "CLIP's mean [0.48145466, 0.4578275, 0.40821073]");
  require_numbers(json, "image_std", {0.26862954, 0.26130258, 0.27577711},
                  "CLIP's std [0.26862954, 0.26130258, 0.27577711]");
  require_number(json, "rescale_factor", 1.0 / 255, "1/255");
  for (const char* key :
       {"do_resize", "do_rescale", "do_normalize", "do_convert_rgb"})
    require_true(json, key);
  require_number(json, "resample", 3, "3 (bicubic)");
  require_number(json, "patch_size", 14, "14");
  require_number(json, "merge_size", 2, "2");
  require_number(json, "temporal_patch_size", 2, "2");
  require_number(json, "min_pixels", 3136, "3136");
  if (json.has_value("max_pixels") && !near(json.number("max_pixels"), 1003520))
    require_number(json, "max_pixels", 12845056, "12845056");
  if (json.has_value("size")) {
    const mold::JsonConfig size = json.object("size");
    require_number(size, "shortest_edge", 3136, "3136 (min_pixels)");
    if (size.has_value("longest_edge") &&
        !near(size.number("longest_edge"), 1003520))
      require_number(size, "longest_edge", 12845056, "12845056 (max_pixels)");
  }
}

}  // namespace qwen_image
