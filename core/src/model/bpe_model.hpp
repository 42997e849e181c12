#pragma once
// The BPE model of a byte-level tokenizer: a piece of text starts as one
// symbol per byte and adjacent symbols are merged, lowest merge rank first
// (leftmost first among equal ranks), until no adjacent pair has a merge.
// Words already seen are answered from a bounded cache. Private to
// mold_torch.

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mold {

class BpeModel {
 public:
  /// A merge: the pair (left, right) becomes `merged`; rank = its position.
  struct Merge {
    std::int32_t left;
    std::int32_t right;
    std::int32_t merged;
  };

  /// `byte_ids[b]`: the id of byte b's one-character token. `merges` in rank
  /// order (a repeated pair takes its last rank, as Hugging Face's
  /// tokenizers does). `whole_words`: the
  /// vocabulary, byte-level text -> id, consulted before merging when
  /// `ignore_merges` (a piece that is a token is that token).
  BpeModel(const std::array<std::int32_t, 256>& byte_ids,
           const std::vector<Merge>& merges,
           const std::unordered_map<std::string, std::int32_t>* whole_words,
           bool ignore_merges);

  /// Appends the ids of `piece` (raw bytes) to `out`. Thread-safe.
  void encode(std::string_view piece, std::vector<std::int32_t>& out) const;

  /// Words the cache keeps at most; 0 turns it off (and empties it).
  void set_cache_capacity(std::size_t words);

 private:
  /// A pair's merge: its rank and the merged token; rank -1 when the pair
  /// has none.
  struct Rank {
    std::int32_t rank;
    std::int32_t merged;
  };
  static std::uint64_t key(std::int32_t left, std::int32_t right) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left))
            << 32) |
           static_cast<std::uint32_t>(right);
  }
  /// The merge of (left, right): an open-addressing table (linear probing,
  /// at most half full), the lookup BPE spends most of its time in.
  Rank find(std::int32_t left, std::int32_t right) const;
  void insert(std::uint64_t key, Rank rank);
  /// Pieces of up to kShortPiece bytes merge in arrays on the stack, longer
  /// ones with a heap; both take the lowest (rank, position) pair each step.
  void merge_short(std::string_view piece,
                   std::vector<std::int32_t>& out) const;
  void merge_long(std::string_view piece, std::vector<std::int32_t>& out) const;
  static constexpr std::size_t kShortPiece = 32;

  std::array<std::int32_t, 256> byte_ids_;
  struct Slot {
    std::uint64_t key;
    Rank rank;
  };
  std::vector<Slot> slots_;
  std::uint64_t slot_mask_ = 0;
  const std::unordered_map<std::string, std::int32_t>* whole_words_;
  bool ignore_merges_;

  /// Pieces longer than this are not cached.
  static constexpr std::size_t kMaxCachedPiece = 64;
  mutable std::mutex cache_mutex_;
  std::size_t cache_capacity_ = 65536;
  /// piece -> (offset, count) in cache_ids_.
  mutable std::unordered_map<std::string,
                             std::pair<std::uint32_t, std::uint32_t>>
      cache_;
  mutable std::vector<std::int32_t> cache_ids_;
};

}  // namespace mold
