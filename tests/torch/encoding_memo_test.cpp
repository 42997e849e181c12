// The pipelines' memo of the last prompt's conditioning: keys that tell
// every difference in what the encoders see, one entry, host tensors.

#include <catch2/catch.hpp>
#include <mold/runtime/encoding_memo.hpp>
#include <mold/runtime/pipeline.hpp>

#include "support/aten_for_tests.hpp"

using mold::EncodingMemo;
using mold::GenerateRequest;

TEST_CASE("EncodingMemo keys tell prompts, negatives and images apart",
          "[memo]") {
  GenerateRequest a;
  a.prompt = "a red fox";
  a.negative_prompt = "blurry";
  GenerateRequest b = a;
  b.seed = 9;  // the seed, size and steps are not conditioning
  b.width = 512;
  b.steps = 3;
  CHECK(EncodingMemo::key_of(a, true) == EncodingMemo::key_of(b, true));
  b.negative_prompt = "noisy";
  CHECK(EncodingMemo::key_of(a, true) != EncodingMemo::key_of(b, true));
  // Without classifier-free guidance the negative prompt is not encoded.
  CHECK(EncodingMemo::key_of(a, false) == EncodingMemo::key_of(b, false));
  // Lengths first: "ab" + "c" is not "a" + "bc".
  GenerateRequest c, d;
  c.prompt = "ab";
  c.negative_prompt = "c";
  d.prompt = "a";
  d.negative_prompt = "bc";
  CHECK(EncodingMemo::key_of(c, true) != EncodingMemo::key_of(d, true));

  // Source images by shape and bytes.
  GenerateRequest e = a, f = a;
  e.images.push_back(at::zeros({3, 4, 4}, at::kByte));
  f.images.push_back(at::zeros({3, 4, 4}, at::kByte));
  CHECK(EncodingMemo::key_of(e, true) == EncodingMemo::key_of(f, true));
  f.images[0][1][2][3] = 1;
  CHECK(EncodingMemo::key_of(e, true) != EncodingMemo::key_of(f, true));
  f.images[0] = at::zeros({3, 2, 8}, at::kByte);
  CHECK(EncodingMemo::key_of(e, true) != EncodingMemo::key_of(f, true));
  CHECK(EncodingMemo::key_of(a, true) != EncodingMemo::key_of(e, true));
}

TEST_CASE("EncodingMemo keeps one entry, replaced by the next", "[memo]") {
  EncodingMemo memo;
  CHECK(memo.find("x") == nullptr);
  CHECK(memo.bytes() == 0);
  memo.keep("x", {at::ones({2, 3}), at::Tensor()});
  REQUIRE(memo.find("x"));
  CHECK(memo.find("x")->size() == 2);
  CHECK(memo.bytes() == 2 * 3 * 4);
  CHECK(memo.find("y") == nullptr);
  memo.keep("y", {at::ones({5}, at::kBFloat16)});
  CHECK(memo.find("x") == nullptr);
  REQUIRE(memo.find("y"));
  CHECK(memo.bytes() == 10);
  memo.clear();
  CHECK(memo.find("y") == nullptr);
  CHECK(memo.bytes() == 0);
}
