#pragma once
// The image processor of Qwen-Image-Edit's text encoder, as a model directory
// configures it (processor/preprocessor_config.json, transformers'
// Qwen2VLImageProcessor): mold implements the published values
// (edit_images.cpp), so each key that changes the math is checked against
// them and refused by name when it differs.

#include <filesystem>

namespace qwen_image {

/// Throws ConfigError naming `file` and the key for a value mold does not
/// implement: image_mean/image_std other than CLIP's, a rescale_factor other
/// than 1/255, do_resize/do_rescale/do_normalize/do_convert_rgb false, a
/// resample other than bicubic, patch_size/merge_size/temporal_patch_size
/// other than 14/2/2, or min_pixels/max_pixels (also size.shortest_edge/
/// longest_edge) other than the published 3136/12845056. Absent keys take
/// the class's defaults, which are these (max_pixels' 1003520 included: the
/// condition images mold makes have about 147,000 pixels, so neither bound
/// acts on them).
void check_edit_processor_config(const std::filesystem::path& file);

}  // namespace qwen_image
