#pragma once
/// PNG files: the images `mold run` writes, with their text chunks (prompt,
/// seed, model, ...), and reading any PNG back as 8-bit RGB. Torch-free: the
/// pixels are plain bytes. libpng is an implementation detail (linked
/// privately); its errors become mold::Error naming the file.
///
/// Text: keys and values are UTF-8 in both directions. A key is 1 to 79
/// characters of printable Latin-1 (U+0020-U+007E, U+00A1-U+00FF), with no
/// leading, trailing or doubled space, as the PNG specification requires. A
/// value that is printable ASCII (newlines allowed) is written as tEXt, any
/// other as iTXt (UTF-8); reading returns tEXt, zTXt and iTXt alike (tEXt and
/// zTXt converted from Latin-1).

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mold {

/// The most pixels (width * height) read_png and write_png accept: 2^28, a
/// 16384 x 16384 image (768 MiB as RGB). A file whose header claims more is
/// refused before anything is allocated.
inline constexpr std::uint64_t kMaxPngPixels = std::uint64_t{1} << 28;
/// The most either side may have (libpng's default limit when reading).
inline constexpr int kMaxPngSide = 1000000;

struct PngText {
  std::string key;
  std::string value;
};

/// Writes `rgb` (width * height * 3 bytes: 8-bit RGB, interleaved, rows top to
/// bottom) to `path` with `text` as text chunks, in that order. The file is
/// encoded in memory and then written with write_file_atomically: an existing
/// file is replaced only by a complete one, a directory, FIFO or device at
/// `path` is refused, and no temporary file is left behind on failure.
/// Throws InvalidArgument for a bad size (not in 1..kMaxPngSide, more than
/// kMaxPngPixels), a null `rgb`, a bad key (naming it), a value with a NUL
/// byte or invalid UTF-8; Error naming the path when encoding or writing fails.
void write_png(const std::filesystem::path& path, const std::uint8_t* rgb,
               int width, int height, const std::vector<PngText>& text);
/// The same PNG as bytes in memory (what the server sends). `name` stands for
/// the image in error messages ("PNG <name>: ..."). Throws as write_png does
/// before writing.
std::string encode_png(const std::string& name, const std::uint8_t* rgb,
                       int width, int height, const std::vector<PngText>& text);

struct PngImage {
  int width = 0;
  int height = 0;
  /// width * height * 3 bytes, 8-bit RGB, rows top to bottom.
  std::vector<std::uint8_t> rgb;
  /// Every tEXt, zTXt and iTXt chunk, key -> value (UTF-8); the first of each
  /// key when one repeats.
  std::map<std::string, std::string> text;
};

/// A PNG's size from its header (the IHDR chunk, which the format puts
/// first), without decoding anything: to refuse an image by its size before
/// it costs memory. Throws Error naming `name` for bytes that are not a PNG or
/// whose header is cut short.
struct PngSize {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
};
PngSize png_size(const std::string& name, std::string_view bytes);

/// Reads any PNG as 8-bit RGB: palettes expanded, gray made RGB, 16-bit
/// reduced to 8, alpha dropped (not composited), interlacing undone. Throws
/// InvalidArgument when `path` is not a regular file, Error naming the path
/// for anything else (not a PNG, truncated, corrupt, more than kMaxPngPixels
/// or kMaxPngSide), never crashing on hostile input.
PngImage read_png(const std::filesystem::path& path);
/// The same from PNG bytes in memory (an image sent with a request); `name`
/// stands for it in error messages ("PNG <name>: ...").
PngImage decode_png(const std::string& name, std::string_view bytes);

}  // namespace mold
