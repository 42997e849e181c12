// Model directories (model_index.json and its component folders), where mold
// looks for them, and what it says when it finds none. Every tree is made here
// in a temp directory.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mold/base/error.hpp>
#include <mold/catalog/model_catalog.hpp>
#include <mold/catalog/model_dir.hpp>
#include <mold/catalog/model_search.hpp>
#include <mold/config/config.hpp>
#include <optional>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/scoped_env.hpp"

namespace fs = std::filesystem;
using namespace mold;
using Catch::Matchers::Contains;
using mold::test::ScopedEnv;
using mold::test::TempDir;

namespace {

const std::string kZImageIndex = R"({
  "_class_name": "ZImagePipeline",
  "_diffusers_version": "0.36.0.dev0",
  "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"],
  "text_encoder": ["transformers", "Qwen3Model"],
  "tokenizer": ["transformers", "Qwen2Tokenizer"],
  "transformer": ["diffusers", "ZImageTransformer2DModel"],
  "vae": ["diffusers", "AutoencoderKL"]
})";

/// A Z-Image-shaped model directory at dir/rel (rel may be empty: dir itself).
fs::path make_model(const TempDir& dir, const std::string& rel,
                    const std::string& index = kZImageIndex) {
  const std::string at = rel.empty() ? "" : rel + "/";
  dir.write(at + "model_index.json", index);
  dir.write(at + "transformer/config.json", "{}");
  dir.write(at + "transformer/diffusion_pytorch_model.safetensors", "");
  dir.write(at + "text_encoder/config.json", "{}");
  dir.write(at + "text_encoder/model-00001-of-00002.safetensors", "");
  dir.write(at + "text_encoder/model-00002-of-00002.safetensors", "");
  dir.write(at + "text_encoder/model.safetensors.index.json", "{}");
  dir.write(at + "tokenizer/tokenizer.json", "{}");
  dir.write(at + "tokenizer/tokenizer_config.json", "{}");
  dir.write(at + "vae/config.json", "{}");
  dir.write(at + "vae/diffusion_pytorch_model.safetensors", "");
  dir.write(at + "scheduler/scheduler_config.json", "{}");
  return fs::path(dir.path()) / rel;
}

/// Isolates a test from the user's own MOLD_MODELS_DIR and data dirs.
struct IsolatedModelEnv {
  explicit IsolatedModelEnv(const TempDir& home)
      : models("MOLD_MODELS_DIR", std::nullopt),
        data("XDG_DATA_HOME", std::nullopt),
        home_env("HOME", home.path()) {}
  ScopedEnv models, data, home_env;
};

}  // namespace

TEST_CASE("a diffusers model directory is read", "[model_dir]") {
  TempDir dir;
  const fs::path root = make_model(dir, "z-image-turbo");
  const ModelDir model = ModelDir::open(root);
  CHECK(model.root() == root);
  CHECK(model.pipeline_class() == "ZImagePipeline");
  CHECK(model.components() ==
        std::vector<std::string>{"scheduler", "text_encoder", "tokenizer",
                                 "transformer", "vae"});
  CHECK(model.has("transformer"));
  CHECK_FALSE(model.has("safety_checker"));
  CHECK(model.component_class("transformer") == "ZImageTransformer2DModel");
  CHECK(model.component_library("text_encoder") == "transformers");
  CHECK(model.component_class("scheduler") ==
        "FlowMatchEulerDiscreteScheduler");
  CHECK(model.component_dir("vae") == root / "vae");
  CHECK(model.config_path("transformer") == root / "transformer/config.json");
  CHECK(model.config_path("scheduler") ==
        root / "scheduler/scheduler_config.json");
  CHECK(model.config_path("tokenizer") ==
        root / "tokenizer/tokenizer_config.json");
  CHECK(model.weights_path("transformer") ==
        root / "transformer/diffusion_pytorch_model.safetensors");
  CHECK(model.weights_path("text_encoder") ==
        root / "text_encoder/model.safetensors.index.json");
}

