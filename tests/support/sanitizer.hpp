#pragma once
// Whether the tests are built with AddressSanitizer, and what that does to the
// memory a process keeps resident.

#if defined(__SANITIZE_ADDRESS__)
#  define MOLD_TEST_SANITIZED 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define MOLD_TEST_SANITIZED 1
#  endif
#endif

namespace mold::test {

/// Resident bytes per byte a process allocates and touches: under
/// AddressSanitizer its shadow memory (one byte per 8) becomes resident with
/// the memory it describes.
#if defined(MOLD_TEST_SANITIZED)
inline constexpr double kResidentPerTouchedByte = 1.125;
#else
inline constexpr double kResidentPerTouchedByte = 1.0;
#endif

}  // namespace mold::test
