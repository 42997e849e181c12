#include "openai_models.hpp"

namespace mold_cli {

using Json = nlohmann::json;

Json openai_model(const ServedModel& model) {
  return {{"id", model.id},
          {"object", "model"},
          {"created", 0},
          {"owned_by", model.family}};
}

Json openai_model_list(const std::vector<ServedModel>& models) {
  Json data = Json::array();
  for (const auto& model : models) data.push_back(openai_model(model));
  return {{"object", "list"}, {"data", std::move(data)}};
}

std::optional<ServedModel> find_served(const std::vector<ServedModel>& models,
                                       const std::string& id) {
  for (const auto& model : models)
    if (model.id == id) return model;
  return std::nullopt;
}

}  // namespace mold_cli