TEST_CASE("optional components and pipeline options", "[model_dir]") {
  TempDir dir;
  const fs::path root = make_model(dir, "m", R"({
    "_class_name": "ZImagePipeline",
    "requires_safety_checker": true,
    "some_ratio": 0.5,
    "safety_checker": [null, null],
    "vae": ["diffusers", "AutoencoderKL"]
  })");
  const ModelDir model = ModelDir::open(root);
  CHECK(model.components() == std::vector<std::string>{"vae"});
  CHECK_FALSE(model.has("safety_checker"));
  CHECK_FALSE(model.has("requires_safety_checker"));
  CHECK_THROWS_WITH(model.component_class("safety_checker"),
                    Contains("[null, null]") && Contains("safety_checker"));
  CHECK_THROWS_AS(model.component_dir("safety_checker"), NotFound);
  CHECK_THROWS_WITH(
      model.component_class("transformer"),
      Contains("no component 'transformer'") && Contains("lists: vae"));
}

TEST_CASE("weights: shards without an index, .bin only, none", "[model_dir]") {
  TempDir dir;
  const fs::path root = make_model(dir, "m");
  dir.write("m/vae/extra-00002.safetensors", "");
  CHECK(ModelDir::open(root).weights_path("vae") == root / "vae");

  fs::remove(root / "transformer/diffusion_pytorch_model.safetensors");
  dir.write("m/transformer/diffusion_pytorch_model.bin", "");
  CHECK_THROWS_WITH(
      ModelDir::open(root).weights_path("transformer"),
      Contains("diffusion_pytorch_model.bin") && Contains("safetensors only"));
  fs::remove(root / "transformer/diffusion_pytorch_model.bin");
  CHECK_THROWS_WITH(ModelDir::open(root).weights_path("transformer"),
                    Contains("has no weights") && Contains("transformer"));

  dir.write("m/text_encoder/other.safetensors.index.json", "{}");
  CHECK_THROWS_AS(ModelDir::open(root).weights_path("text_encoder"),
                  InvalidArgument);
}

TEST_CASE("model directory errors name the path and what to do",
          "[model_dir]") {
  TempDir dir;
  const fs::path base = dir.path();

  SECTION("missing") {
    CHECK_THROWS_AS(ModelDir::open(base / "nope"), NotFound);
    CHECK_THROWS_WITH(ModelDir::open(base / "nope"),
                      Contains("nope") && Contains("does not exist"));
  }
  SECTION("not a directory") {
    const auto file = dir.write("file", "x");
    CHECK_THROWS_AS(ModelDir::open(file), InvalidArgument);
    CHECK_THROWS_WITH(ModelDir::open(file), Contains("not a directory"));
  }
  SECTION("no model_index.json") {
    fs::create_directories(base / "empty");
    CHECK_THROWS_AS(ModelDir::open(base / "empty"), NotFound);
    CHECK_THROWS_WITH(ModelDir::open(base / "empty"),
                      Contains("empty") &&
                          Contains("diffusers-format model directory") &&
                          Contains("it must have model_index.json"));
  }
  SECTION("model_index.json is a directory") {
    fs::create_directories(base / "odd/model_index.json");
    CHECK_THROWS_AS(ModelDir::open(base / "odd"), ConfigError);
  }
  SECTION("malformed model_index.json") {
    struct Case {
      const char* json;
      const char* expected;
    };
    const std::vector<Case> cases = {
        {"{", "model_index.json"},
        {"[1, 2]", "model_index.json"},
        {R"({"vae": ["diffusers", "AutoencoderKL"]})", "_class_name"},
        {R"({"_class_name": 3})", "_class_name"},
        {R"({"_class_name": ""})", "_class_name"},
        {R"({"_class_name": "P", "vae": "AutoencoderKL"})",
         "[library, class] pair"},
        {R"({"_class_name": "P", "vae": ["diffusers"]})",
         "[library, class] pair"},
        {R"({"_class_name": "P", "vae": ["a", "b", "c"]})",
         "[library, class] pair"},
        {R"({"_class_name": "P", "vae": ["diffusers", 3]})",
         "[library, class] pair"},
        {R"({"_class_name": "P", "vae": [null, "AutoencoderKL"]})",
         "[library, class] pair"},
        {R"({"_class_name": "P", "vae": ["", "AutoencoderKL"]})",
         "[library, class] pair"},
        {R"({"_class_name": "P", "vae": {"library": "diffusers"}})",
         "[library, class] pair"},
        {R"({"_class_name": "P", "vae": null})", "[library, class] pair"},
        {R"({"_class_name": "P", "../up": ["diffusers", "X"]})",
         "plain folder name"},
        {R"({"_class_name": "P", "a/b": ["diffusers", "X"]})",
         "plain folder name"},
    };
    for (const Case& c : cases) {
      INFO(c.json);
      dir.write("bad/model_index.json", c.json);
      try {
        (void)ModelDir::open(base / "bad");
        FAIL("a malformed model_index.json was accepted");
      } catch (const ConfigError& e) {
        CHECK_THAT(e.what(), Contains("model_index.json"));
        CHECK_THAT(e.what(), Contains(c.expected));
      }
    }
  }
  SECTION("a listed component's folder is missing or a file") {
    const fs::path root = make_model(dir, "m");
    fs::remove_all(root / "vae");
    CHECK_THROWS_AS(ModelDir::open(root), NotFound);
    CHECK_THROWS_WITH(ModelDir::open(root),
                      Contains("'vae'") && Contains("AutoencoderKL") &&
                          Contains("incomplete") && Contains("vae/"));
    dir.write("m/vae", "not a folder");
    CHECK_THROWS_AS(ModelDir::open(root), InvalidArgument);
  }
  SECTION("a component's config file is missing") {
    const fs::path root = make_model(dir, "m");
    fs::remove(root / "scheduler/scheduler_config.json");
    dir.write("m/scheduler/config.json", "{}");  // the wrong name
    const ModelDir model = ModelDir::open(root);
    CHECK_THROWS_AS(model.config_path("scheduler"), NotFound);
    CHECK_THROWS_WITH(model.config_path("scheduler"),
                      Contains("scheduler_config.json") && Contains("missing"));
    CHECK_THROWS_AS(model.config_path("unet"), NotFound);
  }
}

