#include "mold/estimate/decoder_stages.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace mold {

namespace {

constexpr double kFloat32 = 4;

}  // namespace

SequenceShape decoder_text_encode_shape(const Workload& w,
                                        const DecoderDims& d) {
  const double n = double(std::max(w.tokens, 1));
  const double b = double(w.batch);
  const double e = double(dtype_size(w.dtype));
  const double copy = e == kFloat32 ? 0 : kFloat32;  // a float32 copy
  const double head_dim = double(d.head_dim);
  const double row = b * n * double(d.hidden) * e;  // one (B, n, hidden)
  const double q_elements = b * n * double(d.heads) * head_dim;
  const double kv_elements = b * n * double(d.kv_heads) * head_dim;
  const double scores = b * double(d.heads) * n * n;
  const double rotary_tables =
      d.rotary == RotaryTables::shared_with_float32_angles
          ? n * head_dim * (1.5 * kFloat32 + 2 * e)
          : b * n * head_dim * 2 * e;
  const double resident = row + (1 + b) * n * n + rotary_tables;
  const double projection =
      d.query_norm ? resident + row + q_elements * (3 * e + kFloat32 + copy)
                   : resident + row + q_elements * 5 * e + 2 * kv_elements * e;
  const double attention =
      resident + row + kv_elements * e + scores * (e + kFloat32 + copy);
  const double feed_forward =
      resident + 2 * row + 2 * b * n * double(d.intermediate) * e;
  SequenceShape s;
  s.add_stage(
      "projection", projection,
      d.query_norm
          ? fmt::format("{} tokens x batch {}, q of {} heads x {} with "
                        "its float32 RMS norm, hidden {}, {:g} B",
                        w.tokens, w.batch, d.heads, d.head_dim, d.hidden, e)
          : fmt::format("{} tokens x batch {}, q of {} heads x {} "
                        "rotated beside k and v of {}, hidden {}, {:g} B",
                        w.tokens, w.batch, d.heads, d.head_dim, d.kv_heads,
                        d.hidden, e));
  s.add_stage(
      "attention", attention,
      fmt::format("{}^2 token pairs x {} heads x batch {} scores at "
                  "{:g} B (float32 softmax), hidden {}",
                  w.tokens, d.heads, w.batch, e + kFloat32 + copy, d.hidden));
  s.add_stage("feed_forward", feed_forward,
              fmt::format("{} tokens x batch {} x (3 x hidden {} + 2 x ffn {}) "
                          "x {:g} B",
                          w.tokens, w.batch, d.hidden, d.intermediate, e));
  // The products run beside less than the stages' peaks (the float32 norm
  // of q, the float32 softmax): q, k and v (and o, later, beside less) beside
  // the normed input, q before and after its norm; the two score products
  // beside q, k and v, the scores in the dtype and their probabilities, and
  // the output; gate, up and down at the feed-forward's own peak.
  const double hidden = double(d.hidden);
  const double q_width = double(d.heads) * head_dim;
  const double kv_width = double(d.kv_heads) * head_dim;
  const double ffn = double(d.intermediate);
  s.count_thread_scratch(
      w, "projection", b * n,
      {{hidden, q_width}, {hidden, kv_width}, {q_width, hidden}},
      resident + row + 2 * (q_elements + kv_elements) * e);
  s.count_thread_scratch(
      w, "attention", n, {{head_dim, n}, {n, head_dim}},
      resident + row + (2 * q_elements + 2 * kv_elements + 2 * scores) * e);
  s.count_thread_scratch(w, "feed_forward", b * n,
                         {{hidden, ffn}, {ffn, hidden}});
  // The largest matrix a quantized encoder dequantizes as its layer runs
  // (the shared decoder layer dequantizes each, whatever its rows): the
  // feed-forward's (gate, up and down, intermediate by hidden), or a
  // projection where the heads are wider than that.
  const double every = std::numeric_limits<double>::infinity();
  s.count_weight_scratch(
      w, {{ffn, hidden, every, "mlp gate / up / down"},
          {q_width, hidden, every, "self_attn q_proj / o_proj"}});
  return s;
}

}  // namespace mold
