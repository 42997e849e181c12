#include "mold/runtime/json_recorder.hpp"

#include <nlohmann/json.hpp>

namespace mold {

using Json = nlohmann::json;

struct JsonRecorder::State {
  Json document = {
      {"schema", 1}, {"phases", Json::array()}, {"images", Json::array()}};
};

namespace {

Json memory(const MemoryStats& m) {
  return {{"total", m.total},
          {"free", m.free},
          {"allocated", m.allocated},
          {"reserved", m.reserved},
          {"peak_allocated", m.peak_allocated},
          {"peak_reserved", m.peak_reserved},
          {"host_rss", m.host_rss},
          {"device_used", m.device_used},
          {"inactive_split", m.inactive_split},
          {"alloc_retries", m.alloc_retries},
          {"ooms", m.ooms}};
}

}  // namespace

JsonRecorder::JsonRecorder() : state_(std::make_unique<State>()) {}
JsonRecorder::~JsonRecorder() = default;

void JsonRecorder::on_phase(const PhaseEvent& e) {
  if (e.stage == PhaseStage::start || e.stage == PhaseStage::step) return;
  Json residency = Json::array();
  for (const auto& entry : e.residency)
    residency.push_back({{"component", entry.name},
                         {"residency", std::string(to_string(entry.residency))},
                         {"bytes", entry.bytes},
                         {"loads", entry.loads}});
  Json phase = {{"image", e.image},
                {"phase", e.phase},
                {"component", e.component},
                {"status", std::string(to_string(e.stage))},
                {"seconds", e.seconds},
                {"steps", e.steps},
                {"workload",
                 {{"op", e.workload.op},
                  {"backend", e.workload.backend},
                  {"dtype", e.workload.dtype},
                  {"arch", e.workload.arch},
                  {"batch", e.workload.batch},
                  {"width", e.workload.width},
                  {"height", e.workload.height},
                  {"tokens", e.workload.tokens}}},
                {"estimate_bytes", e.estimate.bytes},
                {"estimate_source", e.estimate.source},
                {"before", memory(e.before)},
                {"after", memory(e.after)},
                {"parked", e.parked},
                {"residency", residency}};
  if (!e.detail.empty()) phase["detail"] = e.detail;
  if (!e.error.empty()) phase["error"] = e.error;
  state_->document["phases"].push_back(std::move(phase));
}

void JsonRecorder::on_image(const ImageRecord& image) {
  state_->document["images"].push_back({{"image", image.image},
                                        {"seed", image.seed},
                                        {"path", image.path.string()},
                                        {"width", image.width},
                                        {"height", image.height},
                                        {"seconds", image.seconds}});
}

void JsonRecorder::set_field(const std::string& key,
                             const std::string& json_text) {
  state_->document[key] = Json::parse(json_text);
}

std::string JsonRecorder::dump() const {
  return state_->document.dump(2, ' ', false, Json::error_handler_t::replace);
}

}  // namespace mold