TEST_CASE("search directories: flags, MOLD_MODELS_DIR, config, data dir",
          "[model_dir][search]") {
  TempDir home;
  IsolatedModelEnv isolated(home);
  Config config;
  config.model_dirs = {"/cfg/one", "/cfg/two"};

  SECTION("all four, in order") {
    ScopedEnv env("MOLD_MODELS_DIR", "/env/a::/env/b:");
    ScopedEnv data("XDG_DATA_HOME", "/data");
    CHECK(model_search_dirs({"/flag/1", "/flag/2"}, config) ==
          std::vector<fs::path>{"/flag/1", "/flag/2", "/env/a", "/env/b",
                                "/cfg/one", "/cfg/two", "/data/mold/models"});
  }
  SECTION("the data dir falls back to ~/.local/share") {
    CHECK(model_search_dirs({}, Config{}) ==
          std::vector<fs::path>{fs::path(home.path()) /
                                ".local/share/mold/models"});
    ScopedEnv empty("XDG_DATA_HOME", "");
    CHECK(default_models_dir() ==
          fs::path(home.path()) / ".local/share/mold/models");
    ScopedEnv relative("XDG_DATA_HOME", "relative/data");
    CHECK(default_models_dir() ==
          fs::path(home.path()) / ".local/share/mold/models");
  }
  SECTION("nowhere at all") {
    ScopedEnv no_home("HOME", std::nullopt);
    CHECK(model_search_dirs({}, Config{}).empty());
    const ModelLookup lookup = find_model_dir("z-image-turbo", {}, Config{});
    CHECK_FALSE(lookup.found);
    CHECK_THAT(describe_lookup(lookup, "z-image-turbo"),
               Contains("nowhere to look"));
  }
}

