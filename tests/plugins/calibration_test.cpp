#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <mold/base/error.hpp>
#include <mold/device/cpu_matmul_kernel.hpp>
#include <mold/device/cpu_quantized_product.hpp>
#include <mold/estimate/calibration.hpp>
#include <mold/estimate/sequence_model.hpp>
#include <mold/plugin/data_files.hpp>
#include <mold/plugin/registrar.hpp>
#include <mold/plugin/registry.hpp>
#include <sstream>

#include "support/paths.hpp"
#include "support/process.hpp"
#include "support/test_registry.hpp"

using namespace mold;
using mold::test::TempDir;

namespace {

struct Measurement {
  std::string source, backend, op;
  int height = 0, width = 0;
  double implied_k = 0;
};

/// The rows of the incident 3 grid that have a measurement (not "OOM").
std::vector<Measurement> seed004_measurements() {
  std::ifstream in(std::string(mold::test::kDataDir) +
                   "/qwen_image_vae_calibration_seed004.csv");
  REQUIRE(in);
  std::vector<Measurement> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    if (cells.size() < 10 || cells[9] == "OOM" || cells[9].empty()) continue;
    rows.push_back({cells[0], cells[1], cells[4], std::stoi(cells[5]),
                    std::stoi(cells[6]), std::stod(cells[9])});
  }
  return rows;
}

Workload qwen(const std::string& op, const std::string& backend, int height,
              int width) {
  Workload w;
  w.family = "qwen_image";
  w.op = op;
  w.backend = backend;
  w.height = height;
  w.width = width;
  w.dtype = "float16";
  return w;
}

}  // namespace

TEST_CASE(
    "Qwen-Image VAE estimates cover every incident 3 measurement within "
    "1.00-1.30",
    "[calibration]") {
  const auto& registry = mold::test::real_plugins();
  const auto rows = seed004_measurements();
  REQUIRE(rows.size() ==
          42);  // 22 ROCm/NVIDIA table points (2 OOMs left out) + 20 RTX 4090
  int checked = 0;
  for (const auto& m : rows) {
    const Estimate estimate =
        registry.estimate(qwen(m.op, m.backend, m.height, m.width));
    const double measured = m.implied_k * m.height * m.width * 2;
    const double ratio = double(estimate.bytes) / measured;
    INFO(m.source << " " << m.op << " " << m.height << "x" << m.width
                  << ": estimate " << estimate.bytes << " measured " << measured
                  << " ratio " << ratio);
    CHECK(ratio >= 1.00);
    CHECK(ratio <= 1.30);
    CHECK(estimate.calibrated);
    ++checked;
  }
  CHECK(checked == int(rows.size()));
}

TEST_CASE("the cuda decode estimate is the documented constant",
          "[calibration]") {
  const Estimate e = mold::test::real_plugins().estimate(
      qwen("vae_decode", "cuda", 832, 1248));
  CHECK(e.bytes == 1248ull * 832 * 2 * 2900);
  CHECK_THAT(e.source,
             Catch::Contains("qwen_image.calibration.toml [vae_decode.cuda]"));
  const Estimate metal = mold::test::real_plugins().estimate(
      qwen("vae_decode", "metal", 832, 1248));
  CHECK_FALSE(metal.calibrated);  // borrowed from cuda until measured
}

TEST_CASE("tiled workloads are estimated for one tile", "[calibration]") {
  auto w = qwen("vae_decode", "cuda", 2048, 2048);
  w.tile = 64;  // latent units: 512 px
  const Estimate e = mold::test::real_plugins().estimate(w);
  CHECK(e.bytes == 512ull * 512 * 2 * 2900);
  CHECK_THAT(e.terms.at(0).name, Catch::Contains("one tile"));
  w.tile = 1000;  // larger than the image: the whole image
  CHECK(mold::test::real_plugins().estimate(w).bytes ==
        2048ull * 2048 * 2 * 2900);
}

TEST_CASE(
    "measured points: the upper envelope of the neighbours times the headroom",
    "[calibration]") {
  PixelLinearModel m;
  m.bytes_per_pixel = 5500;
  m.points = {{100, 4000}, {200, 3000}, {300, 5000}};
  m.headroom = 1.1;
  CHECK(m.bytes_per_pixel_at(100) == Approx(4400));
  CHECK(m.bytes_per_pixel_at(150) == Approx(4400));  // max(4000, 3000) x 1.1
  CHECK(m.bytes_per_pixel_at(200) == Approx(3300));
  CHECK(m.bytes_per_pixel_at(250) == Approx(5500));  // max(3000, 5000) x 1.1
  CHECK(m.bytes_per_pixel_at(50) ==
        Approx(5500));  // below: at least the flat constant
  CHECK(m.bytes_per_pixel_at(400) ==
        Approx(5500));  // above: max(5000 x 1.1, 5500)
  m.points.clear();
  CHECK(m.bytes_per_pixel_at(12345) == 5500);
}

