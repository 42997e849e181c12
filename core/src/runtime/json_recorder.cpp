#include "mold/runtime/json_recorder.hpp"

#include <nlohmann/json.hpp>

#include "event_json_detail.hpp"

namespace mold {

using Json = nlohmann::json;

struct JsonRecorder::State {
  Json document = {
      {"schema", 1}, {"phases", Json::array()}, {"images", Json::array()}};
};

JsonRecorder::JsonRecorder() : state_(std::make_unique<State>()) {}
JsonRecorder::~JsonRecorder() = default;

void JsonRecorder::on_phase(const PhaseEvent& e) {
  if (e.stage == PhaseStage::start || e.stage == PhaseStage::step) return;
  state_->document["phases"].push_back(detail::phase_event_object(e));
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
