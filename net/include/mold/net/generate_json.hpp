#pragma once
/// A generate request's fields as JSON, both ways, made from the schema
/// (mold/plan/generate_schema.hpp): `mold serve` reads them, `mold run` and
/// molddiag's remote driver write them. The request-level fields (model, tiny,
/// images) are the routes'.

#include <cstddef>
#include <nlohmann/json.hpp>

#include "mold/plan/generate_settings.hpp"

namespace mold::net {

/// Reads every schema field present in `body` (a JSON object) into `settings`.
/// A field of the wrong type, null, out of its range, a text longer than
/// `max_text_bytes` or with a NUL byte, is an InvalidArgument whose message
/// starts with the field's name ("width: should be a whole number from 16 to
/// 16384, not 0"). Fields not in the schema are left to the caller.
void read_generate_fields(const nlohmann::json& body,
                          GenerateSettings& settings,
                          std::size_t max_text_bytes);

/// The fields of `settings` that differ from their defaults (a 0 size or
/// step count, an absent guidance, an empty negative prompt, a batch of 1 are
/// left out), with the seed of image `image` (seed + image). The prompt is
/// always written.
nlohmann::json generate_fields_json(const GenerateSettings& settings,
                                    int image = 0);

}  // namespace mold::net