TEST_CASE("find_model_dir: names, case, org prefixes, the first dir wins",
          "[model_dir][search]") {
  TempDir dir;
  const fs::path base = dir.path();

  SECTION("a subfolder named like the model, any case") {
    make_model(dir, "models/Z-Image-Turbo");
    const auto lookup = find_model_dir("z-image-turbo", {base / "models"});
    REQUIRE(lookup.found);
    CHECK(*lookup.found == base / "models/Z-Image-Turbo");
    CHECK(lookup.looked_in == std::vector<fs::path>{base / "models"});
    CHECK(find_model_dir("Z-IMAGE-TURBO", {base / "models"}).found);
    CHECK_FALSE(find_model_dir("z-image", {base / "models"}).found);
    CHECK_FALSE(find_model_dir("", {base / "models"}).found);
  }
  SECTION("ORG--NAME") {
    make_model(dir, "models/Tongyi-MAI--Z-Image-Turbo");
    const auto lookup = find_model_dir("z-image-turbo", {base / "models"});
    REQUIRE(lookup.found);
    CHECK(*lookup.found == base / "models/Tongyi-MAI--Z-Image-Turbo");
    // "--NAME" alone (no organisation) and a longer name do not match.
    make_model(dir, "other/--z-image-turbo");
    make_model(dir, "other/Tongyi-MAI--Z-Image-Turbo-2");
    CHECK_FALSE(find_model_dir("z-image-turbo", {base / "other"}).found);
  }
  SECTION("the plain name is preferred to ORG--NAME") {
    make_model(dir, "models/Tongyi-MAI--Z-Image-Turbo");
    make_model(dir, "models/z-image-turbo");
    CHECK(*find_model_dir("z-image-turbo", {base / "models"}).found ==
          base / "models/z-image-turbo");
  }
  SECTION("the search dir is the model directory") {
    const fs::path named = make_model(dir, "z-image-turbo");
    CHECK(*find_model_dir("z-image-turbo", {named}).found == named);
    const fs::path trailing = named.string() + "/";
    CHECK(*find_model_dir("z-image-turbo", {trailing}).found == trailing);
    const fs::path other = make_model(dir, "my-checkout");
    // Not from --model-dir: a model directory of another name is not it ...
    CHECK_FALSE(find_model_dir("z-image-turbo", {other}).found);
    // ... from --model-dir, any name is.
    CHECK(*find_model_dir("z-image-turbo", {other}, 1).found == other);
    CHECK_FALSE(
        find_model_dir("z-image-turbo", {base / "none", other}, 1).found);
  }
  SECTION("the first search dir that has it wins") {
    make_model(dir, "a/z-image-turbo");
    make_model(dir, "b/z-image-turbo");
    CHECK(*find_model_dir("z-image-turbo",
                          {base / "missing", base / "b", base / "a"})
               .found == base / "b/z-image-turbo");
  }
  SECTION("near misses: named like the model, no model_index.json") {
    dir.write("a/z-image-turbo/transformer/config.json", "{}");
    dir.write("a/Tongyi-MAI--Z-Image-Turbo/readme", "");
    make_model(dir, "b/Z-Image-Turbo");
    const auto lookup =
        find_model_dir("z-image-turbo", {base / "a", base / "a", base / "b"});
    REQUIRE(lookup.found);
    CHECK(*lookup.found == base / "b/Z-Image-Turbo");
    CHECK(lookup.looked_in == std::vector<fs::path>{base / "a", base / "b"});
    REQUIRE(lookup.near_misses.size() == 2);
    CHECK_THAT(lookup.near_misses[0],
               Contains("z-image-turbo") && Contains("no model_index.json"));
  }
}

