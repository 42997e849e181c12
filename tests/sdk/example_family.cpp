// A third-party family plugin: one estimator from a calibration file shipped
// beside it, one written in code, and a classifier.
#include <mold/estimate/calibration.hpp>
#include <mold/oom/oom_text.hpp>
#include <mold/plugin/data_files.hpp>
#include <mold/plugin/plugin.hpp>

namespace {

std::optional<mold::OomReport> classify_example(
    const mold::ErrorContext& error) {
  if (error.message.find("EXAMPLE_OOM") == std::string::npos)
    return std::nullopt;
  mold::OomReport report;
  report.backend = "example";
  report.origin = error.origin;
  report.raw_message = error.message;
  report.message = mold::strip_backtrace(error.message);
  report.requested = mold::bytes_after(error.message, "needs ");
  return report;
}

void register_all(mold::Registrar& registrar) {
  mold::register_calibration_estimators(
      registrar, mold::load_calibration(registrar), "example_family");
  // Denoising working memory: a fixed 1 GiB per image, on any backend.
  registrar.add_estimator(
      {"example_family", "denoise", "*"}, [](const mold::Workload& w) {
        mold::Estimate e;
        e.bytes = mold::Bytes(w.batch) * mold::kGiB;
        e.terms.push_back({"latents", e.bytes, "1 GiB x batch"});
        e.source = "example_family.cpp";
        return e;
      });
  registrar.add_classifier("example", classify_example);
}

}  // namespace

MOLD_PLUGIN("example_family", "1.2.3", register_all)