TEST_CASE("a user calibration file overrides the shipped keys it sets",
          "[calibration]") {
  TempDir dir;
  const auto shipped = dir.write("fam.calibration.toml", R"(
[vae_decode.cuda]
bytes_per_pixel = 2900
calibrated = true
source = "shipped"
[vae_encode.cuda]
bytes_per_pixel = 1600
)");
  const auto user = dir.write("user/fam.calibration.toml", R"(
[vae_decode.cuda]
bytes_per_pixel = 3100
source = "my RTX 3090"
[vae_decode.mps]
bytes_per_pixel = 4000
)");
  const auto file = CalibrationFile::load(shipped, user);
  REQUIRE(file.find("vae_decode", "cuda"));
  CHECK(file.find("vae_decode", "cuda")->bytes_per_pixel == 3100);
  CHECK(file.find("vae_decode", "cuda")
            ->calibrated);  // kept from the shipped table
  CHECK(file.find("vae_decode", "cuda")->source == "my RTX 3090");
  CHECK_THAT(
      file.find("vae_decode", "cuda")
          ->estimate(
              Workload{"fam", "", "vae_decode", "cuda", "float16", 1, 8, 8})
          .source,
      Catch::StartsWith(
          "fam.calibration.toml [vae_decode.cuda]: my RTX 3090 (keys set by " +
          user));
  CHECK(file.find("vae_encode", "cuda")->bytes_per_pixel == 1600);
  CHECK(file.find("vae_decode", "mps"));
  // The registrar finds both files by the plugin's name.
  Registrar registrar("fam", std::filesystem::path(dir.path()) / "fam.so",
                      dir.path() + "/user");
  CHECK(
      load_calibration(registrar).find("vae_decode", "cuda")->bytes_per_pixel ==
      3100);
}

TEST_CASE("malformed calibration files name the file, line and key",
          "[calibration]") {
  TempDir dir;
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"[vae_decode.cuda]\ncalibrated = true\n",
       "vae_decode.cuda.bytes_per_pixel': is missing"},
      {"[vae_decode.cuda]\nbytes_per_pixel = -3\n",
       ":2: key 'vae_decode.cuda.bytes_per_pixel'"},
      {"[vae_decode.cuda]\nbytes_per_pixel = 1\nheadroom = 0.9\n",
       "at least 1.0"},
      {"[vae_decode.cuda]\nbytes_per_pixel = 1\npoints = [[1, 2, 3]]\n",
       "[pixels, bytes_per_pixel] pair"},
      {"[vae_decode.cuda]\nbytes_per_pixel = 1\ncalibrated = \"yes\"\n",
       "must be true or false"},
      {"[vae_decode.cuda]\nbytes_per_pixel = 1\nbytes_per_pixle = 2\n",
       "unknown key"},
      {"vae_decode = 3\n", "must be a table of backends"},
      {"[meta]\nspatial_scale = 8\n", "no [op.backend] tables"},
      {"[vae_decode.cuda\n", ":1"},
  };
  for (const auto& c : cases) {
    const auto path = dir.write("bad.calibration.toml", c.text);
    INFO(c.text);
    CHECK_THROWS_WITH(CalibrationFile::load(path),
                      Catch::Contains(path) && Catch::Contains(c.expected));
  }
  // An error in the user's file names the user's file and line, not the shipped
  // one.
  const auto shipped =
      dir.write("ok.toml", "[vae_decode.cuda]\nbytes_per_pixel = 1\n");
  const auto user =
      dir.write("user.toml", "[vae_decode.cuda]\n\nbytes_per_pixel = -1\n");
  CHECK_THROWS_WITH(
      CalibrationFile::load(shipped, user),
      Catch::Contains(user + ":3: key 'vae_decode.cuda.bytes_per_pixel'"));
  const auto user_new =
      dir.write("user2.toml", "[vae_decode.mps]\nsource = \"x\"\n");
  CHECK_THROWS_WITH(CalibrationFile::load(shipped, user_new),
                    Catch::Contains(user_new) && Catch::Contains("is missing"));
  CHECK_THROWS_WITH(
      CalibrationFile::load(dir.path() + "/absent.toml"),
      Catch::Contains("absent.toml") && Catch::Contains("cannot be read"));
}

TEST_CASE(
    "per-token tables: read beside the per-pixel ones, estimated from a "
    "shape, overridden key by key",
    "[calibration]") {
  TempDir dir;
  const auto shipped = dir.write("fam.calibration.toml", R"(
[vae_decode.cpu]
bytes_per_pixel = 900
[denoise.cpu]
bytes_per_token = 6
bytes_per_score = 2
fixed_bytes = 100
arch = "tiny"
headroom = 1.5
calibrated = true
source = "measured"
)");
  const auto user = dir.write("user/fam.calibration.toml", R"(
[denoise.cpu]
bytes_per_score = 3
[text_encode.cuda]
bytes_per_token = 4
)");
  const auto file = CalibrationFile::load(shipped, user);
  CHECK(file.models().size() == 1);  // the per-pixel table only
  REQUIRE(file.sequence_models().size() == 2);
  CHECK_FALSE(file.find("denoise", "cpu"));
  const SequenceModel* denoise = file.find_sequence("denoise", "cpu");
  REQUIRE(denoise);
  CHECK(denoise->bytes_per_token == 6);
  CHECK(denoise->bytes_per_score == 3);  // the user's
  CHECK(denoise->arch == "tiny");
  REQUIRE(file.find_sequence("text_encode", "cuda"));
  CHECK(file.find_sequence("text_encode", "cuda")->bytes_per_score == 0);

  SequenceShape shape;
  shape.tokens = 10;
  shape.width = 8;
  shape.element = 4;
  shape.scores = 50;
  shape.score_element = 2;
  Workload w{"fam", "", "denoise", "cpu", "float32", 2, 64, 64};
  w.arch = "tiny";
  const Estimate e = denoise->estimate(w, shape);
  // (6 x 10 x 8 x 4 + 3 x 50 x 2 + 100) x batch 2 = 4640, x 1.5 = 6960.
  CHECK(e.bytes == 6960);
  REQUIRE(e.terms.size() == 4);
  CHECK(e.terms[0].constant == "bytes_per_token");
  CHECK(e.terms[0].basis == 10 * 8 * 4 * 2);
  CHECK(e.terms[1].constant == "bytes_per_score");
  CHECK(e.terms[1].basis == 50 * 2 * 2);
  CHECK(e.terms[2].constant == "fixed_bytes");
  CHECK(e.terms[2].basis == 2);
  CHECK(e.terms[3].name == "headroom");  // one thread: no threads term
  CHECK(e.terms[3].constant.empty());
  CHECK(e.calibrated);
  CHECK_THAT(e.source, Catch::StartsWith("fam.calibration.toml [denoise.cpu]: "
                                         "measured (keys set by "));

  // Another architecture or backend: the same constants, not calibrated,
  // and the source says why.
  w.arch = "default";
  const Estimate transferred = denoise->estimate(w, shape);
  CHECK_FALSE(transferred.calibrated);
  CHECK_THAT(transferred.source,
             Catch::Contains("measured on the tiny architecture; applied to "
                             "default through its sizes"));
  w.arch = "tiny";
  w.backend = "cuda";
  const Estimate borrowed = denoise->estimate(w, shape);
  CHECK_FALSE(borrowed.calibrated);
  CHECK_THAT(borrowed.source,
             Catch::Contains("the cpu constants: not measured on cuda"));
}