TEST_CASE("find_model_dir: a Hugging Face cache", "[model_dir][search]") {
  TempDir dir;
  const fs::path base = dir.path();
  const std::string entry = "hf/hub/models--Tongyi-MAI--Z-Image-Turbo";
  const fs::path old_snapshot = make_model(dir, entry + "/snapshots/aaaa");
  const fs::path new_snapshot = make_model(dir, entry + "/snapshots/bbbb");
  dir.write(entry + "/snapshots/cccc/transformer/config.json",
            "{}");  // partial
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(old_snapshot, now - std::chrono::hours(2));
  fs::last_write_time(new_snapshot, now - std::chrono::hours(1));
  fs::last_write_time(base / entry / "snapshots/cccc", now);

  SECTION("the newest complete snapshot") {
    CHECK(*find_model_dir("z-image-turbo", {base / "hf/hub"}).found ==
          new_snapshot);
    // ~/.cache/huggingface itself: the entries are under hub/.
    CHECK(*find_model_dir("Z-Image-Turbo", {base / "hf"}).found ==
          new_snapshot);
  }
  SECTION("the snapshot refs/main names") {
    dir.write(entry + "/refs/main", "aaaa\n");
    CHECK(*find_model_dir("z-image-turbo", {base / "hf"}).found ==
          old_snapshot);
    dir.write(entry + "/refs/main", "cccc");  // incomplete: the newest then
    CHECK(*find_model_dir("z-image-turbo", {base / "hf"}).found ==
          new_snapshot);
    dir.write(entry + "/refs/main", "../../../..");
    CHECK(*find_model_dir("z-image-turbo", {base / "hf"}).found ==
          new_snapshot);
    // A FIFO (or any file that is not a small regular one) is no ref: the
    // search goes on without waiting for a writer.
    fs::remove(base / entry / "refs/main");
    REQUIRE(::mkfifo((base / entry / "refs/main").c_str(), 0600) == 0);
    const auto lookup = find_model_dir("z-image-turbo", {base / "hf"});
    CHECK(*lookup.found == new_snapshot);
    fs::remove(base / entry / "refs/main");
    dir.write(entry + "/refs/main", std::string(100000, 'a'));
    CHECK(*find_model_dir("z-image-turbo", {base / "hf"}).found ==
          new_snapshot);
  }
  SECTION("no complete snapshot") {
    fs::remove_all(old_snapshot);
    fs::remove_all(new_snapshot);
    const auto lookup = find_model_dir("z-image-turbo", {base / "hf"});
    CHECK_FALSE(lookup.found);
    REQUIRE(lookup.near_misses.size() == 1);
    CHECK_THAT(lookup.near_misses[0], Contains("Hugging Face cache"));
  }
}

TEST_CASE("find_model_dir with flags, MOLD_MODELS_DIR and the config",
          "[model_dir][search]") {
  TempDir home;
  IsolatedModelEnv isolated(home);
  TempDir dir;
  const fs::path base = dir.path();
  make_model(dir, "env/z-image-turbo");
  make_model(dir, "cfg/z-image-turbo");
  make_model(dir, "data/mold/models/z-image-turbo");
  const fs::path checkout = make_model(dir, "checkout");
  Config config;
  config.model_dirs = {base / "cfg"};
  ScopedEnv data("XDG_DATA_HOME", (base / "data").string());

  CHECK(*find_model_dir("z-image-turbo", {}, Config{}).found ==
        base / "data/mold/models/z-image-turbo");
  CHECK(*find_model_dir("z-image-turbo", {}, config).found ==
        base / "cfg/z-image-turbo");
  {
    ScopedEnv env("MOLD_MODELS_DIR",
                  (base / "nothing").string() + ":" + (base / "env").string());
    CHECK(*find_model_dir("z-image-turbo", {}, config).found ==
          base / "env/z-image-turbo");
    CHECK(*find_model_dir("z-image-turbo", {checkout}, config).found ==
          checkout);
    // MOLD_MODELS_DIR entries are search dirs, not models of any name.
    ScopedEnv direct("MOLD_MODELS_DIR", checkout.string());
    CHECK(*find_model_dir("z-image-turbo", {}, config).found ==
          base / "cfg/z-image-turbo");
  }
}

TEST_CASE("describe_lookup says where it looked and what to do",
          "[model_dir][search]") {
  TempDir dir;
  const fs::path base = dir.path();
  dir.write("a/z-image-turbo/readme", "");
  dir.write("file", "");
  const auto lookup = find_model_dir(
      "z-image-turbo", {base / "a", base / "missing", base / "file"});
  REQUIRE_FALSE(lookup.found);
  const std::string text = describe_lookup(lookup, "z-image-turbo");
  CHECK_THAT(text, Contains("no weights found for z-image-turbo"));
  CHECK_THAT(text, Contains((base / "a").string()));
  CHECK_THAT(text, Contains((base / "missing").string() + " (missing)"));
  CHECK_THAT(text, Contains((base / "file").string() + " (a regular file)"));
  CHECK_THAT(text, Contains((base / "a/z-image-turbo").string() + ": named"));
  CHECK_THAT(text, Contains("--model-dir DIR"));
  CHECK_THAT(text, Contains("MOLD_MODELS_DIR"));
  CHECK_THAT(text, Contains("[models] dirs"));
  CHECK_THAT(text, Contains("--tiny"));
  CHECK_THAT(text, Contains("seeded weights"));

  make_model(dir, "a/Z-Image-Turbo2");
  const auto found = find_model_dir("z-image-turbo2", {base / "a"});
  REQUIRE(found.found);
  CHECK_THAT(describe_lookup(found, "z-image-turbo2"),
             Contains((base / "a/Z-Image-Turbo2").string()));
}

