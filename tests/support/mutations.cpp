#include "support/mutations.hpp"

#include <cctype>
#include <cstdlib>

namespace mold::test {

int mutation_cases(int fallback) {
  if (const char* text = std::getenv("MOLD_MUTATION_CASES")) {
    const long value = std::strtol(text, nullptr, 10);
    if (value > 0 && value < 100000000) return int(value);
  }
  return fallback;
}

namespace {

const std::vector<std::string> kHostileNumbers = {"1e308",
                                                  "-1",
                                                  "18446744073709551616",
                                                  "8.5",
                                                  "99999999999999999999",
                                                  "0",
                                                  "-0",
                                                  "9223372036854775807",
                                                  "nan",
                                                  "1e-308",
                                                  "4294967296",
                                                  "\"8\"",
                                                  "[]",
                                                  "{}",
                                                  "null"};

std::size_t pick(std::mt19937_64& random, std::size_t n) {
  return n == 0 ? 0 : std::size_t(random() % n);
}

}  // namespace

std::string mutate(const std::string& input, std::mt19937_64& random) {
  std::string s = input;
  const int edits = 1 + int(random() % 4);
  for (int e = 0; e < edits; ++e) {
    switch (random() % 7) {
    case 0:  // flip a bit
      if (!s.empty()) s[pick(random, s.size())] ^= char(1 << (random() % 8));
      break;
    case 1: {  // an edge byte
      static const char edges[] = {'\0', '\xff', '"', '\\', '{',  '}',
                                   '[',  ']',    ',', ':',  '\n', '\x1b'};
      if (!s.empty()) s[pick(random, s.size())] = edges[random() % 12];
      break;
    }
    case 2: {  // insert random bytes
      std::string run(1 + random() % 16, '\0');
      for (auto& c : run) c = char(random());
      s.insert(pick(random, s.size() + 1), run);
      break;
    }
    case 3: {  // delete a run
      if (s.empty()) break;
      const std::size_t at = pick(random, s.size());
      s.erase(at, 1 + random() % 32);
      break;
    }
    case 4: {  // duplicate a slice
      if (s.empty()) break;
      const std::size_t at = pick(random, s.size());
      const std::string slice = s.substr(at, 1 + random() % 64);
      s.insert(pick(random, s.size() + 1), slice);
      break;
    }
    case 5: {  // replace a number with a hostile one
      std::vector<std::pair<std::size_t, std::size_t>> numbers;
      for (std::size_t i = 0; i < s.size();) {
        if (std::isdigit(static_cast<unsigned char>(s[i]))) {
          std::size_t j = i;
          while (
              j < s.size() &&
              (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.'))
            ++j;
          numbers.emplace_back(i, j - i);
          i = j;
        } else {
          ++i;
        }
      }
      if (numbers.empty()) break;
      const auto [at, length] = numbers[pick(random, numbers.size())];
      s.replace(at, length,
                kHostileNumbers[pick(random, kHostileNumbers.size())]);
      break;
    }
    default:  // truncate
      s.resize(pick(random, s.size() + 1));
      break;
    }
  }
  return s;
}

}  // namespace mold::test
