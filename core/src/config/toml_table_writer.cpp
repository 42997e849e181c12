#include "mold/config/toml_table_writer.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "mold/base/error.hpp"
#include "mold/base/file_io.hpp"

namespace mold {

void replace_toml_table(const std::filesystem::path& file,
                        const std::string& table, const std::string& block,
                        const std::string& what) {
  std::vector<std::string> lines;
  {
    std::ifstream in(file);
    if (!in)
      throw Error(
          fmt::format("{} {}: cannot read the file", what, file.string()));
    std::string line;
    while (std::getline(in, line)) lines.push_back(line);
  }
  const std::string header = "[" + table + "]";
  std::size_t begin = lines.size(), end = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] != header) continue;
    begin = i;
    end = i + 1;
    while (end < lines.size() && (lines[end].empty() || lines[end][0] != '['))
      ++end;
    // Leave the comment lines that introduce the next table where they are.
    while (end > begin + 1 &&
           (lines[end - 1].empty() || lines[end - 1][0] == '#'))
      --end;
    break;
  }
  std::vector<std::string> replacement;
  std::stringstream text(block);
  std::string line;
  while (std::getline(text, line)) replacement.push_back(line);
  if (begin == lines.size()) {
    lines.push_back("");
    lines.insert(lines.end(), replacement.begin(), replacement.end());
  } else {
    lines.erase(lines.begin() + long(begin), lines.begin() + long(end));
    lines.insert(lines.begin() + long(begin), replacement.begin(),
                 replacement.end());
  }
  std::string content;
  for (const auto& l : lines) content += l + "\n";
  // What is written must read back: a block that breaks the file is refused
  // with the file untouched.
  try {
    (void)toml::parse(content, file.string());
  } catch (const toml::parse_error& e) {
    throw Error(fmt::format(
        "{} {}: with the new [{}] table the file would not be valid TOML "
        "(line {}: {}); it is left as it is",
        what, file.string(), table, e.source().begin.line, e.description()));
  }
  write_file_atomically(file, what, [&](std::ostream& out) { out << content; });
}

}  // namespace mold
