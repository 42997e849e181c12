#include <catch2/catch.hpp>
#include <mold/device/cpu_backend.hpp>
#include <mold/tensor/bounded_conv.hpp>

#include "support/aten_for_tests.hpp"
#include "support/tensor_compare.hpp"

using namespace mold;

using mold::test::relative_l2;

TEST_CASE(
    "bounded_conv2d is exact over strides, padding, dilation, groups and odd "
    "sizes",
    "[conv]") {
  struct Case {
    int64_t cin, cout, h, w, k, stride, pad, dilation, groups;
  };
  const Case cases[] = {
      {4, 8, 37, 29, 3, 1, 1, 1, 1}, {4, 8, 37, 29, 3, 2, 1, 1, 1},
      {4, 8, 40, 33, 3, 2, 0, 1, 1}, {6, 6, 31, 31, 3, 1, 2, 2, 1},
      {8, 8, 25, 19, 3, 1, 1, 1, 4}, {8, 8, 25, 19, 3, 1, 1, 1, 8},
      {3, 5, 17, 23, 5, 1, 2, 1, 1}, {3, 5, 18, 11, 5, 3, 0, 1, 1},
      {4, 4, 33, 17, 1, 1, 0, 1, 1}, {4, 4, 9, 64, 3, 1, 3, 3, 2},
      {2, 3, 64, 5, 7, 2, 3, 1, 1},
  };
  at::manual_seed(0);
  for (const auto& c : cases) {
    INFO("cin " << c.cin << " cout " << c.cout << " " << c.h << "x" << c.w
                << " k " << c.k << " stride " << c.stride << " pad " << c.pad
                << " dilation " << c.dilation << " groups " << c.groups);
    const at::Tensor x = at::randn({2, c.cin, c.h, c.w});
    const at::Tensor w = at::randn({c.cout, c.cin / c.groups, c.k, c.k});
    const at::Tensor b = at::randn({c.cout});
    const at::Tensor expected =
        at::conv2d(x, w, b, {c.stride, c.stride}, {c.pad, c.pad},
                   {c.dilation, c.dilation}, c.groups);
    const Conv2dShape shape =
        conv2d_shape(x, w, {c.stride, c.stride}, {c.pad, c.pad},
                     {c.dilation, c.dilation}, c.groups);
    // Bounds from one output row per band up to the whole convolution.
    for (const int64_t rows :
         {int64_t(1), int64_t(2), int64_t(5), shape.out_height()}) {
      const Bytes bound = shape.band_workspace(rows);
      CHECK(rows_per_band(shape, bound) == rows);
      const at::Tensor got =
          bounded_conv2d(x, w, b, {c.stride, c.stride}, {c.pad, c.pad},
                         {c.dilation, c.dilation}, c.groups, bound);
      REQUIRE(got.sizes() == expected.sizes());
      CHECK(relative_l2(got, expected) <= 1e-6);
    }
  }
}

TEST_CASE("bounded_conv2d keeps its temporary memory under the bound",
          "[conv][cpu]") {
  auto cpu = CpuBackend::instance();
  at::manual_seed(1);
  const at::Tensor x = at::randn({1, 32, 128, 128});
  const at::Tensor w = at::randn({32, 32, 3, 3});
  const at::Tensor b = at::randn({32});
  const Bytes output_bytes = 32 * 128 * 128 * 4;
  const Bytes bound = 2 * kMiB;
  const Bytes live = cpu->stats().allocated;
  cpu->reset_peak();
  const at::Tensor y =
      bounded_conv2d(x, w, b, {1, 1}, {1, 1}, {1, 1}, 1, bound);
  const Bytes peak = cpu->stats().peak_allocated - live;
  // The output itself plus at most the bound (and allocator rounding) at any
  // time.
  CHECK(peak <= output_bytes + bound + 64 * kKiB);
  cpu->reset_peak();
  const at::Tensor plain = at::conv2d(x, w, b, {1, 1}, {1, 1});
  CHECK(relative_l2(y, plain) <= 1e-6);
}

TEST_CASE("bounded_conv2d rejects what it cannot do, naming it", "[conv]") {
  CHECK_THROWS_WITH(
      bounded_conv2d(at::zeros({3, 8, 8}), at::zeros({1, 3, 3, 3}), {}, {1},
                     {1}, {1}, 1),
      Catch::Contains("4-D NCHW input") && Catch::Contains("3-D"));
}
