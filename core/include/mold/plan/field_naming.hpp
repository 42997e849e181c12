#pragma once
/// How a message names a generate request's fields: by mold run's flags
/// ("--width") or by the JSON paths of an HTTP request ("width", "images[2]").
/// A rule is written once, with field_label() where it names a field; the
/// transport that received the request says which naming its messages use
/// (GenerateSettings::naming). Torch-free.

#include <string>
#include <string_view>

namespace mold {

enum class FieldNaming {
  flags,  ///< mold run, molddiag: "--width", "--image"
  json,   ///< mold serve: "width", "images[2]"
};

/// The field at JSON path `path` as `naming` names it. The request schema's
/// fields (generate_schema.hpp) by their flag or JSON name ("negative_prompt":
/// "--negative"); the request's own: "images" ("--image"), "images[i]"
/// ("--image #i+1", counting from 1 as the command line is read), "tiny",
/// "model" ("MODEL"). A path mold does not know is returned as it is.
std::string field_label(std::string_view path, FieldNaming naming);

}  // namespace mold
