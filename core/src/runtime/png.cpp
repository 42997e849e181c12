#include "mold/runtime/png.hpp"

#include <fmt/format.h>
#include <png.h>

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <ostream>

#include "mold/base/error.hpp"
#include "mold/base/file_io.hpp"
#include "mold/base/text.hpp"

// libpng reports errors by calling an error function that must not return; it
// longjmps back to the setjmp of the caller. A longjmp must never cross a C++
// frame with something to destroy (or an exception cross libpng's C frames).
// So every libpng call that can fail runs inside encode()/decode(): a setjmp
// and one call into a *_steps() function whose frame holds only trivial
// values; the callbacks libpng calls (output, allocation) are noexcept and
// report failure with png_error from a frame with nothing to destroy. The
// structs are created and destroyed by the C++ callers, outside the jump.

namespace mold {

namespace fs = std::filesystem;

namespace {

struct ErrorSink {
  char message[512] = {};
};

void on_error(png_structp png, png_const_charp message) {
  auto* sink = static_cast<ErrorSink*>(png_get_error_ptr(png));
  if (sink)
    std::snprintf(sink->message, sizeof sink->message, "%s",
                  message ? message : "unknown libpng error");
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}

// ---- writing -------------------------------------------------------------

struct MemoryOutput {
  std::vector<std::uint8_t> bytes;
  bool append(const png_byte* data, std::size_t length) noexcept {
    try {
      bytes.insert(bytes.end(), data, data + length);
      return true;
    } catch (...) {
      return false;
    }
  }
};

void on_write(png_structp png, png_bytep data, std::size_t length) {
  auto* out = static_cast<MemoryOutput*>(png_get_io_ptr(png));
  if (!out->append(data, length)) png_error(png, "out of memory encoding it");
}

void on_flush(png_structp) {}

struct EncodeJob {
  const std::uint8_t* rgb;
  png_uint_32 width;
  png_uint_32 height;
  const png_text* text;
  int text_count;
};

void encode_steps(png_structp png, png_infop info, const EncodeJob& job) {
  png_set_IHDR(png, info, job.width, job.height, 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (job.text_count > 0) png_set_text(png, info, job.text, job.text_count);
  png_write_info(png, info);
  const std::size_t stride = std::size_t{job.width} * 3;
  for (png_uint_32 y = 0; y < job.height; ++y)
    png_write_row(png, job.rgb + y * stride);
  png_write_end(png, info);
}

bool encode(png_structp png, png_infop info, const EncodeJob& job) {
  if (setjmp(png_jmpbuf(png))) return false;
  encode_steps(png, info, job);
  return true;
}

struct WriteStructs {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~WriteStructs() {
    if (png) png_destroy_write_struct(&png, info ? &info : nullptr);
  }
};

// ---- reading -------------------------------------------------------------

bool allocate(std::vector<std::uint8_t>* buffer, std::size_t size) noexcept {
  try {
    buffer->assign(size, 0);
    return true;
  } catch (...) {
    return false;
  }
}

struct DecodeJob {
  std::vector<std::uint8_t>* rgb;
  png_uint_32 width;
  png_uint_32 height;
  char problem[256];
};

void decode_steps(png_structp png, png_infop info, DecodeJob& job) {
  png_set_sig_bytes(png, 8);
  png_set_user_limits(png, kMaxPngSide, kMaxPngSide);
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info);
  const png_uint_32 height = png_get_image_height(png, info);
  if (std::uint64_t{width} * height > kMaxPngPixels) {
    std::snprintf(job.problem, sizeof job.problem,
                  "its header claims %lux%lu pixels, more than the limit of "
                  "%llu (16384x16384); refusing to decode it",
                  static_cast<unsigned long>(width),
                  static_cast<unsigned long>(height),
                  static_cast<unsigned long long>(kMaxPngPixels));
    png_error(png, job.problem);
  }
  const int color = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  png_set_expand(png);  // palette -> RGB, gray < 8 bits -> 8, tRNS -> alpha
  if (depth == 16) png_set_scale_16(png);
  png_set_strip_alpha(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA)
    png_set_gray_to_rgb(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const std::size_t stride = std::size_t{width} * 3;
  if (png_get_channels(png, info) != 3 || png_get_bit_depth(png, info) != 8 ||
      png_get_rowbytes(png, info) != stride)
    png_error(png, "its pixels did not convert to 8-bit RGB");
  if (!allocate(job.rgb, stride * height))
    png_error(png, "not enough memory for its pixels");
  png_bytep data = job.rgb->data();
  for (int pass = 0; pass < passes; ++pass)
    for (png_uint_32 y = 0; y < height; ++y)
      png_read_row(png, data + y * stride, nullptr);
  png_read_end(png, info);
  job.width = width;
  job.height = height;
}

bool decode(png_structp png, png_infop info, DecodeJob& job) {
  if (setjmp(png_jmpbuf(png))) return false;
  decode_steps(png, info, job);
  return true;
}

struct ReadStructs {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~ReadStructs() {
    if (png) png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
  }
};

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

// ---- text ----------------------------------------------------------------

std::string latin1_to_utf8(const char* text, std::size_t length) {
  std::string out;
  out.reserve(length);
  for (std::size_t i = 0; i < length; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

/// The key as Latin-1 bytes; throws InvalidArgument naming it.
std::string key_to_latin1(const std::string& key) {
  auto refuse = [&](const std::string& problem) {
    throw InvalidArgument(fmt::format(
        "PNG text key \"{}\" {}: a key is 1 to 79 printable Latin-1 "
        "characters with no leading, trailing or doubled space",
        escape_control(key), problem));
  };
  if (key.empty()) refuse("is empty");
  if (!is_valid_utf8(key)) refuse("is not valid UTF-8");
  std::string out;
  for (std::size_t i = 0; i < key.size();) {
    const auto c = static_cast<unsigned char>(key[i]);
    unsigned code = c;
    std::size_t length = 1;
    if (c >= 0x80) {
      length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      code = length == 2 ? ((c & 0x1Fu) << 6) |
                               (static_cast<unsigned char>(key[i + 1]) & 0x3Fu)
                         : 0x100;  // beyond Latin-1 either way
    }
    if (!((code >= 0x20 && code <= 0x7E) || (code >= 0xA1 && code <= 0xFF)))
      refuse(code > 0xFF ? "has a character outside Latin-1"
                         : "has a control or non-printing character");
    out += static_cast<char>(code);
    i += length;
  }
  if (out.size() > 79) refuse(fmt::format("is {} characters long", out.size()));
  if (out.front() == ' ' || out.back() == ' ')
    refuse("starts or ends with a space");
  if (out.find("  ") != std::string::npos) refuse("has two spaces in a row");
  return out;
}

bool plain_ascii(const std::string& value) {
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (!(c == '\n' || (c >= 0x20 && c <= 0x7E))) return false;
  }
  return true;
}

}  // namespace

std::string encode_png(const std::string& name, const std::uint8_t* rgb,
                       int width, int height,
                       const std::vector<PngText>& text) {
  if (width < 1 || height < 1 || width > kMaxPngSide || height > kMaxPngSide ||
      std::uint64_t(width) * std::uint64_t(height) > kMaxPngPixels)
    throw InvalidArgument(fmt::format(
        "PNG {}: cannot write a {}x{} image: each side must be 1 to {} and "
        "the image at most {} pixels",
        name, width, height, kMaxPngSide, kMaxPngPixels));
  if (!rgb)
    throw InvalidArgument(fmt::format("PNG {}: no pixels given (null)", name));

  // Validated and converted before anything is written.
  std::vector<std::string> keys;
  keys.reserve(text.size());
  std::vector<png_text> chunks(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const PngText& entry = text[i];
    keys.push_back(key_to_latin1(entry.key));
    if (entry.value.find('\0') != std::string::npos)
      throw InvalidArgument(fmt::format(
          "PNG text \"{}\": its value has a NUL byte, which a PNG text "
          "chunk cannot hold",
          escape_control(entry.key)));
    const bool ascii = plain_ascii(entry.value);
    if (!ascii && !is_valid_utf8(entry.value))
      throw InvalidArgument(
          fmt::format("PNG text \"{}\": its value is not valid UTF-8",
                      escape_control(entry.key)));
    png_text& chunk = chunks[i];
    chunk.compression =
        ascii ? PNG_TEXT_COMPRESSION_NONE : PNG_ITXT_COMPRESSION_NONE;
    chunk.key = const_cast<char*>(keys.back().c_str());
    chunk.text = const_cast<char*>(entry.value.c_str());
    chunk.text_length = ascii ? entry.value.size() : 0;
    chunk.itxt_length = ascii ? 0 : entry.value.size();
    chunk.lang = nullptr;
    chunk.lang_key = nullptr;
  }

  ErrorSink errors;
  MemoryOutput output;
  {
    WriteStructs structs;
    structs.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &errors,
                                          on_error, on_warning);
    if (structs.png) structs.info = png_create_info_struct(structs.png);
    if (!structs.png || !structs.info)
      throw Error(
          fmt::format("PNG {}: cannot start libpng (out of memory?)", name));
    png_set_write_fn(structs.png, &output, on_write, on_flush);
    const EncodeJob job{rgb, png_uint_32(width), png_uint_32(height),
                        chunks.data(), int(chunks.size())};
    if (!encode(structs.png, structs.info, job))
      throw Error(
          fmt::format("PNG {}: cannot encode it: {}", name, errors.message));
  }
  return std::string(output.bytes.begin(), output.bytes.end());
}

void write_png(const fs::path& path, const std::uint8_t* rgb, int width,
               int height, const std::vector<PngText>& text) {
  const std::string bytes = encode_png(path.string(), rgb, width, height, text);
  write_file_atomically(path, "PNG", [&](std::ostream& out) {
    out.write(bytes.data(), std::streamsize(bytes.size()));
  });
}

namespace {

struct MemoryInput {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t offset;
};

void on_read(png_structp png, png_bytep out, std::size_t length) {
  auto* in = static_cast<MemoryInput*>(png_get_io_ptr(png));
  if (length > in->size - in->offset) png_error(png, "Read Error");
  std::memcpy(out, in->data + in->offset, length);
  in->offset += length;
}

/// Decodes from what `attach` gives libpng to read (past the signature);
/// `name` names the image in errors.
PngImage decode_png_with(const std::string& name,
                         const std::function<void(png_structp)>& attach) {
  ErrorSink errors;
  ReadStructs structs;
  structs.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &errors, on_error,
                                       on_warning);
  if (structs.png) structs.info = png_create_info_struct(structs.png);
  if (!structs.png || !structs.info)
    throw Error(
        fmt::format("PNG {}: cannot start libpng (out of memory?)", name));
  attach(structs.png);

