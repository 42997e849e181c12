#pragma once
/// Math attention in chunks of query rows: the transformers compute at most
/// kAttentionScoreBudget scores (batch x heads x rows x keys) at once, so
/// their working memory stops growing with the square of the tokens. The
/// models and their estimates share the rule. Torch-free.

#include <string>

namespace mold {

inline constexpr long kAttentionScoreBudget = 1L << 25;

/// One chunk of attention over `keys` keys.
struct AttentionChunk {
  long batch = 1, heads = 1, keys = 1;
  long rows = 1;  ///< query rows: as many as the budget holds, 1 to keys

  double scores() const {
    return double(batch) * double(heads) * double(rows) * double(keys);
  }
  /// "288 query rows x 288 keys x 24 heads x batch 2 scores"
  std::string describe() const;
};

AttentionChunk attention_chunk(long batch, long heads, long keys);

}  // namespace mold