TEST_CASE("malformed per-token tables name the file, line and key",
          "[calibration]") {
  TempDir dir;
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"[denoise.cpu]\nbytes_per_score = 2\n",
       "denoise.cpu.bytes_per_token': is missing"},
      {"[denoise.cpu]\nbytes_per_token = -1\n",
       ":2: key 'denoise.cpu.bytes_per_token': must be a number of at least 0"},
      {"[denoise.cpu]\nbytes_per_token = 1\nbytes_per_pixel = 2\n",
       "unknown key"},
      {"[denoise.cpu]\nbytes_per_token = 1\narch = 3\n",
       "denoise.cpu.arch': must be a string"},
      {"[denoise.cpu]\nbytes_per_token = 1\nfixed_bytes = inf\n",
       "denoise.cpu.fixed_bytes"},
  };
  for (const auto& c : cases) {
    const auto path = dir.write("bad.calibration.toml", c.text);
    INFO(c.text);
    CHECK_THROWS_WITH(CalibrationFile::load(path),
                      Catch::Contains(path) && Catch::Contains(c.expected));
  }
  // A user table over a shipped per-pixel one stays per pixel.
  const auto shipped =
      dir.write("ok.toml", "[vae_decode.cpu]\nbytes_per_pixel = 1\n");
  const auto user =
      dir.write("user.toml", "[vae_decode.cpu]\nbytes_per_token = 1\n");
  CHECK_THROWS_WITH(CalibrationFile::load(shipped, user),
                    Catch::Contains(user) && Catch::Contains("unknown key"));
}

TEST_CASE(
    "a table of stage factors: the largest counted stage, the fixed "
    "bytes and headroom",
    "[calibration]") {
  TempDir dir;
  const auto path = dir.write("fam.calibration.toml", R"(
[denoise.cpu]
attention_factor = 1.5
feed_forward_factor = 2
fixed_bytes = 100
headroom = 1.1
calibrated = true
source = "measured"
)");
  const auto file = CalibrationFile::load(path);
  const SequenceModel* denoise = file.find_sequence("denoise", "cpu");
  REQUIRE(denoise);
  CHECK(denoise->stage_factors.at("attention") == 1.5);
  CHECK(denoise->stage_factors.at("feed_forward") == 2);

  SequenceShape shape;
  shape.stages = {{"attention", 1000, "counted"},
                  {"feed_forward", 600, "counted"}};
  Workload w{"fam", "", "denoise", "cpu", "bfloat16", 2, 64, 64};
  w.arch = "default";
  const Estimate e = denoise->estimate(w, shape);
  // max(1.5 x 1000, 2 x 600) = 1500, + 100 x batch 2 = 1700, x 1.1 = 1870.
  CHECK(e.bytes == 1870);
  REQUIRE(e.terms.size() == 4);
  CHECK(e.terms[0].name == "attention");
  CHECK(e.terms[0].bytes == 1500);
  CHECK(e.terms[0].constant == "attention_factor");
  CHECK(e.terms[0].basis == 1000);
  CHECK(e.terms[1].bytes == 0);  // below the largest stage
  CHECK(e.terms[1].constant == "feed_forward_factor");
  CHECK(e.terms[1].basis == 600);
  CHECK_THAT(e.terms[1].detail, Catch::StartsWith("below the largest stage"));
  CHECK(e.terms[2].constant == "fixed_bytes");
  CHECK(e.terms[3].name == "headroom");
  // Stage counts carry the widths: any architecture is calibrated.
  CHECK(e.calibrated);
  w.backend = "cuda";
  const Estimate borrowed = denoise->estimate(w, shape);
  CHECK_FALSE(borrowed.calibrated);
  CHECK_THAT(borrowed.source,
             Catch::Contains("the cpu factors: not measured on cuda"));

  // A stage the table has no factor for, or a factor for a stage nobody
  // counts, or per-token constants where the plugin counts stages: refused
  // by name.
  w.backend = "cpu";
  SequenceShape extra = shape;
  extra.stages.push_back({"rotary", 10, "counted"});
  CHECK_THROWS_WITH(
      denoise->estimate(w, extra),
      Catch::Contains("has no rotary_factor") && Catch::Contains(path));
  SequenceShape fewer = shape;
  fewer.stages.pop_back();
  CHECK_THROWS_WITH(denoise->estimate(w, fewer),
                    Catch::Contains("has feed_forward_factor") &&
                        Catch::Contains("counts no stage 'feed_forward'"));
  SequenceShape per_token;
  per_token.tokens = 10;
  per_token.width = 8;
  per_token.element = 2;
  CHECK_THROWS_WITH(denoise->estimate(w, per_token),
                    Catch::Contains("has stage factors (attention_factor)"));
  const auto mixed = dir.write("mixed.toml", R"(
[denoise.cpu]
attention_factor = 1
bytes_per_token = 3
)");
  CHECK_THROWS_WITH(CalibrationFile::load(mixed)
                        .find_sequence("denoise", "cpu")
                        ->estimate(w, shape),
                    Catch::Contains("has per-token constants"));
}

