// The library's stage counts shared by the families: a decoder layer's
// stages and the transformers' attention chunks, counted by hand here.

#include <algorithm>
#include <catch2/catch.hpp>
#include <mold/estimate/attention_chunk.hpp>
#include <mold/estimate/decoder_stages.hpp>

using namespace mold;

namespace {

Workload text_workload(const char* dtype) {
  Workload w;
  w.family = "fam";
  w.op = "text_encode";
  w.backend = "cpu";
  w.dtype = dtype;
  w.width = w.height = 64;
  w.tokens = 10;
  // The kernel whose scratch the cases state (oneDNN's brgemm
  // avx512_core_bf16), whatever this host's.
  w.matmul_kernel = CpuMatmulKernel::avx512_bf16;
  return w;
}

DecoderDims small_dims() {
  DecoderDims d;
  d.hidden = 8;
  d.heads = 2;
  d.kv_heads = 1;
  d.head_dim = 4;
  d.intermediate = 16;
  return d;
}

double stage(const SequenceShape& s, const std::string& name) {
  for (const auto& st : s.stages)
    if (st.name == name) return st.bytes;
  FAIL("no stage " << name);
  return 0;
}

}  // namespace

TEST_CASE("a decoder layer's stages, without a per-head norm, rotary per item",
          "[estimate]") {
  DecoderDims d = small_dims();
  d.query_norm = false;
  d.rotary = RotaryTables::per_item;
  const SequenceShape s =
      decoder_text_encode_shape(text_workload("bfloat16"), d);
  // 10 tokens, bfloat16: a row 10 x 8 x 2 = 160 B; q 80 elements, k and v 40
  // each; 2 x 10^2 scores. Resident: the row, the masks (1 + 1) x 100, cos
  // and sin 2 x 10 x 4 x 2.
  const double resident = 160 + 200 + 160;
  CHECK(stage(s, "projection") == resident + 160 + 80 * 10 + 2 * 40 * 2);
  CHECK(stage(s, "attention") == resident + 160 + 40 * 2 + 200 * (2 + 4 + 4));
  CHECK(stage(s, "feed_forward") == resident + 2 * 160 + 2 * 10 * 16 * 2);
  CHECK_THAT(s.stages[0].detail, Catch::Contains("rotated beside k and v"));
  CHECK(s.thread_scratch > 0);  // bfloat16 on the cpu: oneDNN's per thread
  // Each stage has its products' scratch: the projections' (inner hidden
  // 8), the score products' (inner head_dim 4 and 10 tokens: one block of
  // 32), the feed-forward's (inner up to 16).
  for (const auto& st : s.stages) {
    REQUIRE(st.products.size() == 1);
    CHECK(st.products[0].thread_scratch == 128 * 32 + 1024);
  }
  CHECK(s.thread_scratch == 128 * 32 + 1024);
  // The projections run beside the normed input, q before and after its
  // norm, k and v: 2 x (80 + 40) x 2 B above the resident bytes and the
  // row; the scores' products beside q, k, v, the output and the scores
  // and their probabilities in the dtype: (2 x 80 + 2 x 40 + 2 x 200) x 2 B.
  CHECK(s.stages[0].products[0].alive == resident + 160 + 2 * (80 + 40) * 2);
  CHECK(s.stages[1].products[0].alive ==
        std::min(stage(s, "attention"),
                 resident + 160 + (2 * 80 + 2 * 40 + 2 * 200) * 2));
  CHECK(s.stages[2].products[0].alive == stage(s, "feed_forward"));
  CHECK(s.weight_scratch == 0);  // dense weights
}

TEST_CASE(
    "a quantized decoder holds its largest matrix dequantized in the dtype",
    "[estimate]") {
  Workload w = text_workload("bfloat16");
  w.quantized = true;
  DecoderDims d = small_dims();
  // The feed-forward's 16 x 8 is the largest: 16 x 8 x 2 B.
  SequenceShape s = decoder_text_encode_shape(w, d);
  CHECK(s.weight_scratch == 16 * 8 * 2);
  CHECK_THAT(s.weight_scratch_detail, Catch::Contains("mlp gate"));
  // Heads wider than the feed-forward: q_proj, 4 heads x 8 by 8.
  d.heads = 4;
  d.head_dim = 8;
  d.intermediate = 12;
  s = decoder_text_encode_shape(w, d);
  CHECK(s.weight_scratch == 32 * 8 * 2);
  CHECK_THAT(s.weight_scratch_detail, Catch::Contains("q_proj"));
}

TEST_CASE("a decoder layer's stages, with a per-head norm and shared tables",
          "[estimate]") {
  DecoderDims d = small_dims();
  d.query_norm = true;
  d.rotary = RotaryTables::shared_with_float32_angles;
  const SequenceShape s =
      decoder_text_encode_shape(text_workload("float32"), d);
  // float32: a row 10 x 8 x 4 = 320 B, no float32 copies. Resident: the
  // row, the masks, the tables 10 x 4 x (1.5 x 4 + 2 x 4).
  const double resident = 320 + 200 + 10 * 4 * 14;
  CHECK(stage(s, "projection") == resident + 320 + 80 * (3 * 4 + 4));
  CHECK(stage(s, "attention") == resident + 320 + 40 * 4 + 200 * (4 + 4));
  CHECK(stage(s, "feed_forward") == resident + 2 * 320 + 2 * 10 * 16 * 4);
  CHECK_THAT(s.stages[0].detail, Catch::Contains("float32 RMS norm"));
  CHECK(s.thread_scratch == 0);  // float32: OpenBLAS's own buffers
}

TEST_CASE("attention chunks hold at most 2^25 scores, one row to every key",
          "[estimate]") {
  AttentionChunk c = attention_chunk(2, 24, 4352);
  CHECK(c.rows == (1L << 25) / (2 * 24 * 4352));
  CHECK(c.scores() <= double(kAttentionScoreBudget));
  CHECK(c.describe() ==
        "160 query rows x 4352 keys x 24 heads x batch 2 scores");
  // Short sequences: every row at once.
  c = attention_chunk(1, 2, 100);
  CHECK(c.rows == 100);
  // Past the budget for one row: still one.
  c = attention_chunk(4, 64, 1L << 20);
  CHECK(c.rows == 1);
  // Nonsense inputs are floored to one, never a division by zero.
  c = attention_chunk(0, 0, 0);
  CHECK(c.rows == 1);
  CHECK(c.keys == 1);
}
