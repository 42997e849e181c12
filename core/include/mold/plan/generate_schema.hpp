#pragma once
/// The fields of a generate request, once: name, type, range, help and where
/// each lives in GenerateSettings. `mold run`'s options and `mold serve`'s JSON
/// parser are made from this table, and every transport and pipeline checks a
/// request with check_generate_settings(); a pipeline adds only its family's
/// limits (a size multiple, its own minimum steps). A new field is a member of
/// GenerateSettings and a row here. Torch-free.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "mold/plan/generate_settings.hpp"

namespace mold {

enum class FieldKind {
  text,   ///< a UTF-8 string without NUL bytes
  whole,  ///< a whole number from low to high
  real,   ///< a finite number from low to high
  seed,   ///< a whole number from 0 to 2^64 - 1
};

struct GenerateField {
  std::string_view name;  ///< the JSON field: "negative_prompt"
  std::string_view flag;  ///< mold run's option: "negative"
  FieldKind kind = FieldKind::text;
  double low = 0;   ///< whole and real: the smallest value accepted
  double high = 0;  ///< whole and real: the largest
  std::string_view help;
  bool required = false;  ///< prompt: no default
  /// Where the value lives. An absent optional or a 0 (width, height, steps)
  /// means the model's default.
  std::variant<std::string GenerateSettings::*,
               std::optional<std::string> GenerateSettings::*,
               int GenerateSettings::*,
               std::optional<double> GenerateSettings::*,
               std::uint64_t GenerateSettings::*>
      member;

  /// "from 16 to 16384", "from 0 to 100", "from 0 to 18446744073709551615".
  std::string range_text() const;
};

/// Every field, in the order help texts list them.
const std::vector<GenerateField>& generate_fields();

/// A text field's value; nullptr when it is an optional one left unset.
const std::string* text_value(const GenerateSettings& settings,
                              const GenerateField& field);
/// Sets a text field (an optional one becomes set, to `value`).
void set_text(GenerateSettings& settings, const GenerateField& field,
              std::string value);

/// The field named `name` (JSON name), or nullptr.
const GenerateField* find_generate_field(std::string_view name);

/// The field names joined by ", " (for "is not a field of ..." messages).
std::string generate_field_names();

/// Checks what one field cannot: every set field is in its range (a whole
/// field of 0 is unset), the texts hold no NUL byte, and the batch's last seed
/// (seed + batch - 1) does not pass 2^64 - 1. Throws InvalidArgument naming
/// the field as settings.naming says ("--width", "width") and the value.
void check_generate_settings(const GenerateSettings& settings);

}  // namespace mold