TEST_CASE(
    "each compute thread adds its matrix-product scratch to a stage that "
    "peaks while its products run, on the cpu backend, outside the headroom",
    "[calibration]") {
  TempDir dir;
  const auto path = dir.write("fam.calibration.toml", R"(
[text_encode.cpu]
attention_factor = 1
fixed_bytes = 0
headroom = 1.1
)");
  const auto file = CalibrationFile::load(path);
  const SequenceModel* table = file.find_sequence("text_encode", "cpu");
  REQUIRE(table);
  Workload w{"fam", "", "text_encode", "cpu", "bfloat16", 1, 64, 64};
  w.matmul_kernel = CpuMatmulKernel::avx512_bf16;
  SequenceShape shape;
  shape.stages = {{"attention", 1000000, "counted"}};
  // A published text encoder's products: 14 rows, hidden 2560, ffn 9728,
  // the stage peaking while one of them runs.
  shape.count_thread_scratch(w, "attention", 14, {{2560, 9728}, {9728, 2560}});
  CHECK(shape.thread_scratch ==
        cpu_matmul_thread_scratch("bfloat16", 14, 9728, 2560,
                                  CpuMatmulKernel::avx512_bf16));
  CHECK_THAT(shape.thread_scratch_detail, Catch::Contains("14 rows"));
  const Estimate one = table->estimate(w, shape);
  // The count is of the tensors: the one thread's scratch comes on top.
  CHECK(std::abs(double(one.bytes) - (1000000 * 1.1 + shape.thread_scratch)) <
        2);
  w.threads = 4;
  const Estimate four = table->estimate(w, shape);
  const auto threads =
      std::find_if(four.terms.begin(), four.terms.end(),
                   [](const EstimateTerm& t) { return t.name == "threads"; });
  REQUIRE(threads != four.terms.end());
  CHECK(double(threads->bytes) == 4 * shape.thread_scratch);
  CHECK_THAT(threads->detail, Catch::StartsWith("4 threads x"));
  // A bound: the headroom covers only the fitted part.
  CHECK(std::abs(double(four.bytes) -
                 (1000000 * 1.1 + 4 * shape.thread_scratch)) < 2);
  // float32 products pack into OpenBLAS's own buffers; a GPU's scratch does
  // not grow with the host's threads.
  w.dtype = "float32";
  SequenceShape dense;
  dense.stages = {{"attention", 1000000, "counted"}};
  dense.count_thread_scratch(w, "attention", 14, {{2560, 9728}});
  CHECK(dense.stages[0].products.empty());
  CHECK(dense.thread_scratch == 0);
  w.dtype = "bfloat16";
  w.backend = "cuda";
  dense.count_thread_scratch(w, "attention", 14, {{2560, 9728}});
  CHECK(dense.stages[0].products.empty());
  CHECK(dense.thread_scratch == 0);
}

