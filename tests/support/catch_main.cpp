// Catch's main for every test tier, with two additions to Catch2 v2 (Debian
// 12 ships v2; v3 has the flags).
//
// --shard-count N --shard-index I: run the I-th (0-based) of N disjoint parts
// of the selected test cases, sorted by name and dealt out round-robin, so
// that a tier's random-order run splits into CTest entries of a few minutes.
//
// MOLD_TEST_LEDGER=FILE: append "BINARY SHARD/COUNT CASES FAILED" per run, so
// that .ci/run can check and print how many cases each tier ran.
//
// No precompiled header here: CATCH_CONFIG_RUNNER compiles Catch itself.
#define CATCH_CONFIG_RUNNER
#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

/// A test case's name as a Catch test spec that matches exactly that name: the
/// characters the spec parser reads as syntax are escaped.
std::string exact_spec(const std::string& name) {
  std::string spec;
  for (const char c : name) {
    if (c == '\\' || c == ',' || c == '[' || c == ']' || c == '"' || c == '~' ||
        c == '*')
      spec += '\\';
    spec += c;
  }
  return spec;
}

/// Reads a non-negative integer flag value; exits with a message naming the
/// flag.
int flag_value(const char* flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const long value = text ? std::strtol(text, &end, 10) : -1;
  if (!text || *text == '\0' || *end != '\0' || errno != 0 || value < 0 ||
      value > 1000000) {
    std::cerr << "error: " << flag << " needs a whole number, got '"
              << (text ? text : "") << "'\n";
    std::exit(2);
  }
  return static_cast<int>(value);
}

std::string tier_of(const char* argv0) {
  std::string name = argv0;
  const auto slash = name.rfind('/');
  if (slash != std::string::npos) name = name.substr(slash + 1);
  return name;
}

// Whether the run only lists (names, tests, tags or reporters) and runs no test
// case: CTest's discovery (catch_discover_tests) runs each binary with
// --list-test-names-only and --list-reporters while it builds, which must not
// count as a run.
bool lists_only(const Catch::Config& config) {
  return config.listTestNamesOnly() || config.listTests() ||
         config.listTags() || config.listReporters();
}

}  // namespace

int main(int argc, char** argv) {
  int shard_count = 1, shard_index = 0;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--shard-count" || arg == "--shard-index") {
      const int value =
          flag_value(argv[i], i + 1 < argc ? argv[i + 1] : nullptr);
      (arg == "--shard-count" ? shard_count : shard_index) = value;
      ++i;
    } else {
      args.push_back(argv[i]);
    }
  }
  if (shard_count < 1 || shard_index >= shard_count) {
    std::cerr << "error: --shard-index " << shard_index
              << " is not below --shard-count " << shard_count << "\n";
    return 2;
  }

  Catch::Session session;
  const int parsed =
      session.applyCommandLine(static_cast<int>(args.size()), args.data());
  if (parsed != 0) return parsed;

  std::size_t selected = 0;
  {
    Catch::Config& config = session.config();
    const auto tests = Catch::filterTests(Catch::getAllTestCasesSorted(config),
                                          config.testSpec(), config);
    selected = tests.size();
    if (shard_count > 1) {
      std::vector<std::string> names;
      for (const auto& test : tests) names.push_back(test.name);
      std::sort(names.begin(), names.end());
      std::vector<std::string> mine;
      // Catch ANDs the specs it is given unless "," separates them.
      for (std::size_t i = static_cast<std::size_t>(shard_index);
           i < names.size(); i += static_cast<std::size_t>(shard_count)) {
        mine.push_back(exact_spec(names[i]));
        mine.push_back(",");
      }
      if (mine.empty()) {
        std::cout << "shard " << shard_index << " of " << shard_count
                  << ": no test case (" << names.size() << " selected)\n";
        return 0;
      }
      selected = mine.size() / 2;
      session.configData().testsOrTags = mine;
      session.useConfigData(session.configData());
      // The escaped names must select exactly this shard's test cases.
      Catch::Config& sharded = session.config();
      const auto check = Catch::filterTests(
          Catch::getAllTestCasesSorted(sharded), sharded.testSpec(), sharded);
      if (check.size() != selected) {
        std::cerr << "error: shard " << shard_index << " of " << shard_count
                  << " selects " << check.size() << " test cases, expected "
                  << selected << ": a test name the spec parser misreads\n";
        return 2;
      }
      std::cout << "shard " << shard_index << " of " << shard_count << ": "
                << selected << " of " << names.size() << " test cases\n";
    }
  }

  const int failed = session.run();
  if (const char* ledger = std::getenv("MOLD_TEST_LEDGER");
      ledger && *ledger && !lists_only(session.config())) {
    std::ofstream out(ledger, std::ios::app);
    out << tier_of(argv[0]) << ' ' << shard_index << '/' << shard_count << ' '
        << selected << ' ' << failed << '\n';
  }
  return failed;
}
