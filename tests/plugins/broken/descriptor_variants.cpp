// One broken plugin descriptor per build, chosen by MOLD_TEST_CASE: each
// exercises one check of the loader.
#include <mold/plugin/plugin.hpp>
#include <stdexcept>

namespace {
void register_nothing(mold::Registrar&) {}
void register_throws(mold::Registrar&) {
  throw std::runtime_error(
      "calibration table 'vae_decode.cuda' is corrupt (test plugin)");
}
void register_throws_int(mold::Registrar&) {
  throw 42;  // not a std::exception
}
void register_duplicate(mold::Registrar& r) {
  // Its own family (which must not survive the failed commit) and a key
  // qwen_image owns.
  mold::ModelFamily family;
  family.name = "duplicate_test_family";
  r.add_family(family);
  r.add_estimator({"qwen_image", "vae_decode", "cuda"},
                  [](const mold::Workload&) { return mold::Estimate{}; });
}
}  // namespace

#define TEST_CASE_null_info 1
#define TEST_CASE_api_version_2 2
#define TEST_CASE_struct_too_small 3
#define TEST_CASE_build_id_mismatch 4
#define TEST_CASE_null_register_all 5
#define TEST_CASE_register_throws 6
#define TEST_CASE_duplicate_estimator 7
#define TEST_CASE_entry_point_throws 8
#define TEST_CASE_empty_name 9
#define TEST_CASE_register_throws_int 10
#define CASE_ID_(name) TEST_CASE_##name
#define CASE_ID(name) CASE_ID_(name)

extern "C" MOLD_PLUGIN_EXPORT const mold_plugin_info* mold_get_plugin_info() {
  constexpr int kCase = CASE_ID(MOLD_TEST_CASE);
  if (kCase == 8)
    throw std::runtime_error("the descriptor could not be built (test plugin)");
  static const mold_plugin_info info{
      kCase == 2 ? 2u : MOLD_PLUGIN_API_VERSION,
      kCase == 3 ? 8u : static_cast<std::uint32_t>(sizeof(mold_plugin_info)),
      kCase == 9 ? "" : "test_" MOLD_DETAIL_STRINGIFY(MOLD_TEST_CASE),
      "0.0.1",
      kCase == 4 ? "mold-api 1; libstdc++ cxx11abi=0; torch 0.4"
                 : MOLD_BUILD_ID,
      kCase == 5    ? nullptr
      : kCase == 6  ? &register_throws
      : kCase == 7  ? &register_duplicate
      : kCase == 10 ? &register_throws_int
                    : &register_nothing};
  return kCase == 1 ? nullptr : &info;
}