  PngImage image;
  DecodeJob job{&image.rgb, 0, 0, {}};
  if (!decode(structs.png, structs.info, job)) {
    std::string problem = errors.message;
    if (problem == "Read Error") problem = "the file ends early (truncated?)";
    throw Error(fmt::format("PNG {}: cannot read it: {}", name, problem));
  }
  image.width = int(job.width);
  image.height = int(job.height);

  png_textp texts = nullptr;
  const int count = png_get_text(structs.png, structs.info, &texts, nullptr);
  for (int i = 0; i < count; ++i) {
    const png_text& chunk = texts[i];
    if (!chunk.key) continue;
    std::string key = latin1_to_utf8(chunk.key, std::strlen(chunk.key));
    std::string value;
    if (chunk.text) {
      if (chunk.compression == PNG_ITXT_COMPRESSION_NONE ||
          chunk.compression == PNG_ITXT_COMPRESSION_zTXt)
        value.assign(chunk.text, chunk.itxt_length);
      else
        value = latin1_to_utf8(chunk.text, chunk.text_length);
    }
    image.text.emplace(std::move(key), std::move(value));
  }
  return image;
}

std::string not_png(const std::string& name) {
  return fmt::format(
      "PNG {}: not a PNG file (it does not start with the PNG signature); "
      "give a .png image",
      name);
}

}  // namespace

PngImage read_png(const fs::path& path) {
  require_regular_input(path, "PNG");
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file)
    throw Error(fmt::format("PNG {}: cannot open it: {}", path.string(),
                            std::strerror(errno)));
  png_byte signature[8] = {};
  const std::size_t got =
      std::fread(signature, 1, sizeof signature, file.get());
  if (got < sizeof signature || png_sig_cmp(signature, 0, sizeof signature))
    throw Error(not_png(path.string()));
  return decode_png_with(
      path.string(), [&](png_structp png) { png_init_io(png, file.get()); });
}

PngSize png_size(const std::string& name, std::string_view bytes) {
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  if (bytes.size() < 8 || png_sig_cmp(const_cast<png_bytep>(data), 0, 8))
    throw Error(not_png(name));
  // The signature, then the IHDR chunk: length 13, "IHDR", width, height.
  auto be32 = [&](std::size_t at) {
    return std::uint32_t(data[at]) << 24 | std::uint32_t(data[at + 1]) << 16 |
           std::uint32_t(data[at + 2]) << 8 | std::uint32_t(data[at + 3]);
  };
  if (bytes.size() < 24 || be32(8) != 13 || bytes.substr(12, 4) != "IHDR")
    throw Error(
        fmt::format("PNG {}: the header (IHDR) is missing or cut short", name));
  return {be32(16), be32(20)};
}

PngImage decode_png(const std::string& name, std::string_view bytes) {
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  if (bytes.size() < 8 || png_sig_cmp(const_cast<png_bytep>(data), 0, 8))
    throw Error(not_png(name));
  MemoryInput input{data, bytes.size(), 8};
  return decode_png_with(
      name, [&](png_structp png) { png_set_read_fn(png, &input, on_read); });
}

}  // namespace mold
