// The house's include graph points one way: every #include of mold's own code
// (core, torch, profile, net, plugins, tools) goes to its own unit or to one
// the table in docs/architecture.md ("Layers: who may include whom") lets it
// reach, directly or through the units those include. The table is read from
// the document, so the page and the code cannot disagree: a new area, an arrow
// upward, or a row for something that no longer exists fails here.

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/paths.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path& source_root() {
  static const fs::path root =
      fs::path(mold::test::kDocsDir).parent_path().lexically_normal();
  return root;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Unit -> the units it may include directly, from the table between the
/// include-layers markers of docs/architecture.md.
using Table = std::map<std::string, std::set<std::string>>;

Table read_table() {
  const std::string doc = read_text(source_root() / "docs" / "architecture.md");
  const auto begin = doc.find("<!-- include-layers:begin -->");
  const auto end = doc.find("<!-- include-layers:end -->");
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  Table table;
  std::istringstream rows(doc.substr(begin, end - begin));
  const std::regex name("`([^`]+)`");
  for (std::string row; std::getline(rows, row);) {
    // | `unit` | `a`, `b` | what it is |
    if (row.rfind("| `", 0) != 0) continue;
    const auto second_bar = row.find('|', 1);
    const auto third_bar = row.find('|', second_bar + 1);
    std::smatch m;
    const std::string first = row.substr(1, second_bar - 1);
    REQUIRE(std::regex_search(first, m, name));
    auto& may = table[m[1]];
    const std::string deps =
        row.substr(second_bar + 1, third_bar - second_bar - 1);
    for (std::sregex_iterator it(deps.begin(), deps.end(), name), last;
         it != last; ++it)
      may.insert((*it)[1]);
  }
  return table;
}

/// The unit a file of the tree belongs to: core/<area>, torch/<area>,
/// profile, net, plugins/<name>, tools/<tool> or tools/mold/<folder>; nullopt
/// for what is not mold's library code (tests, benchmarks, fuzzers).
std::optional<std::string> unit_of(const fs::path& relative) {
  std::vector<std::string> parts;
  for (const auto& part : relative) parts.push_back(part.string());
  if (parts.size() < 2) return std::nullopt;
  const std::string& top = parts[0];
  if (top == "core" || top == "torch") {
    if (parts[1] == "include" && parts.size() > 4) return top + "/" + parts[3];
    if (parts[1] == "src" && parts.size() > 3) return top + "/" + parts[2];
    return std::nullopt;
  }
  if (top == "profile" || top == "net") return top;
  if (top == "plugins") {
    if (parts.size() > 3 && parts[2] == "tests") return std::nullopt;
    return top + "/" + parts[1];
  }
  if (top == "tools") {
    if (parts.size() > 3 && parts[1] == "mold") return "tools/mold/" + parts[2];
    return "tools/" + parts[1];
  }
  return std::nullopt;
}

struct Include {
  fs::path from, to;  // relative to the source root
  std::string text;   // as written
};

/// Where `name` (as written in `from`) is in the tree: beside `from`, under
/// its library's private and public roots, then every public root; nullopt
/// for what is not mold's (the standard library, libtorch, fmt, ...). The
/// generated build_config.hpp is core/base's.
std::optional<fs::path> resolve(const fs::path& from, const std::string& name) {
  if (name == "mold/base/build_config.hpp")
    return fs::path("core/include/mold/base/build_config.hpp");
  const std::string library = from.begin()->string();
  std::vector<fs::path> roots = {from.parent_path()};
  for (const char* lib : {"core", "torch", "profile", "net"})
    if (library == lib) roots.push_back(fs::path(lib) / "src");
  for (const char* root :
       {"tools", "tools/mold", "tools/molddiag", "core/include",
        "torch/include", "profile/include", "net/include"})
    roots.push_back(root);
  for (const auto& root : roots) {
    const fs::path candidate = (root / name).lexically_normal();
    if (fs::is_regular_file(source_root() / candidate)) return candidate;
  }
  return std::nullopt;
}

std::vector<Include> includes_of_the_house() {
  std::vector<Include> out;
  const std::regex line(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  for (const char* top :
       {"core", "torch", "profile", "net", "plugins", "tools"}) {
    for (const auto& entry :
         fs::recursive_directory_iterator(source_root() / top)) {
      const auto ext = entry.path().extension();
      if (!entry.is_regular_file() ||
          (ext != ".hpp" && ext != ".cpp" && ext != ".h" && ext != ".cu"))
        continue;
      const fs::path from = entry.path().lexically_relative(source_root());
      if (!unit_of(from)) continue;
      std::istringstream lines(read_text(entry.path()));
      for (std::string text; std::getline(lines, text);) {
        std::smatch m;
        if (!std::regex_search(text, m, line)) continue;
        const std::string name = m[1];
        const auto to = resolve(from, name);
        if (!to) {
          INFO(from.string() << " includes " << name);
          CHECK(name.rfind("mold/", 0) != 0);  // mold's own headers resolve
          continue;
        }
        out.push_back({from, *to, name});
      }
    }
  }
  return out;
}

/// Every unit `unit` reaches through the table (itself excluded).
std::set<std::string> reach(const Table& table, const std::string& unit) {
  std::set<std::string> seen;
  std::vector<std::string> todo = {unit};
  while (!todo.empty()) {
    const std::string next = todo.back();
    todo.pop_back();
    const auto it = table.find(next);
    if (it == table.end()) continue;
    for (const auto& dep : it->second)
      if (seen.insert(dep).second) todo.push_back(dep);
  }
  return seen;
}

}  // namespace

TEST_CASE("the layers table lists real units and has no cycle", "[layers]") {
  const Table table = read_table();
  REQUIRE(table.size() > 10);
  std::set<std::string> present;
  for (const auto& include : includes_of_the_house()) {
    present.insert(*unit_of(include.from));
    present.insert(*unit_of(include.to));
  }
  for (const auto& [unit, may] : table) {
    INFO("docs/architecture.md's layers table has a row for " << unit);
    CHECK(present.count(unit) == 1);  // no row for a unit that is gone
    for (const auto& dep : may) {
      INFO("which may include " << dep);
      CHECK(table.count(dep) == 1);  // every dependency has its own row
    }
    INFO("and reaches itself through the table: a cycle");
    CHECK(reach(table, unit).count(unit) == 0);
  }
  for (const auto& unit : present) {
    INFO(unit << " holds code but has no row in docs/architecture.md's "
                 "layers table: add one, with what it may include");
    CHECK(table.count(unit) == 1);
  }
}

TEST_CASE("every include points down the layers table", "[layers]") {
  const Table table = read_table();
  std::map<std::string, std::set<std::string>> reaches;
  for (const auto& [unit, may] : table) reaches[unit] = reach(table, unit);
  int checked = 0;
  for (const auto& include : includes_of_the_house()) {
    const std::string from = *unit_of(include.from);
    const std::string to = *unit_of(include.to);
    ++checked;
    if (from == to || !table.count(from)) continue;
    INFO(include.from.string()
         << " includes " << include.text << " (" << to << "), but " << from
         << " may not reach " << to
         << " in docs/architecture.md's layers table: the arrow points up. "
            "Move the code to the unit it belongs to, or pass what it needs "
            "in from above (a function, an interface).");
    CHECK(reaches[from].count(to) == 1);
  }
  CHECK(checked > 500);
}

TEST_CASE("no two headers include each other, directly or in a ring",
          "[layers]") {
  std::map<fs::path, std::set<fs::path>> graph;
  for (const auto& include : includes_of_the_house())
    if (include.from.extension() != ".cpp")
      graph[include.from].insert(include.to);
  // Depth-first search; a header met again while on the path closes a ring.
  std::map<fs::path, int> state;  // 1: on the path, 2: done
  std::vector<fs::path> path;
  std::vector<std::string> rings;
  std::function<void(const fs::path&)> visit = [&](const fs::path& header) {
    state[header] = 1;
    path.push_back(header);
    for (const auto& next : graph[header]) {
      if (state[next] == 1) {
        std::string ring;
        for (auto it = std::find(path.begin(), path.end(), next);
             it != path.end(); ++it)
          ring += it->string() + " -> ";
        rings.push_back(ring + next.string());
      } else if (state[next] == 0) {
        visit(next);
      }
    }
    path.pop_back();
    state[header] = 2;
  };
  for (const auto& [header, _] : graph)
    if (state[header] == 0) visit(header);
  for (const auto& ring : rings)
    FAIL_CHECK("headers that include each other: " << ring);
  CHECK(rings.empty());
}
