// The vision tower of Qwen2.5-VL (transformers'
// Qwen2_5_VisionTransformerPretrainedModel) and the multimodal prompt: the
// edit images' patches embedded, run through window attention blocks (full
// attention in fullatt_block_indexes) with a 2-D rotary over (row, column),
// merged 2x2 into the language model's width, and placed at the prompt's
// image tokens with get_rope_index's 3-D positions.

#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mold/base/error.hpp>
#include <mold/tensor/rotary.hpp>

#include "qwen25vl_text_encoder.hpp"

namespace qwen_image {

using mold::InvalidArgument;

namespace {

constexpr double kVisionRopeTheta = 10000.0;  // VisionRotaryEmbedding
constexpr double kVisionNormEps = 1e-6;       // norm1, norm2, ln_q

/// For each patch of an image in the processor's order (2x2 merge groups,
/// row-major over the groups), its (row, column) on the patch grid.
at::Tensor patch_rows_cols(int64_t t, int64_t h, int64_t w, int64_t m) {
  const at::Tensor rows = at::arange(h, at::kLong)
                              .unsqueeze(1)
                              .expand({h, w})
                              .reshape({h / m, m, w / m, m})
                              .permute({0, 2, 1, 3})
                              .flatten();
  const at::Tensor cols = at::arange(w, at::kLong)
                              .unsqueeze(0)
                              .expand({h, w})
                              .reshape({h / m, m, w / m, m})
                              .permute({0, 2, 1, 3})
                              .flatten();
  return at::stack({rows, cols}, -1).repeat({t, 1});
}

}  // namespace

int64_t Qwen25VLTextEncoder::image_tokens(const VisionImage& image) const {
  const int64_t m = config_.vision.spatial_merge_size;
  return image.grid_t * (image.grid_h / m) * (image.grid_w / m);
}

void Qwen25VLTextEncoder::check_image(const VisionImage& image,
                                      std::size_t index) const {
  const Qwen25VLVisionConfig& v = config_.vision;
  const int64_t m = v.spatial_merge_size;
  if (image.grid_t < 1 || image.grid_h < m || image.grid_w < m ||
      image.grid_h % m != 0 || image.grid_w % m != 0 ||
      image.grid_h > (1 << 14) || image.grid_w > (1 << 14))
    throw InvalidArgument(fmt::format(
        "image {} has a grid of {}x{}x{} patches; {} expects positive "
        "multiples of the merge size {} (rows and columns)",
        index + 1, image.grid_t, image.grid_h, image.grid_w, describe(), m));
  const int64_t patches = image.grid_t * image.grid_h * image.grid_w;
  const at::Tensor& px = image.pixel_values;
  if (!px.defined() || px.dim() != 2 || px.size(0) != patches ||
      px.size(1) != v.patch_values() || !c10::isFloatingType(px.scalar_type()))
    throw InvalidArgument(fmt::format(
        "image {}: pixel_values is {}; expected ({}, {}) floating point for "
        "its {}x{}x{} patches",
        index + 1, px.defined() ? c10::str(px.sizes()) : "undefined", patches,
        v.patch_values(), image.grid_t, image.grid_h, image.grid_w));
}

at::Tensor Qwen25VLTextEncoder::vision_block(
    const at::Tensor& x, int64_t block, const at::Tensor& cos,
    const at::Tensor& sin, const std::vector<int64_t>& bounds) const {
  const Qwen25VLVisionConfig& v = config_.vision;
  const std::string b = fmt::format("visual.blocks.{}.", block);
  const int64_t n = x.size(0), heads = v.num_heads, d = v.head_dim();
  at::Tensor attended = at::empty({n, heads, d}, x.options());
  {
    const std::vector<at::Tensor> qkv =
        linear(rms_norm(x, b + "norm1.weight", kVisionNormEps), b + "attn.qkv")
            .view({n, 3, heads, d})
            .unbind(1);
    // apply_rotary_pos_emb_vision: in float32, back in the input's dtype.
    const auto rotate = [&](const at::Tensor& t) {
      const at::Tensor f = t.to(at::kFloat);
      return (f * cos + mold::rotate_half(f) * sin).to(t.scalar_type());
    };
    const at::Tensor q = rotate(qkv[0]).transpose(0, 1);  // (H, N, D)
    const at::Tensor k = rotate(qkv[1]).transpose(0, 1);
    const at::Tensor val = qkv[2].transpose(0, 1);
    // Attention within each segment (a window, or a whole image).
    for (std::size_t s = 0; s + 1 < bounds.size(); ++s) {
      const int64_t start = bounds[s], len = bounds[s + 1] - bounds[s];
      if (len <= 0) continue;
      at::Tensor scores = at::matmul(q.narrow(1, start, len),
                                     k.narrow(1, start, len).transpose(1, 2));
      scores.mul_(1.0 / std::sqrt(double(d)));
      const at::Tensor probs =
          at::softmax(scores, -1, at::kFloat).to(scores.scalar_type());
      attended.narrow(0, start, len)
          .copy_(at::matmul(probs, val.narrow(1, start, len)).transpose(0, 1));
    }
  }
  at::Tensor out = x + linear(attended.view({n, heads * d}), b + "attn.proj");
  attended.reset();
  const at::Tensor h = rms_norm(out, b + "norm2.weight", kVisionNormEps);
  at::Tensor gate = at::silu(linear(h, b + "mlp.gate_proj"));
  gate.mul_(linear(h, b + "mlp.up_proj"));
  return out.add_(linear(gate, b + "mlp.down_proj"));
}

at::Tensor Qwen25VLTextEncoder::vision_features(
    const std::vector<VisionImage>& images) const {
  if (!with_vision_)
    throw InvalidArgument(describe() +
                          " was built without its vision tower (a "
                          "text-to-image model): it cannot take images");
  if (images.empty()) throw InvalidArgument("vision_features: no images given");
  for (std::size_t i = 0; i < images.size(); ++i) check_image(images[i], i);
  at::NoGradGuard no_grad;
  const Qwen25VLVisionConfig& v = config_.vision;
  const at::Tensor& proj = p("visual.patch_embed.proj.weight");
  const c10::Device device = proj.device();
  const at::ScalarType dtype = proj.scalar_type();
  const int64_t m = v.spatial_merge_size, unit = m * m;
  const int64_t window = v.window_size / m / v.patch_size;  // merged tokens

  // Patch embedding: a Conv3d whose kernel is its stride over one patch,
  // i.e. one matrix product per patch.
  std::vector<at::Tensor> pixels;
  for (const VisionImage& image : images)
    pixels.push_back(image.pixel_values.to(device, dtype));
  at::Tensor x =
      at::linear(at::cat(pixels, 0), proj.reshape({proj.size(0), -1}));
  pixels.clear();
  const int64_t n = x.size(0);

  // Rotary angles per patch: rows then columns, head_dim / 4 frequencies
  // each (float32, as VisionRotaryEmbedding's table).
  const int64_t rot_dim = v.head_dim() / 2;
  const at::Tensor inv_freq = at::reciprocal(at::pow(
      kVisionRopeTheta,
      at::arange(0, rot_dim, 2, at::kLong).to(at::kFloat) / double(rot_dim)));
  std::vector<at::Tensor> rows_cols;
  for (const VisionImage& image : images)
    rows_cols.push_back(
        patch_rows_cols(image.grid_t, image.grid_h, image.grid_w, m));
  const at::Tensor positions = at::cat(rows_cols, 0).to(at::kFloat);
  at::Tensor angles =
      (positions.unsqueeze(-1) * inv_freq).flatten(1);  // (N, head_dim / 2)

  // Windows: window x window merged tokens per window (the last ones
  // partial), the image's tokens reordered window by window.
  std::vector<int64_t> window_index, window_bounds{0}, image_bounds{0};
  int64_t offset = 0;
  for (const VisionImage& image : images) {
    const int64_t gh = image.grid_h / m, gw = image.grid_w / m;
    for (int64_t t = 0; t < image.grid_t; ++t) {
      for (int64_t wr = 0; wr < gh; wr += window)
        for (int64_t wc = 0; wc < gw; wc += window) {
          int64_t count = 0;
          for (int64_t r = wr; r < std::min(gh, wr + window); ++r)
            for (int64_t c = wc; c < std::min(gw, wc + window); ++c) {
              window_index.push_back(offset + (t * gh + r) * gw + c);
              ++count;
            }
          window_bounds.push_back(window_bounds.back() + count * unit);
        }
      image_bounds.push_back(image_bounds.back() + gh * gw * unit);
    }
    offset += image.grid_t * gh * gw;
  }
  const at::Tensor order = at::tensor(window_index, at::kLong);
  const auto reorder = [&](const at::Tensor& t) {
    return t.view({n / unit, unit, -1})
        .index_select(0, order.to(t.device()))
        .reshape({n, -1});
  };
  x = reorder(x);
  angles = reorder(angles);
  const at::Tensor emb = at::cat({angles, angles}, -1);  // (N, head_dim)
  const at::Tensor cos = emb.cos().unsqueeze(1).to(device);
  const at::Tensor sin = emb.sin().unsqueeze(1).to(device);

  const auto& full = v.fullatt_block_indexes;
  for (int64_t block = 0; block < v.depth; ++block)
    x = vision_block(x, block, cos, sin,
                     std::find(full.begin(), full.end(), block) != full.end()
                         ? image_bounds
                         : window_bounds);

  // Merger: RMSNorm, 2x2 groups of patches to one token, MLP with exact GELU;
  // then the windows' order undone.
  x = rms_norm(x, "visual.merger.ln_q.weight", kVisionNormEps)
          .view({n / unit, -1});
  x = linear(at::gelu(linear(x, "visual.merger.mlp.0")), "visual.merger.mlp.2");
  return x.index_select(0, at::argsort(order).to(device));
}

at::Tensor Qwen25VLTextEncoder::encode_with_images(
    const at::Tensor& input_ids, const std::vector<VisionImage>& images,
    const at::Tensor& given_features) const {
  check_ids(input_ids);
  if (input_ids.size(0) != 1)
    throw InvalidArgument(fmt::format(
        "input_ids has shape {}; a prompt with images is encoded alone "
        "(batch 1)",
        c10::str(input_ids.sizes())));
  const Qwen25VLConfig& c = config_;
  const at::Tensor ids = input_ids.to(at::kCPU).contiguous();
  const int64_t len = ids.size(1);
  const int64_t* id = ids.data_ptr<int64_t>();
  // Runs of image tokens, one per image, in order.
  std::vector<std::pair<int64_t, int64_t>> runs;  // (start, length)
  for (int64_t i = 0; i < len; ++i) {
    if (id[i] != c.image_token_id) continue;
    if (!runs.empty() && runs.back().first + runs.back().second == i)
      ++runs.back().second;
    else
      runs.emplace_back(i, 1);
  }
  if (runs.size() != images.size())
    throw InvalidArgument(fmt::format(
        "the prompt has {} runs of image tokens ({}) but {} images were "
        "given; each image takes one run",
        runs.size(), c.image_token_id, images.size()));
  for (std::size_t i = 0; i < images.size(); ++i) {
    check_image(images[i], i);
    if (runs[i].second != image_tokens(images[i]))
      throw InvalidArgument(fmt::format(
          "image {} has {}x{}x{} patches, {} tokens after the {}x{} merge, "
          "but its run in the prompt has {} image tokens",
          i + 1, images[i].grid_t, images[i].grid_h, images[i].grid_w,
          image_tokens(images[i]), c.vision.spatial_merge_size,
          c.vision.spatial_merge_size, runs[i].second));
  }
  at::NoGradGuard no_grad;
  at::Tensor x = rows_of("model.embed_tokens.weight", ids.to(device()));
  int64_t expected = 0;
  for (const VisionImage& image : images) expected += image_tokens(image);
  if (given_features.defined() &&
      (given_features.dim() != 2 || given_features.size(0) != expected ||
       given_features.size(1) != c.hidden_size))
    throw InvalidArgument(
        fmt::format("the given image features are {}; the images take ({}, {})",
                    c10::str(given_features.sizes()), expected, c.hidden_size));
  const at::Tensor features =
      (given_features.defined() ? given_features : vision_features(images))
          .to(x.device(), x.scalar_type());

  // get_rope_index: text continues from the largest position so far + 1;
  // an image's tokens sit at (t, row, column) of its merged grid offset by
  // where it starts (t is 0 for a still image).
  at::Tensor positions = at::empty({3, 1, len}, at::kLong);
  int64_t next = 0, cursor = 0, feature = 0;
  const auto text_run = [&](int64_t from, int64_t to) {
    positions.narrow(2, from, to - from)
        .copy_(
            at::arange(next, next + (to - from), at::kLong).view({1, 1, -1}));
    next += to - from;
  };
  for (std::size_t i = 0; i < images.size(); ++i) {
    const auto [start, count] = runs[i];
    text_run(cursor, start);
    const int64_t m = c.vision.spatial_merge_size;
    const int64_t gh = images[i].grid_h / m, gw = images[i].grid_w / m;
    const at::Tensor rows = at::arange(gh, at::kLong)
                                .repeat_interleave(gw)
                                .repeat({images[i].grid_t});
    const at::Tensor cols =
        at::arange(gw, at::kLong).repeat({images[i].grid_t * gh});
    positions[0][0].narrow(0, start, count).fill_(next);
    positions[1][0].narrow(0, start, count).copy_(rows + next);
    positions[2][0].narrow(0, start, count).copy_(cols + next);
    next += std::max(gh, gw);
    x[0].narrow(0, start, count).copy_(features.narrow(0, feature, count));
    feature += count;
    cursor = start + count;
  }
  text_run(cursor, len);
  return decode(std::move(x), positions, at::ones_like(ids));
}

}  // namespace qwen_image
