#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/config/config.hpp>
#include <mold/plugin/plugin_loader.hpp>
#include <mold/plugin/registry.hpp>
#include <set>
#include <string>

#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/test_registry.hpp"

using namespace mold;

namespace {

std::string bad_dir(const std::string& name) {
  return std::string(mold::test::kBadPluginRoot) + "/" + name;
}

bool has_plugin(const Registry& r, const std::string& name) {
  for (const auto& p : r.plugins())
    if (p.name == name) return true;
  return false;
}

/// Loads the real plugins, then one broken plugin's directory.
struct BadPluginRun {
  Registry registry;
  explicit BadPluginRun(const std::string& name) {
    PluginLoader loader(registry);
    loader.load_directories({mold::test::kPluginDir, bad_dir(name)});
  }
};

}  // namespace

TEST_CASE("the four plugins load without errors", "[plugins]") {
  const Registry& r = mold::test::real_plugins();
  CHECK(r.load_errors().empty());
  for (const char* name :
       {"qwen_image", "zimage", "backend_cuda", "backend_metal"}) {
    INFO(name);
    CHECK(has_plugin(r, name));
  }
  CHECK(r.family("qwen_image"));
  CHECK(r.family("zimage"));
  CHECK(r.create_backend("cpu")->name() == "cpu");
  REQUIRE(r.family("qwen_image")->model("qwen-image-edit-2511"));
  const auto [model, variant] =
      r.family("qwen_image")->find("qwen-image-edit-2511:q4");
  REQUIRE(variant);
  CHECK(variant->component("transformer")->bytes == 13'000'000'000ull);
  CHECK(variant->component("vae")->bytes == 126'892'531ull * 2);
  CHECK(smaller_variants(*r.family("qwen_image"), "qwen-image-edit-2511") ==
        std::vector<std::string>{"qwen-image-edit-2511:q8",
                                 "qwen-image-edit-2511:q4"});
  CHECK(smaller_variants(*r.family("zimage"), "z-image-turbo:q4").empty());
}

TEST_CASE(
    "each broken plugin is skipped with its own error; the others still load",
    "[plugins]") {
  struct Case {
    const char* dir;
    LoadErrorKind kind;
    const char* message;
  };
  const Case cases[] = {
      {"not_a_library", LoadErrorKind::not_loadable, "cannot load"},
      {"no_entry_symbol", LoadErrorKind::missing_entry_symbol,
       "no 'mold_get_plugin_info' symbol"},
      {"null_info", LoadErrorKind::null_info, "returned null"},
      {"api_version_2", LoadErrorKind::api_version_mismatch,
       "got 2, supported 1"},
      {"struct_too_small", LoadErrorKind::struct_too_small,
       "descriptor is 8 bytes"},
      {"build_id_mismatch", LoadErrorKind::build_id_mismatch,
       "built as \"mold-api 1; libstdc++ cxx11abi=0; torch 0.4\""},
      {"null_register_all", LoadErrorKind::null_register_all,
       "no register_all"},
      {"register_throws", LoadErrorKind::register_threw,
       "failed to register: calibration table 'vae_decode.cuda' is corrupt"},
      {"duplicate_estimator", LoadErrorKind::duplicate,
       "estimator 'qwen_image/vae_decode/cuda' is registered by both"},
      {"entry_point_throws", LoadErrorKind::entry_point_threw,
       "mold_get_plugin_info() threw: the descriptor could not be built"},
      {"empty_name", LoadErrorKind::invalid_name,
       "the plugin descriptor has no name"},
      {"register_throws_int", LoadErrorKind::register_threw,
       "failed to register: it threw a non-standard exception"},
  };
  for (const auto& c : cases) {
    INFO(c.dir);
    BadPluginRun run(c.dir);
    REQUIRE(run.registry.load_errors().size() == 1);
    const LoadError& e = run.registry.load_errors().front();
    CHECK(e.kind == c.kind);
    CHECK_THAT(e.message, Catch::Contains(c.message));
    CHECK_THAT(e.path.string(), Catch::Contains(c.dir));
    for (const char* name :
         {"qwen_image", "zimage", "backend_cuda", "backend_metal"})
      CHECK(has_plugin(run.registry, name));
  }
}

TEST_CASE("every load error kind has its own name", "[plugins]") {
  std::set<std::string> names;
  for (const auto kind :
       {LoadErrorKind::missing_directory, LoadErrorKind::not_loadable,
        LoadErrorKind::missing_entry_symbol, LoadErrorKind::entry_point_threw,
        LoadErrorKind::null_info, LoadErrorKind::api_version_mismatch,
        LoadErrorKind::struct_too_small, LoadErrorKind::invalid_name,
        LoadErrorKind::build_id_mismatch, LoadErrorKind::null_register_all,
        LoadErrorKind::register_threw, LoadErrorKind::duplicate})
    CHECK(names.insert(std::string(to_string(kind))).second);
  CHECK_FALSE(names.count("unknown"));
}

TEST_CASE("a duplicate names both plugins and registers nothing of the second",
          "[plugins]") {
  // Load the real plugins first, then the duplicate, so the duplicate is the
  // one refused.
  Registry registry;
  PluginLoader loader(registry);
  loader.load_directories(
      {mold::test::kPluginDir, bad_dir("duplicate_estimator")});
  REQUIRE(registry.load_errors().size() == 1);
  const auto& message = registry.load_errors().front().message;
  CHECK_THAT(message, Catch::Contains("'qwen_image'") &&
                          Catch::Contains("'test_duplicate_estimator'"));
  CHECK_FALSE(has_plugin(registry, "test_duplicate_estimator"));
  CHECK(registry.family("duplicate_test_family") == nullptr);  // all or nothing
}

TEST_CASE("loading the same plugin twice is refused by name", "[plugins]") {
  Registry registry;
  PluginLoader loader(registry);
  const std::string file = std::string(mold::test::kPluginDir) + "/zimage.so";
  CHECK(loader.load_file(file));
  CHECK_FALSE(loader.load_file(file));
  REQUIRE(registry.load_errors().size() == 1);
  CHECK(registry.load_errors().front().kind == LoadErrorKind::duplicate);
  CHECK_THAT(registry.load_errors().front().message,
             Catch::Contains("a plugin named 'zimage' is already loaded"));
}

TEST_CASE("a missing plugin directory is reported, not fatal", "[plugins]") {
  Registry registry;
  PluginLoader(registry).load_directories(
      {"/nonexistent/mold/plugins", mold::test::kPluginDir});
  REQUIRE(registry.load_errors().size() == 1);
  CHECK(registry.load_errors().front().kind ==
        LoadErrorKind::missing_directory);
  CHECK(has_plugin(registry, "qwen_image"));
}

TEST_CASE("search path: flags, MOLD_PLUGIN_PATH, config, install dir",
          "[plugins]") {
  Config config;
  config.plugin_dirs = {"/from/config"};
  setenv("MOLD_PLUGIN_PATH", "/env/a::/env/b", 1);
  const auto dirs = plugin_search_path({"/from/flag"}, config);
  unsetenv("MOLD_PLUGIN_PATH");
  REQUIRE(dirs.size() == 5);
  CHECK(dirs[0] == "/from/flag");
  CHECK(dirs[1] == "/env/a");
  CHECK(dirs[2] == "/env/b");
  CHECK(dirs[3] == "/from/config");
  CHECK(dirs[4] == installed_plugin_dir());
  CHECK(std::filesystem::equivalent(installed_plugin_dir(),
                                    mold::test::kPluginDir));
}

TEST_CASE("registry lookups fail with what is registered", "[plugins]") {
  const Registry& r = mold::test::real_plugins();
  Workload w;
  w.family = "qwen_image";
  w.op = "upscale";  // an op no plugin estimates
  w.backend = "cuda";
  w.width = w.height = 1024;
  CHECK_THROWS_WITH(
      r.estimate(w),
      Catch::Contains("no estimator for qwen_image/upscale/cuda") &&
          Catch::Contains("qwen_image/vae_decode/cuda"));
  w.family = "sdxl";
  CHECK_THROWS_WITH(r.estimate(w), Catch::Contains("no family 'sdxl'") &&
                                       Catch::Contains("qwen_image, zimage"));
  CHECK_THROWS_WITH(
      r.create_backend("vulkan"),
      Catch::Contains("no backend 'vulkan'") && Catch::Contains("cpu"));
}

#if defined(__linux__) && defined(__x86_64__)
TEST_CASE("a library for another CPU is refused from its ELF header, unloaded",
          "[plugins]") {
  mold::test::TempDir dir;
  const std::string copy = dir.path() + "/zimage.so";
  std::filesystem::copy_file(std::string(mold::test::kPluginDir) + "/zimage.so",
                             copy);
  {
    // e_machine, at offset 18 of the ELF header: EM_AARCH64 (183).
    std::fstream file(copy, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(18);
    const char aarch64[2] = {char(183), 0};
    file.write(aarch64, 2);
  }
  Registry registry;
  CHECK_FALSE(PluginLoader(registry).load_file(copy));
  REQUIRE(registry.load_errors().size() == 1);
  const LoadError& e = registry.load_errors().front();
  CHECK(e.kind == LoadErrorKind::not_loadable);
  CHECK_THAT(e.message,
             Catch::Contains("an ELF file for aarch64 (this is x86_64)"));
  CHECK_FALSE(has_plugin(registry, "zimage"));
}
#endif

TEST_CASE("a file that is not ELF is refused without dlopen's errno noise",
          "[plugins]") {
  BadPluginRun run("not_a_library");
  REQUIRE(run.registry.load_errors().size() == 1);
  const auto& message = run.registry.load_errors().front().message;
  CHECK_THAT(message, Catch::Contains("not an ELF shared library"));
  CHECK_THAT(message, !Catch::Contains("Bad file descriptor"));
}
