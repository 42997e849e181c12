#pragma once
// The block loops' clones and their vectors. A function marked
// MOLD_VECTOR_CLONES is compiled for x86-64-v4 (AVX-512), v3 (AVX2) and the
// baseline, and the one for this CPU is chosen when the program loads. Its
// vector code lives in MOLD_INLINE functions it calls, so each clone gets its
// own copy: a clone's own calls must pass no vector wider than the
// baseline's (Clang refuses them), and those between inlined functions cross
// no ABI boundary (hence no psabi warnings). Sixteen values a vector (GCC's
// and Clang's vector types); CPUs with narrower vectors split them.

#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__APPLE__)
#  define MOLD_VECTOR_CLONES \
    __attribute__((          \
        target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#  define MOLD_VECTOR_CLONES
#endif
#define MOLD_INLINE inline __attribute__((always_inline))

#pragma GCC diagnostic ignored "-Wpsabi"

namespace mold::vector_clones {

using Bytes16 = std::uint8_t __attribute__((vector_size(16)));
using Ints16 = std::int32_t __attribute__((vector_size(64)));
using Floats16 = float __attribute__((vector_size(64)));

/// Sixteen bytes as floats.
MOLD_INLINE Floats16 to_floats(Bytes16 q) {
  return __builtin_convertvector(__builtin_convertvector(q, Ints16), Floats16);
}

/// Sixteen bytes as int8 values, as floats: widened unsigned, then the sign
/// restored (GCC converts a signed byte vector one byte at a time).
MOLD_INLINE Floats16 signed_to_floats(Bytes16 q) {
  const Ints16 widened =
      __builtin_convertvector(q ^ std::uint8_t(0x80), Ints16) - 0x80;
  return __builtin_convertvector(widened, Floats16);
}

}  // namespace mold::vector_clones
