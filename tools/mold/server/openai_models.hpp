#pragma once
// GET /v1/models and /v1/models/{id}, the OpenAI Models API's shape over the
// models this server can run (docs/http-api.md, "OpenAI-compatible images"):
// OpenAI's clients, and the apps built on them, list models before they ask
// for images.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model_pool.hpp"

namespace mold_cli {

/// {"id", "object": "model", "created": 0, "owned_by": family}: mold does not
/// know when a model was made, and says so with 0.
nlohmann::json openai_model(const ServedModel& model);

/// {"object": "list", "data": [model, ...]}.
nlohmann::json openai_model_list(const std::vector<ServedModel>& models);

/// The model whose id is `id`; none when this server cannot run it.
std::optional<ServedModel> find_served(const std::vector<ServedModel>& models,
                                       const std::string& id);

}  // namespace mold_cli
