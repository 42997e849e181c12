// A family plugin links no libtorch: its models and pipelines are its
// companion's (mold/plugin/companion.hpp), loaded the first time a factory is
// called. What a companion that cannot be used says.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/catalog/model_family.hpp>
#include <mold/plugin/companion.hpp>
#include <string>

#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/test_registry.hpp"

using Catch::Matchers::Contains;

namespace {

std::string plugin_file(const std::string& name) {
  return std::string(mold::test::kPluginDir) + "/" + name;
}

/// What Companion::factories() throws for `companion`.
std::string load_error(mold::Companion& companion) {
  try {
    companion.factories();
  } catch (const mold::Error& e) {
    return e.what();
  }
  FAIL("the companion " << companion.library() << " loaded");
  return {};
}

}  // namespace

TEST_CASE("the family plugins load and estimate without libtorch",
          "[plugins][companion]") {
  const auto light = mold::test::run_process(mold::test::kPluginProbe, {});
  INFO(light.out << light.err);
  REQUIRE(light.exit_code == 0);
  CHECK_THAT(light.out, Contains("loaded: libtorch no"));
  CHECK_THAT(light.out, Contains("estimated: libtorch no"));

  // The first factory the family resolves loads its companion, and with it
  // libtorch: the probe is not blind.
  const auto built =
      mold::test::run_process(mold::test::kPluginProbe, {"--build"});
  INFO(built.out << built.err);
  REQUIRE(built.exit_code == 0);
  CHECK_THAT(built.out, Contains("estimated: libtorch no"));
  CHECK_THAT(built.out, Contains("resolved: libtorch yes"));
}

TEST_CASE("a family's factories are there before its companion loads",
          "[plugins][companion]") {
  const mold::Registry& registry = mold::test::real_plugins();
  for (const char* name : {"zimage", "qwen_image"}) {
    INFO(name);
    const mold::ModelFamily* family = registry.family(name);
    REQUIRE(family);
    CHECK(family->make_vae);
    CHECK(family->make_text_encoder);
    CHECK(family->make_transformer);
    CHECK(family->make_pipeline);
    CHECK(family->tokenizer);
  }
  CHECK(std::filesystem::is_regular_file(plugin_file("zimage/torch.so")));
  CHECK(std::filesystem::is_regular_file(plugin_file("qwen_image/torch.so")));
}

TEST_CASE("a companion that cannot be used names its file and the fix",
          "[plugins][companion]") {
  mold::test::TempDir dir;

  SECTION("missing") {
    mold::Companion companion("zimage", dir.path() + "/zimage/torch.so",
                              nullptr);
    const std::string message = load_error(companion);
    CHECK_THAT(message, Contains("the plugin 'zimage' computes with its "
                                 "companion library " +
                                 dir.path() + "/zimage/torch.so"));
    CHECK_THAT(message, Contains("missing"));
    CHECK_THAT(message, Contains("reinstall mold"));
    // Not remembered: a later call looks again.
    CHECK(load_error(companion) == message);
    CHECK_FALSE(companion.loaded());
  }
  SECTION("not a library") {
    const std::string file = dir.write("zimage/torch.so", "not an ELF file");
    mold::Companion companion("zimage", file, nullptr);
    const std::string message = load_error(companion);
    CHECK_THAT(message, Contains("cannot load " + file +
                                 ", the companion of the plugin 'zimage'"));
    CHECK_THAT(message, Contains("reinstall mold"));
  }
  SECTION("a library that is not a companion") {
    const std::string file = plugin_file("backend_metal.so");
    mold::Companion companion("zimage", file, nullptr);
    CHECK_THAT(load_error(companion),
               Contains(file + " has no 'mold_get_companion_info' symbol"));
  }
  SECTION("another plugin's companion") {
    const std::string file = plugin_file("zimage/torch.so");
    mold::Companion companion("qwen_image", file, nullptr);
    CHECK_THAT(load_error(companion),
               Contains(file + " is the companion of the plugin 'zimage', not "
                               "of 'qwen_image'"));
  }
  SECTION("through a family's factory") {
    auto companion = std::make_shared<mold::Companion>(
        "zimage", dir.path() + "/zimage/torch.so", nullptr);
    const mold::FamilyFactory<mold::PipelineFactory> factory(
        companion, &mold::FamilyFactories::pipeline);
    CHECK(factory);
    CHECK_THROWS_WITH(factory.function(), Contains("missing"));
  }
}
