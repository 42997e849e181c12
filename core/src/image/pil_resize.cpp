#include "mold/image/pil_resize.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "mold/base/error.hpp"

namespace mold {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Resample.c's PRECISION_BITS
constexpr int kMaxSide = 1 << 16;

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= M_PI;
  return std::sin(x) / x;
}

double lanczos(double x) {
  if (-3.0 <= x && x < 3.0) return sinc(x) * sinc(x / 3);
  return 0.0;
}

double bicubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

/// The fixed-point weights of one axis: for output i, `size[i]` weights
/// from input `first[i]` on, in rows of `ksize`.
struct Coefficients {
  int ksize = 0;
  std::vector<int> first, size;
  std::vector<std::int32_t> weights;
};

Coefficients coefficients(int in_size, int out_size, ResampleFilter filter) {
  const double support_of_filter = filter == ResampleFilter::lanczos ? 3 : 2;
  double (*kernel)(double) =
      filter == ResampleFilter::lanczos ? lanczos : bicubic;
  const double scale = double(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = support_of_filter * filterscale;
  Coefficients c;
  c.ksize = int(std::ceil(support)) * 2 + 1;
  c.first.resize(out_size);
  c.size.resize(out_size);
  c.weights.assign(std::size_t(out_size) * c.ksize, 0);
  std::vector<double> w(c.ksize);
  for (int i = 0; i < out_size; ++i) {
    const double center = (i + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    // C's (int) truncates towards zero, as the reference's casts.
    int xmin = int(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = int(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double total = 0;
    for (int x = 0; x < xmax; ++x) {
      w[x] = kernel((x + xmin - center + 0.5) * ss);
      total += w[x];
    }
    for (int x = 0; x < xmax; ++x) {
      const double v = total != 0.0 ? w[x] / total : w[x];
      c.weights[std::size_t(i) * c.ksize + x] =
          v < 0 ? std::int32_t(-0.5 + v * (1 << kPrecisionBits))
                : std::int32_t(0.5 + v * (1 << kPrecisionBits));
    }
    c.first[i] = xmin;
    c.size[i] = xmax;
  }
  return c;
}

std::uint8_t clip8(std::int64_t value) {
  const std::int64_t v = value >> kPrecisionBits;
  return std::uint8_t(std::clamp<std::int64_t>(v, 0, 255));
}

Image8 horizontal(const Image8& in, int width, ResampleFilter filter) {
  const Coefficients c = coefficients(in.width, width, filter);
  Image8 out{width, in.height, in.channels, {}};
  out.pixels.resize(std::size_t(width) * in.height * in.channels);
  const int ch = in.channels;
  for (int y = 0; y < in.height; ++y) {
    const std::uint8_t* row = in.pixels.data() + std::size_t(y) * in.width * ch;
    std::uint8_t* dst = out.pixels.data() + std::size_t(y) * width * ch;
    for (int x = 0; x < width; ++x) {
      const std::int32_t* k = c.weights.data() + std::size_t(x) * c.ksize;
      for (int b = 0; b < ch; ++b) {
        std::int64_t acc = 1 << (kPrecisionBits - 1);
        for (int j = 0; j < c.size[x]; ++j)
          acc += std::int64_t(row[std::size_t(c.first[x] + j) * ch + b]) * k[j];
        dst[std::size_t(x) * ch + b] = clip8(acc);
      }
    }
  }
  return out;
}

Image8 vertical(const Image8& in, int height, ResampleFilter filter) {
  const Coefficients c = coefficients(in.height, height, filter);
  Image8 out{in.width, height, in.channels, {}};
  const std::size_t stride = std::size_t(in.width) * in.channels;
  out.pixels.resize(stride * height);
  for (int y = 0; y < height; ++y) {
    const std::int32_t* k = c.weights.data() + std::size_t(y) * c.ksize;
    std::uint8_t* dst = out.pixels.data() + std::size_t(y) * stride;
    for (std::size_t i = 0; i < stride; ++i) {
      std::int64_t acc = 1 << (kPrecisionBits - 1);
      for (int j = 0; j < c.size[y]; ++j)
        acc +=
            std::int64_t(in.pixels[std::size_t(c.first[y] + j) * stride + i]) *
            k[j];
      dst[i] = clip8(acc);
    }
  }
  return out;
}

}  // namespace

Image8 pil_resize(const Image8& image, int width, int height,
                  ResampleFilter filter) {
  for (auto [name, value] :
       {std::pair<const char*, int>{"width", width}, {"height", height}})
    if (value < 1 || value > kMaxSide)
      throw InvalidArgument(
          fmt::format("cannot resize to a {} of {}: give 1 to {} pixels", name,
                      value, kMaxSide));
  if (image.width < 1 || image.height < 1 || image.channels < 1 ||
      image.width > kMaxSide || image.height > kMaxSide ||
      image.pixels.size() !=
          std::size_t(image.width) * image.height * std::size_t(image.channels))
    throw InvalidArgument(fmt::format(
        "cannot resize an image of {}x{} pixels x {} channels held in {} "
        "bytes",
        image.width, image.height, image.channels, image.pixels.size()));
  Image8 out = image;
  if (width != image.width) out = horizontal(out, width, filter);
  if (height != image.height) out = vertical(out, height, filter);
  return out;
}

}  // namespace mold
