#pragma once
// The state-dict listings in tests/data (one "name<TAB>AxBxC" line per
// tensor, '#' comments): the names and shapes of a published checkpoint, and
// the check that a module declares exactly those. Torch-free: shapes are
// plain vectors.

#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/paths.hpp"

namespace mold::test {

using ShapeMap = std::map<std::string, std::vector<std::int64_t>>;

/// name -> shape from tests/data/`file`.
inline ShapeMap read_state_dict_listing(const std::string& file) {
  std::ifstream in(std::string(kDataDir) + "/" + file);
  REQUIRE(in);
  ShapeMap out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    REQUIRE(tab != std::string::npos);
    std::vector<std::int64_t> shape;
    std::stringstream dims(line.substr(tab + 1));
    std::string d;
    while (std::getline(dims, d, 'x')) shape.push_back(std::stoll(d));
    out[line.substr(0, tab)] = shape;
  }
  return out;
}

/// Every listed tensor is declared with its shape, and nothing else is.
inline void check_same_state_dict(const ShapeMap& expected,
                                  const ShapeMap& declared) {
  for (const auto& [name, shape] : expected) {
    INFO(name);
    const auto it = declared.find(name);
    REQUIRE(it != declared.end());
    CHECK(it->second == shape);
  }
  for (const auto& [name, shape] : declared) {
    INFO("not in the listing: " << name);
    CHECK(expected.count(name));
  }
}

}  // namespace mold::test
