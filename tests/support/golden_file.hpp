#pragma once
// The golden tensor files of tests/data/golden/ (made by make_golden.py there
// with the reference implementations): a module's weights under their
// checkpoint names, the inputs as golden.input.<case>.<name>, the reference's
// outputs as golden.output.<case>.<name>, the reference and its config in the
// metadata. An embedding table of the real vocabulary is stored as the rows
// the cases use, with their row numbers as golden.rows_of.<name>; the other
// rows were zero when the reference ran, and load_into() rebuilds the table so.

#include <algorithm>
#include <map>
#include <mold/model/module.hpp>
#include <mold/tensor/safetensors.hpp>
#include <mold/tensor/weight_set.hpp>
#include <string>
#include <utility>
#include <vector>

#include "support/aten_for_tests.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

namespace mold::test {

/// Float32 on both sides: the reference and mold differ only in the order of
/// their sums (~1e-6 relative over these tiny models); 1e-5 leaves room for
/// another BLAS and still catches any difference of convention.
inline constexpr double kGoldenTolerance = 1e-5;

/// |a - b| / |b| over all elements (L2).
inline double golden_relative_l2(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor x = a.to(at::kDouble), y = b.to(at::kDouble);
  return (x - y).norm().item<double>() /
         std::max(y.norm().item<double>(), 1e-30);
}

class GoldenFile {
 public:
  /// tests/data/golden/`name`.safetensors.
  explicit GoldenFile(const std::string& name)
      : file_(SafetensorsFile::open(std::string(kDataDir) + "/golden/" + name +
                                    ".safetensors")) {}

  /// A copy of golden.input.`test_case`.`name`.
  at::Tensor input(const std::string& test_case,
                   const std::string& name) const {
    return tensor("golden.input." + test_case + "." + name);
  }
  /// A copy of golden.output.`test_case`.`name`.
  at::Tensor output(const std::string& test_case,
                    const std::string& name) const {
    return tensor("golden.output." + test_case + "." + name);
  }
  bool has_input(const std::string& test_case, const std::string& name) const {
    return file_.contains("golden.input." + test_case + "." + name);
  }
  /// "reference" (repo, commit, file, class) and "config", as JSON text.
  std::string metadata(const std::string& key) const {
    const auto it = file_.metadata().find(key);
    return it == file_.metadata().end() ? std::string() : it->second;
  }

  /// Every parameter of `module` from the file's weights, loaded as a
  /// checkpoint is (Module::load, with the module's stored prefix) and
  /// strictly: the file must hold exactly the module's tensors. An embedding
  /// stored as some of its rows is rebuilt at the module's full shape, the
  /// other rows zero.
  void load_into(Module& module) const {
    std::vector<std::pair<std::string, at::Tensor>> weights;
    for (const std::string& name : file_.names()) {
      if (name.rfind("golden.", 0) == 0) continue;
      at::Tensor t = file_.tensor(name);
      const std::string rows_name = "golden.rows_of." + name;
      if (file_.contains(rows_name)) {
        const at::Tensor rows = file_.tensor(rows_name);
        at::Tensor full = at::zeros(parameter_shape(module, name), t.options());
        full.index_copy_(0, rows, t);
        t = full;
      }
      weights.emplace_back(name, t);
    }
    TempDir dir;
    const std::string path = dir.path() + "/weights.safetensors";
    save_safetensors(path, weights);
    const WeightSet set = WeightSet::open(path);
    LoadOptions options;
    options.prefix = module.stored_prefix(set);
    options.strict = true;
    const LoadReport report =
        module.load(set, c10::Device(c10::kCPU), at::kFloat, options);
    REQUIRE(report.tensors == module.parameters().size());
  }

 private:
  at::Tensor tensor(const std::string& name) const {
    INFO(name);
    REQUIRE(file_.contains(name));
    return file_.tensor(name);
  }

  /// The declared shape of the parameter stored as `stored` (the module's
  /// name, or it after a prefix such as "model.").
  static std::vector<int64_t> parameter_shape(const Module& module,
                                              const std::string& stored) {
    for (const auto& [name, t] : module.parameters()) {
      if (stored.size() < name.size() ||
          stored.compare(stored.size() - name.size(), name.size(), name) != 0)
        continue;
      if (stored.size() == name.size() ||
          stored[stored.size() - name.size() - 1] == '.')
        return t.sizes().vec();
    }
    FAIL("no parameter of " << module.describe() << " is stored as " << stored);
    return {};
  }

  SafetensorsFile file_;
};

}  // namespace mold::test
