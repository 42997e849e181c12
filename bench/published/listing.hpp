#pragma once
// A tensor listing of tests/data ("name<TAB>AxBxC" lines, '#' comments): the
// names and shapes the published-scale kit writes with random values.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mold_bench {

struct Listed {
  std::string name;
  std::vector<std::int64_t> shape;
  std::uint64_t elements() const {
    std::uint64_t n = 1;
    for (auto d : shape) n *= std::uint64_t(d);
    return n;
  }
  std::uint64_t bytes() const { return 2 * elements(); }  // bf16
  double fan_in() const {
    double n = 1;
    for (std::size_t i = 1; i < shape.size(); ++i) n *= double(shape[i]);
    return n;
  }
};

inline std::vector<Listed> read_listing(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::vector<Listed> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    if (tab == std::string::npos)
      throw std::runtime_error(path.string() + ": no tab in: " + line);
    Listed l;
    l.name = line.substr(0, tab);
    std::stringstream dims(line.substr(tab + 1));
    std::string dim;
    while (std::getline(dims, dim, 'x')) l.shape.push_back(std::stoll(dim));
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace mold_bench