TEST_CASE("[models] dirs in the config file", "[model_dir][config]") {
  TempDir dir;
  TempDir home;
  ScopedEnv home_env("HOME", home.path());
  const auto path = dir.write("mold.toml", R"(
[models]
dirs = ["models", "/srv/models", "~/weights"]
)");
  const Config config = Config::load_file(path);
  CHECK(config.model_dirs ==
        std::vector<fs::path>{fs::path(dir.path()) / "models", "/srv/models",
                              fs::path(home.path()) / "weights"});
  CHECK(Config::load_file(dir.write("none.toml", "")).model_dirs.empty());

  struct Case {
    const char* text;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"[models]\ndirs = \"/srv/models\"\n",
       ":2: key 'models.dirs': must be an array of paths"},
      {"[models]\ndirs = [1]\n", "key 'models.dirs': every entry must be"},
      {"[models]\ndirs = [\"\"]\n", "key 'models.dirs': every entry must be"},
      {"[models]\ndirs = [[\"a\"]]\n", "key 'models.dirs'"},
      {"[models]\ndir = [\"a\"]\n",
       "key 'models.dir': unknown key; known here: dirs"},
      {"models = 3\n", "key 'models': must be a table"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const auto bad = dir.write("bad.toml", c.text);
    try {
      (void)Config::load_file(bad);
      FAIL("a bad [models] table was accepted");
    } catch (const ConfigError& e) {
      CHECK_THAT(e.what(), Contains("bad.toml"));
      CHECK_THAT(e.what(), Contains(c.expected));
    }
  }
}

TEST_CASE(
    "a model directory must be the model's: pipeline and component "
    "classes",
    "[model_dir]") {
  TempDir dir;
  const fs::path root = make_model(dir, "m");
  const std::string catalog = dir.write("fam.models.toml", R"(
[family]
name = "fam"
[[models]]
name = "z-image-turbo"
default_variant = "bf16"
pipeline_classes = ["ZImagePipeline"]
component_classes = { transformer = "ZImageTransformer2DModel", vae = ["AutoencoderKL", "Other"] }
  [[models.variants]]
  name = "bf16"
  source = "test"
  components = { transformer = 1 }
)");
  const ModelFamily family = load_model_family(catalog);
  const ModelInfo& model = family.models.at(0);
  REQUIRE(model.pipeline_classes == std::vector<std::string>{"ZImagePipeline"});
  REQUIRE(model.component_classes.size() == 2);
  CHECK_NOTHROW(require_model_classes(ModelDir::open(root), model));

  ModelInfo flux = model;
  flux.pipeline_classes = {"FluxPipeline"};
  CHECK_THROWS_WITH(require_model_classes(ModelDir::open(root), flux),
                    Contains("model_index.json: key '_class_name'") &&
                        Contains("is \"ZImagePipeline\"") &&
                        Contains("\"FluxPipeline\""));
  ModelInfo other_vae = model;
  other_vae.component_classes = {{"vae", {"AutoencoderKLQwenImage"}}};
  CHECK_THROWS_WITH(require_model_classes(ModelDir::open(root), other_vae),
                    Contains("key 'vae'") && Contains("AutoencoderKL"));

  for (const auto& [line, expected] :
       std::vector<std::pair<std::string, std::string>>{
           {"pipeline_classes = []", "must be a class name or a list"},
           {"pipeline_classes = [3]", "must hold non-empty strings"},
           {"component_classes = 3", "must be a table"}}) {
    INFO(line);
    std::string text = R"(
[family]
name = "fam"
[[models]]
name = "m"
default_variant = "bf16"
LINE
  [[models.variants]]
  name = "bf16"
  source = "test"
  components = { transformer = 1 }
)";
    text.replace(text.find("LINE"), 4, line);
    const std::string bad = dir.write("bad.models.toml", text);
    CHECK_THROWS_WITH(load_model_family(bad), Contains(expected));
  }
}
