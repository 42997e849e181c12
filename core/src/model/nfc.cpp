#include "model/nfc.hpp"

#include <fmt/format.h>
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include <cstdint>
#include <limits>

#include "mold/base/error.hpp"

namespace mold {

namespace {

bool is_ascii(std::string_view text) {
  for (const char c : text)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

const icu::Normalizer2& nfc_instance() {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status) || nfc == nullptr)
    throw Error(
        fmt::format("ICU has no NFC normalizer ({}): check the ICU data "
                    "library (libicudata) is installed",
                    u_errorName(status)));
  return *nfc;
}

icu::StringPiece piece(std::string_view text) {
  if (text.size() >
      static_cast<std::size_t>(std::numeric_limits<int32_t>::max()))
    throw InvalidArgument(fmt::format(
        "text of {} bytes is too long to normalize: split it below 2 GiB",
        text.size()));
  return icu::StringPiece(text.data(), static_cast<int32_t>(text.size()));
}

}  // namespace

bool is_nfc(std::string_view text) {
  if (is_ascii(text)) return true;  // ASCII is always NFC
  UErrorCode status = U_ZERO_ERROR;
  const bool normalized = nfc_instance().isNormalizedUTF8(piece(text), status);
  if (U_FAILURE(status))
    throw Error(
        fmt::format("ICU could not check NFC: {}", u_errorName(status)));
  return normalized;
}

std::string to_nfc(std::string_view text) {
  if (is_nfc(text)) return std::string(text);
  std::string out;
  out.reserve(text.size());
  icu::StringByteSink<std::string> sink(&out);
  UErrorCode status = U_ZERO_ERROR;
  nfc_instance().normalizeUTF8(0, piece(text), sink, nullptr, status);
  if (U_FAILURE(status))
    throw Error(
        fmt::format("ICU could not normalize to NFC: {}", u_errorName(status)));
  return out;
}

}  // namespace mold
