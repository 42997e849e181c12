// The edit model's image processor config: the published values (as the
// Qwen-Image-Edit-2511 repository's processor/preprocessor_config.json gives
// them) pass, absent keys take the class defaults, and each value that would
// change the math is refused naming the file and the key.

#include "edit_processor_config.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <mold/base/error.hpp>
#include <string>

#include "support/process.hpp"

namespace {

const char* const kPublished = R"({
  "do_convert_rgb": true, "do_normalize": true, "do_rescale": true,
  "do_resize": true,
  "image_mean": [0.48145466, 0.4578275, 0.40821073],
  "image_processor_type": "Qwen2VLImageProcessor",
  "image_std": [0.26862954, 0.26130258, 0.27577711],
  "max_pixels": 12845056, "merge_size": 2, "min_pixels": 3136,
  "patch_size": 14, "processor_class": "Qwen2_5_VLProcessor",
  "resample": 3, "rescale_factor": 0.00392156862745098,
  "size": {"longest_edge": 12845056, "shortest_edge": 3136},
  "temporal_patch_size": 2)";

}  // namespace

TEST_CASE(
    "Qwen-Image-Edit's processor config: the published values pass, others "
    "are refused by key",
    "[qwen_image]") {
  mold::test::TempDir dir;
  int n = 0;
  auto write = [&](const std::string& extra) {
    const std::string path =
        dir.path() + "/preprocessor_config" + std::to_string(n++) + ".json";
    std::ofstream(path) << kPublished << extra << "}";
    return path;
  };
  CHECK_NOTHROW(qwen_image::check_edit_processor_config(write("")));
  {
    const std::string path = dir.path() + "/empty.json";
    std::ofstream(path) << "{}";
    CHECK_NOTHROW(qwen_image::check_edit_processor_config(path));
  }
  const std::vector<std::pair<std::string, std::string>> refused = {
      {R"(, "image_mean": [0.5, 0.5, 0.5])", "image_mean"},
      {R"(, "image_std": [0.5, 0.5, 0.5])", "image_std"},
      {R"(, "rescale_factor": 1.0)", "rescale_factor"},
      {R"(, "do_normalize": false)", "do_normalize"},
      {R"(, "resample": 1)", "resample"},
      {R"(, "patch_size": 16)", "patch_size"},
      {R"(, "merge_size": 4)", "merge_size"},
      {R"(, "min_pixels": 200000)", "min_pixels"},
      {R"(, "max_pixels": 100000)", "max_pixels"},
      {R"(, "size": {"shortest_edge": 200000})", "size.shortest_edge"},
  };
  for (const auto& [extra, key] : refused) {
    INFO(extra);
    const std::string path = write(extra);
    CHECK_THROWS_AS(qwen_image::check_edit_processor_config(path),
                    mold::ConfigError);
    CHECK_THROWS_WITH(qwen_image::check_edit_processor_config(path),
                      Catch::Contains("'" + key + "'") &&
                          Catch::Contains("preprocessor_config"));
  }
}
