#pragma once
// Unicode Normalization Form C for the tokenizer's normalizer (ICU), with a
// fast path for the common case of text that is ASCII or already composed.
// Private to mold_torch.

#include <string>
#include <string_view>

namespace mold {

/// Whether `text` is in NFC. `text` must be valid UTF-8.
bool is_nfc(std::string_view text);

/// `text` (valid UTF-8) in NFC: `text` itself when it already is.
std::string to_nfc(std::string_view text);

}  // namespace mold
