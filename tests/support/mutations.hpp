#pragma once
// Bounded random mutation of valid inputs, for the hostile-input tests: a few
// thousand cases by default, more with MOLD_MUTATION_CASES (scripts/test.sh
// --long sets it). Deterministic per seed, so a failure names its case.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace mold::test {

/// How many mutated cases a test runs: MOLD_MUTATION_CASES, else `fallback`.
int mutation_cases(int fallback);

/// `input` changed by 1-4 random edits: flipped bits, bytes set to edge
/// values, inserted or deleted runs, duplicated slices, and numbers replaced
/// with hostile ones (1e308, -1, 2^64, 8.5, 99999999999999999999).
std::string mutate(const std::string& input, std::mt19937_64& random);

}  // namespace mold::test