TEST_CASE(
    "a stage's threads' scratch counts beside what is alive while its "
    "products run, and raises the op's peak only above the stage's own",
    "[calibration]") {
  TempDir dir;
  const auto path = dir.write("fam.calibration.toml", R"(
[denoise.cpu]
attention_factor = 1
feed_forward_factor = 1
fixed_bytes = 0
headroom = 1.0
)");
  const auto file = CalibrationFile::load(path);
  const SequenceModel* table = file.find_sequence("denoise", "cpu");
  REQUIRE(table);
  Workload w{"fam", "", "denoise", "cpu", "bfloat16", 1, 64, 64};
  w.matmul_kernel = CpuMatmulKernel::avx512_bf16;
  SequenceShape shape;
  shape.stages = {{"attention", 20000000, "counted"},
                  {"feed_forward", 10000000, "counted"}};
  // The attention peaks in its softmax, 15 MB above its products' (sizes
  // above any kernel's scratch: the host's kernel decides the scratch).
  shape.count_thread_scratch(w, "attention", 64, {{128, 64}}, 5000000.0);
  // The feed-forward peaks while its products run (alive: all of it).
  shape.count_thread_scratch(w, "feed_forward", 14, {{2560, 9728}});
  REQUIRE(shape.stages[0].products.size() == 1);
  REQUIRE(shape.stages[1].products.size() == 1);
  const double attention_scratch = shape.stages[0].products[0].thread_scratch;
  const double scratch = shape.stages[1].products[0].thread_scratch;
  CHECK(attention_scratch ==
        cpu_matmul_thread_scratch("bfloat16", 64, 128, 64, w.matmul_kernel));
  CHECK(scratch ==
        cpu_matmul_thread_scratch("bfloat16", 14, 2560, 9728, w.matmul_kernel));
  CHECK(shape.stages[0].products[0].alive == 5000000);
  CHECK(shape.stages[1].products[0].alive == 10000000);
  CHECK(shape.thread_scratch == scratch);  // the largest, for per-token tables
  // Never more alive than the stage's peak.
  SequenceShape capped = shape;
  capped.count_thread_scratch(w, "attention", 64, {{128, 64}}, 9e9);
  CHECK(capped.stages[0].products.back().alive == 20000000);
  const auto threads_term = [](const Estimate& e) {
    return std::find_if(e.terms.begin(), e.terms.end(),
                        [](const auto& t) { return t.name == "threads"; });
  };
  // One thread: the stages' own peaks; no threads term.
  Estimate e = table->estimate(w, shape);
  CHECK(e.bytes == 20000000);
  CHECK(threads_term(e) == e.terms.end());
  // Two threads: neither stage's products with the scratch reach the
  // attention's own peak.
  w.threads = 2;
  REQUIRE(10000000 + scratch < 20000000);
  e = table->estimate(w, shape);
  CHECK(e.bytes == 20000000);
  CHECK(threads_term(e) == e.terms.end());
  // Enough threads that the feed-forward with its scratch is the peak.
  w.threads = 2 + int(10000000 / scratch);
  e = table->estimate(w, shape);
  CHECK(std::abs(double(e.bytes) - (10000000 + w.threads * scratch)) < 2);
  REQUIRE(threads_term(e) != e.terms.end());
  CHECK(double(threads_term(e)->bytes) == w.threads * scratch);
  // The attention's products at many threads: what is alive then, not its
  // peak, carries the scratch.
  const int many = 2 + int(15000000 / attention_scratch);
  SequenceShape attention_only;
  attention_only.stages = {shape.stages[0]};
  attention_only.stages[0].name = "attention";
  TempDir dir2;
  const auto only = CalibrationFile::load(dir2.write("fam.calibration.toml", R"(
[denoise.cpu]
attention_factor = 1
fixed_bytes = 0
headroom = 1.0
)"));
  w.threads = many;
  e = only.find_sequence("denoise", "cpu")->estimate(w, attention_only);
  CHECK(std::abs(double(e.bytes) - (5000000 + many * attention_scratch)) < 2);
  CHECK_THAT(e.terms.front().detail, Catch::Contains("alive while its"));
  // A stage that is not there is a programming error, named.
  CHECK_THROWS_WITH(shape.count_thread_scratch(w, "mlp", 14, {{2560, 9728}}),
                    Catch::Contains("no stage mlp"));
}

TEST_CASE(
    "products beside fewer tensors with more scratch each are the peak at "
    "many threads (the tiny transformer's timestep MLP)",
    "[calibration]") {
  TempDir dir;
  const auto file = CalibrationFile::load(dir.write("fam.calibration.toml", R"(
[denoise.cpu]
rotary_factor = 1
fixed_bytes = 0
headroom = 1.0
)"));
  const SequenceModel* table = file.find_sequence("denoise", "cpu");
  REQUIRE(table);
  Workload w{"fam", "", "denoise", "cpu", "bfloat16", 1, 64, 64};
  w.matmul_kernel = CpuMatmulKernel::avx512_bf16;
  SequenceShape shape;
  shape.stages = {{"rotary", 400000, "counted"}};
  // The layer's projections beside all of the stage (inner 64), the
  // timestep's MLP beside a tenth of it (one row, inner 1024).
  shape.count_thread_scratch(w, "rotary", 192, {{64, 64}});
  shape.count_thread_scratch(w, "rotary", 1, {{256, 1024}, {1024, 64}}, 40000.0,
                             "the timestep's MLP");
  REQUIRE(shape.stages[0].products.size() == 2);
  const auto kernel = CpuMatmulKernel::avx512_bf16;
  const double layer =
      cpu_matmul_thread_scratch("bfloat16", 192, 64, 64, kernel);
  const double mlp = cpu_matmul_thread_scratch("bfloat16", 1, 1024, 64, kernel);
  REQUIRE(mlp > layer);
  CHECK(shape.thread_scratch == mlp);
  // Few threads: the layer's products beside the whole stage.
  w.threads = 2;
  Estimate e = table->estimate(w, shape);
  CHECK(std::abs(double(e.bytes) - (400000 + 2 * layer)) < 2);
  // Many: the MLP's scratch beside the fewer tensors outgrows them.
  w.threads = 16;
  REQUIRE(40000 + 16 * mlp > 400000 + 16 * layer);
  e = table->estimate(w, shape);
  CHECK(std::abs(double(e.bytes) - (40000 + 16 * mlp)) < 2);
  const auto threads =
      std::find_if(e.terms.begin(), e.terms.end(),
                   [](const EstimateTerm& t) { return t.name == "threads"; });
  REQUIRE(threads != e.terms.end());
  CHECK_THAT(threads->detail, Catch::Contains("the timestep's MLP: 1 rows"));
}

TEST_CASE(
    "quantized weights add the largest matrix dequantized in the dtype, "
    "outside the headroom, in both table forms",
    "[calibration]") {
  TempDir dir;
  const auto path = dir.write("fam.calibration.toml", R"(
[denoise.cpu]
attention_factor = 1
fixed_bytes = 0
headroom = 1.1

[text_encode.cpu]
bytes_per_token = 1
bytes_per_score = 0
headroom = 1.0
)");
  const auto file = CalibrationFile::load(path);
  Workload w{"fam", "", "denoise", "cpu", "bfloat16", 1, 64, 64};
  w.matmul_kernel = CpuMatmulKernel::avx512_bf16;
  SequenceShape shape;
  shape.stages = {{"attention", 1000000, "counted"}};
  // Dense weights: no buffer, whatever the matrix.
  const std::vector<SequenceShape::MatrixUse> modulation = {
      {18432, 3072, 4096, "img_mod.1"}};
  shape.count_weight_scratch(w, modulation);
  CHECK(shape.weight_scratch == 0);
  const Estimate dense =
      file.find_sequence("denoise", "cpu")->estimate(w, shape);
  CHECK(dense.bytes == 1100000);
  const auto weights_term = [](const Estimate& e) {
    return std::find_if(e.terms.begin(), e.terms.end(), [](const auto& t) {
      return t.name == "dequantized_weights";
    });
  };
  CHECK(weights_term(dense) == dense.terms.end());

  w.quantized = true;
  shape.count_weight_scratch(w, modulation);
  CHECK(shape.weight_scratch == 18432.0 * 3072 * 2);  // bfloat16, on the cpu
  CHECK_THAT(shape.weight_scratch_detail,
             Catch::Contains("18432 x 3072 (img_mod.1)"));
  const Estimate q = file.find_sequence("denoise", "cpu")->estimate(w, shape);
  const auto term = weights_term(q);
  REQUIRE(term != q.terms.end());
  CHECK(double(term->bytes) == shape.weight_scratch);
  // An exact count: the headroom covers only the fitted part.
  CHECK(std::abs(double(q.bytes) - (1000000 * 1.1 + shape.weight_scratch)) < 2);
  CHECK(q.terms.back().name == "dequantized_weights");
  CHECK_THAT(w.describe(), Catch::Contains("quantized weights"));

  // The per-token form adds it the same way.
  SequenceShape tokens;
  tokens.tokens = 10;
  tokens.width = 100;
  tokens.element = 2;
  tokens.count_weight_scratch(w, {{64, 32, 10, "m"}});
  const Estimate per_token =
      file.find_sequence("text_encode", "cpu")->estimate(w, tokens);
  CHECK(per_token.bytes == 10 * 100 * 2 + 64 * 32 * 2);

  // Elsewhere the tensor-operation dequantization's float32 temporaries
  // join the buffer (not measured: said so).
  // On the cpu a matrix over a few rows is multiplied from its blocks: the
  // largest of the others is the buffer.
  const std::vector<SequenceShape::MatrixUse> few = {
      {300, 10, double(kMaxRowsFromBlocks), "modulation"},
      {100, 10, double(kMaxRowsFromBlocks) + 1, "m"},
      {20, 10, 1000, "small"}};
  shape.count_weight_scratch(w, few);
  CHECK(shape.weight_scratch == 100.0 * 10 * 2);
  CHECK_THAT(shape.weight_scratch_detail, Catch::Contains("(m)"));
  shape.count_weight_scratch(w, {{300, 10, 1, "modulation"}});
  CHECK(shape.weight_scratch == 0);
  // Elsewhere every matrix is dequantized, the tensor-operation
  // dequantization's float32 temporaries with it (not measured: said so).
  w.backend = "cuda";
  shape.count_weight_scratch(w, few);
  CHECK(shape.weight_scratch == 300.0 * 10 * (2 * 4 + 2 * 2));
  CHECK_THAT(shape.weight_scratch_detail, Catch::Contains("not measured"));
}

TEST_CASE(
    "the cpu matrix-product scratch bound covers what oneDNN took per thread",
    "[calibration]") {
  // (rows, inner, outer, bytes per thread) measured through the tracking
  // allocator around at::linear in bfloat16 on libtorch 1.13.
  struct Measured {
    double rows, inner, outer, bytes;
  };
  const Measured measured[] = {
      {16, 16, 512, 4864},         {16, 64, 512, 8960},
      {16, 256, 512, 33536},       {1, 512, 512, 66304},
      {256, 640, 512, 131968},     {2048, 1024, 512, 131968},
      {16, 2560, 4096, 136064},    {1000, 2560, 9728, 195968},
      {256, 1100, 512, 197504},    {2048, 20480, 512, 197504},
      {288, 10240, 3840, 168832},  {1024, 4096, 512, 1197056},
      {16384, 8192, 512, 1197056}, {1024, 4096, 3072, 1721344},
      {2048, 12288, 3072, 197504}, {1000, 8192, 512, 195968}};
  for (const auto& m : measured) {
    INFO(m.rows << " rows x " << m.inner << " inner x " << m.outer);
    const double bound = cpu_matmul_thread_scratch(
        "bfloat16", m.rows, m.inner, m.outer, CpuMatmulKernel::avx512_bf16);
    CHECK(bound >= m.bytes);
    CHECK(bound <= m.bytes * 1.25 + 4096);  // a bound, not a guess
  }
  CHECK(cpu_matmul_thread_scratch("float32", 1024, 4096, 512) == 0);
  CHECK(cpu_matmul_thread_scratch("bfloat16", 0, 4096, 512) == 0);
}

TEST_CASE(
    "the cpu matrix-product scratch bound covers what each oneDNN kernel took "
    "per thread, and an unmeasured kernel gets the largest",
    "[calibration]") {
  // (rows, inner, outer, most bytes per thread past the first at 2, 4, 8 or
  // 16 threads), at::linear in bfloat16 on libtorch 1.13 (oneDNN 2.6) on an
  // AMX machine (Xeon, Sapphire Rapids), one kernel at a time
  // (ONEDNN_MAX_CPU_ISA): a sample of each regime, the largest among them.
  struct Measured {
    double rows, inner, outer, bytes;
  };
  const Measured amx[] = {
      {16, 16, 512, 4608},        {68, 256, 512, 37376},
      {4096, 1024, 3072, 135680}, {256, 3840, 512, 802304},
      {1024, 4096, 512, 875008},  {1, 18944, 3072, 904123},
      {68, 68, 16, 23278},        {128, 33, 512, 160768},
      {128, 300, 3072, 275456},   {4096, 300, 3072, 472064},
      {256, 513, 512, 1160192},   {1024, 1025, 512, 2570649},
      {256, 4164, 64, 1181549},   {16, 4164, 3072, 1148854}};
  for (const auto& m : amx) {
    INFO("amx: " << m.rows << " rows x " << m.inner << " inner x " << m.outer);
    CHECK(cpu_matmul_thread_scratch("bfloat16", m.rows, m.inner, m.outer,
                                    CpuMatmulKernel::amx) >= m.bytes);
  }
  // A float32 copy of the output per thread.
  const Measured gemm_jit[] = {{1, 1024, 1024, 4224},
                               {68, 256, 768, 209024},
                               {2304, 1024, 1024, 9437312},
                               {68, 2560, 9728, 2646144}};
  for (const auto& m : gemm_jit) {
    INFO("gemm:jit: " << m.rows << " rows x " << m.inner << " inner x "
                      << m.outer);
    const double bound = cpu_matmul_thread_scratch(
        "bfloat16", m.rows, m.inner, m.outer, CpuMatmulKernel::avx512);
    CHECK(bound >= m.bytes);
    CHECK(bound <= m.bytes * 1.25 + 4096);
  }
  for (const auto& m : gemm_jit)
    CHECK(cpu_matmul_thread_scratch("bfloat16", m.rows, m.inner, m.outer,
                                    CpuMatmulKernel::other) >= m.bytes);
  CHECK(cpu_matmul_thread_scratch("bfloat16", 256, 513, 512,
                                  CpuMatmulKernel::other) >= 1160192);
}

TEST_CASE("the bfloat16 matrix-product kernel is the one oneDNN picks",
          "[calibration]") {
  const CpuMatmulFeatures none;
  const CpuMatmulFeatures skylake{true, false, false};
  const CpuMatmulFeatures zen4{true, true, false};
  const CpuMatmulFeatures sapphire_rapids{true, true, true};
  CHECK(choose_cpu_matmul_kernel(none, "") == CpuMatmulKernel::other);
  CHECK(choose_cpu_matmul_kernel(skylake, "") == CpuMatmulKernel::avx512);
  CHECK(choose_cpu_matmul_kernel(zen4, "") == CpuMatmulKernel::avx512_bf16);
  CHECK(choose_cpu_matmul_kernel(sapphire_rapids, "") == CpuMatmulKernel::amx);
  CHECK(choose_cpu_matmul_kernel(sapphire_rapids, "all") ==
        CpuMatmulKernel::amx);
  // ONEDNN_MAX_CPU_ISA caps it.
  CHECK(choose_cpu_matmul_kernel(sapphire_rapids, "AVX512_CORE_BF16") ==
        CpuMatmulKernel::avx512_bf16);
  CHECK(choose_cpu_matmul_kernel(sapphire_rapids, "avx512_core") ==
        CpuMatmulKernel::avx512);
  CHECK(choose_cpu_matmul_kernel(sapphire_rapids, "AVX512_CORE_VNNI") ==
        CpuMatmulKernel::avx512);
  CHECK(choose_cpu_matmul_kernel(sapphire_rapids, "AVX2") ==
        CpuMatmulKernel::other);
  CHECK(choose_cpu_matmul_kernel(zen4, "AVX512_CORE_AMX") ==
        CpuMatmulKernel::avx512_bf16);
}

TEST_CASE("malformed stage factors name the file, line and key",
          "[calibration]") {
  TempDir dir;
  const std::pair<const char*, const char*> cases[] = {
      {"[denoise.cpu]\nattention_factor = 0\n",
       ":2: key 'denoise.cpu.attention_factor': must be a positive number"},
      {"[denoise.cpu]\nattention_factor = \"1\"\n",
       "denoise.cpu.attention_factor': must be a positive number"},
      {"[denoise.cpu]\nattention_factor = 1\nbytes_per_pixel = 2\n",
       "unknown key; known here: bytes_per_token, bytes_per_score, "
       "fixed_bytes, arch, calibrated, source, headroom, STAGE_factor"},
      {"[denoise.cpu]\n_factor = 1\n", "denoise.cpu._factor': unknown key"},
  };
  for (const auto& [text, expected] : cases) {
    const auto path = dir.write("bad.calibration.toml", text);
    INFO(text);
    CHECK_THROWS_WITH(CalibrationFile::load(path),
                      Catch::Contains(path) && Catch::Contains(expected));
  }
}

TEST_CASE("a VAE table measured in several dtypes has a float32 part",
          "[calibration]") {
  TempDir dir;
  const auto path = dir.write("fam.calibration.toml", R"(
[vae_decode.cpu]
bytes_per_pixel = 800
float32_bytes_per_pixel = 130
calibrated = true
)");
  const auto file = CalibrationFile::load(path);
  const PixelLinearModel* decode = file.find("vae_decode", "cpu");
  REQUIRE(decode);
  Workload w{"fam", "", "vae_decode", "cpu", "bfloat16", 1, 256, 128};
  const Estimate e = decode->estimate(w);
  // 800 x 32768 px x 2 B + 130 x 32768 px x 4 B.
  CHECK(e.bytes == 800ull * 32768 * 2 + 130ull * 32768 * 4);
  REQUIRE(e.terms.size() == 2);
  CHECK(e.terms[1].constant == "float32_bytes_per_pixel");
  CHECK(e.terms[1].basis == 32768.0 * 4);
  w.dtype = "float32";
  CHECK(decode->estimate(w).bytes == (800ull + 130) * 32768 * 4);
  const auto bad = dir.write("bad.toml",
                             "[vae_decode.cpu]\nbytes_per_pixel = 1\n"
                             "float32_bytes_per_pixel = -1\n");
  CHECK_THROWS_WITH(CalibrationFile::load(bad),
                    Catch::Contains("float32_bytes_per_pixel': must be a "
                                    "number of at least 0"));
}

TEST_CASE(
    "an architecture's VAE table and the attention term over latent tokens",
    "[calibration]") {
  TempDir dir;
  const auto path = dir.write("fam.calibration.toml", R"(
[vae_decode.cpu]
bytes_per_pixel = 600
calibrated = true
source = "published"

[vae_decode.cpu.tiny]
bytes_per_pixel = 50
headroom = 1.05
attention_fixed_bytes = 1000000
bytes_per_latent_score = 2
calibrated = true
source = "tiny"
)");
  const auto file = CalibrationFile::load(path);
  REQUIRE(file.find("vae_decode", "cpu"));
  CHECK(file.find("vae_decode", "cpu")->bytes_per_pixel == 600);
  const PixelLinearModel* tiny = file.find("vae_decode", "cpu", "tiny");
  REQUIRE(tiny);
  CHECK(tiny->arch == "tiny");
  CHECK_FALSE(file.find("vae_decode", "cpu", "huge"));

  Workload w{"fam", "", "vae_decode", "cpu", "float32", 1, 64, 64};
  w.arch = "tiny";
  // 64x64 px: 64 latent tokens; the convolutions' 50 x 4096 x 4 = 819200 B
  // against (1e6 + 2 x 64^2 x 4) x 1.05 = 1084406 B: the attention.
  Estimate e = tiny->estimate(w);
  CHECK(e.bytes == 1084406);
  REQUIRE(e.terms.size() == 1);
  CHECK(e.terms[0].name == "attention scores");
  CHECK_THAT(e.source, Catch::Contains("[vae_decode.cpu.tiny]: tiny"));
  // 32x32 px: 16 tokens; 50 x 1024 x 4 = 204800 B against 1052150 B.
  w.width = w.height = 32;
  CHECK(tiny->estimate(w).bytes == 1052150);
  // Where the convolutions are larger they are the estimate, as one term:
  // 8x4096 px is 512 tokens, (1e6 + 2 x 512^2 x 4) x 1.05 = 3252010 B
  // against 50 x 32768 x 4 = 6553600 B.
  w.height = 8;
  w.width = 4096;
  e = tiny->estimate(w);
  CHECK(e.bytes == 6553600);
  REQUIRE(e.terms.size() == 1);
  CHECK(e.terms[0].name == "activations");
  w.height = 64;
  w.width = 64;
  // Without the attention keys, only the activations count.
  const auto flat =
      dir.write("flat.toml", "[vae_decode.cpu]\nbytes_per_pixel = 50\n");
  CHECK(CalibrationFile::load(flat)
            .find("vae_decode", "cpu")
            ->estimate(w)
            .bytes == 819200);

  // The registered estimator picks the workload's architecture's table.
  Registrar registrar("fam", std::filesystem::path(dir.path()) / "fam.so");
  register_calibration_estimators(registrar, file, "fam");
  Registry registry;
  registry.commit(std::move(registrar), {"fam", "1", "", "", {}});
  w.arch = "tiny";
  CHECK(registry.estimate(w).bytes == 1084406);
  w.arch = "default";
  CHECK(registry.estimate(w).bytes == 600ull * 4096 * 4);

  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"[vae_decode.cpu]\nbytes_per_pixel = 1\n[vae_decode.cpu.tiny]\n"
       "calibrated = true\n",
       "vae_decode.cpu.tiny.bytes_per_pixel': is missing"},
      {"[vae_decode.cpu]\nbytes_per_pixel = 1\n[vae_decode.cpu.tiny]\n"
       "bytes_per_pixel = 1\nbytes_per_latent_score = -2\n",
       ":5: key 'vae_decode.cpu.tiny.bytes_per_latent_score'"},
      {"[vae_decode.cpu]\nbytes_per_pixel = 1\n[vae_decode.cpu.tiny.x]\n"
       "bytes_per_pixel = 1\n",
       "holds numbers only"},
  };
  for (const auto& c : cases) {
    const auto bad = dir.write("bad.calibration.toml", c.text);
    INFO(c.text);
    CHECK_THROWS_WITH(CalibrationFile::load(bad),
                      Catch::Contains(bad) && Catch::Contains(c.expected));
  }
}
