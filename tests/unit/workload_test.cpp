#include <catch2/catch.hpp>
#include <mold/base/error.hpp>
#include <mold/estimate/workload.hpp>

using namespace mold;

namespace {
Workload valid() {
  Workload w;
  w.family = "qwen_image";
  w.op = "vae_decode";
  w.backend = "cuda";
  w.width = 1248;
  w.height = 832;
  return w;
}
}  // namespace

TEST_CASE("dtype sizes", "[workload]") {
  CHECK(dtype_size("float32") == 4);
  CHECK(dtype_size("float16") == 2);
  CHECK(dtype_size("bfloat16") == 2);
  CHECK(dtype_size("float8_e4m3fn") == 1);
  CHECK_THROWS_WITH(dtype_size("fp13"),
                    Catch::Contains("'fp13'") && Catch::Contains("bfloat16"));
}

TEST_CASE("a workload names the field that is wrong", "[workload]") {
  CHECK_NOTHROW(valid().validate());
  auto w = valid();
  w.width = 0;
  CHECK_THROWS_WITH(w.validate(), Catch::Contains("width is 0"));
  w = valid();
  w.batch = -2;
  CHECK_THROWS_WITH(w.validate(), Catch::Contains("batch is -2"));
  w = valid();
  w.family.clear();
  CHECK_THROWS_WITH(w.validate(), Catch::Contains("family is empty"));
  w = valid();
  w.tile = -1;
  CHECK_THROWS_AS(w.validate(), InvalidArgument);
  w = valid();
  w.dtype = "float17";
  CHECK_THROWS_AS(w.validate(), ParseError);
  CHECK(valid().describe() ==
        "qwen_image vae_decode on cuda, 832x1248 float16, batch 1");
}

TEST_CASE("a workload refuses sizes past its ranges, naming the range",
          "[workload]") {
  auto w = valid();
  w.width = 2147483647;
  w.height = 2147483647;
  CHECK_THROWS_WITH(w.validate(), Catch::Contains("width is 2147483647") &&
                                      Catch::Contains("from 1 to 65536"));
  w = valid();
  w.width = w.height = kMaxImageSide;
  w.batch = kMaxBatch;
  w.frames = kMaxFrames;
  CHECK_NOTHROW(w.validate());  // the largest workload is still representable
  w.batch = kMaxBatch + 1;
  CHECK_THROWS_WITH(w.validate(), Catch::Contains("from 1 to 1024"));
  w = valid();
  w.tile = kMaxTile + 1;
  CHECK_THROWS_WITH(w.validate(), Catch::Contains("from 1 to 65536"));
  w = valid();
  w.threads = 0;
  CHECK_THROWS_WITH(w.validate(), Catch::Contains("threads is 0") &&
                                      Catch::Contains("from 1 to 4096"));
  w.threads = 8;
  CHECK_NOTHROW(w.validate());
  CHECK_THAT(w.describe(), Catch::EndsWith(", 8 threads"));
}
