#include "mold/estimate/attention_chunk.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace mold {

AttentionChunk attention_chunk(long batch, long heads, long keys) {
  AttentionChunk c;
  c.batch = std::max(batch, 1L);
  c.heads = std::max(heads, 1L);
  c.keys = std::max(keys, 1L);
  c.rows = std::clamp(kAttentionScoreBudget / (c.batch * c.heads * c.keys), 1L,
                      c.keys);
  return c;
}

std::string AttentionChunk::describe() const {
  return fmt::format("{} query rows x {} keys x {} heads x batch {} scores",
                     rows, keys, heads, batch);
}

}  // namespace mold
