#include "model/bpe_model.hpp"

#include <algorithm>

#include "model/byte_level.hpp"

namespace mold {

namespace {
/// No pair has this key: ids are below 2^24.
constexpr std::uint64_t kEmpty = ~std::uint64_t{0};

std::uint64_t mix(std::uint64_t key) {
  // A multiplicative hash (Fibonacci hashing): consecutive ids spread out.
  return (key * 0x9e3779b97f4a7c15ull) >> 20;
}
}  // namespace

BpeModel::BpeModel(
    const std::array<std::int32_t, 256>& byte_ids,
    const std::vector<Merge>& merges,
    const std::unordered_map<std::string, std::int32_t>* whole_words,
    bool ignore_merges)
    : byte_ids_(byte_ids),
      whole_words_(whole_words),
      ignore_merges_(ignore_merges) {
  std::size_t capacity = 16;
  while (capacity < merges.size() * 2) capacity *= 2;
  slots_.assign(capacity, Slot{kEmpty, Rank{-1, -1}});
  slot_mask_ = capacity - 1;
  for (std::size_t i = 0; i < merges.size(); ++i)
    insert(key(merges[i].left, merges[i].right),
           Rank{static_cast<std::int32_t>(i), merges[i].merged});
}

void BpeModel::insert(std::uint64_t k, Rank rank) {
  for (std::uint64_t i = mix(k) & slot_mask_;; i = (i + 1) & slot_mask_) {
    Slot& slot = slots_[i];
    if (slot.key == kEmpty || slot.key == k) {
      slot = {k, rank};  // a repeated pair takes its last rank
      return;
    }
  }
}

BpeModel::Rank BpeModel::find(std::int32_t left, std::int32_t right) const {
  const std::uint64_t k = key(left, right);
  for (std::uint64_t i = mix(k) & slot_mask_;; i = (i + 1) & slot_mask_) {
    const Slot& slot = slots_[i];
    if (slot.key == k) return slot.rank;
    if (slot.key == kEmpty) return Rank{-1, -1};
  }
}

void BpeModel::set_cache_capacity(std::size_t words) {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  cache_capacity_ = words;
  cache_.clear();
  cache_ids_.clear();
  cache_ids_.shrink_to_fit();
}

void BpeModel::encode(std::string_view piece,
                      std::vector<std::int32_t>& out) const {
  if (piece.empty()) return;
  if (piece.size() == 1) {
    out.push_back(byte_ids_[static_cast<unsigned char>(piece[0])]);
    return;
  }
  if (ignore_merges_ && whole_words_ != nullptr) {
    const auto it = whole_words_->find(ByteLevelAlphabet::get().encode(piece));
    if (it != whole_words_->end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = piece.size() <= kMaxCachedPiece;
  std::string cache_key;
  if (cacheable) {
    cache_key.assign(piece);
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_capacity_ > 0) {
      const auto it = cache_.find(cache_key);
      if (it != cache_.end()) {
        const auto [offset, count] = it->second;
        out.insert(out.end(), cache_ids_.begin() + offset,
                   cache_ids_.begin() + offset + count);
        return;
      }
    }
  }
  const std::size_t first = out.size();
  if (piece.size() <= kShortPiece)
    merge_short(piece, out);
  else
    merge_long(piece, out);
  if (!cacheable) return;
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_capacity_ == 0) return;
  if (cache_.size() >= cache_capacity_) {
    // Full: start again rather than keep the words of the first texts
    // forever.
    cache_.clear();
    cache_ids_.clear();
  }
  const auto count = static_cast<std::uint32_t>(out.size() - first);
  if (cache_
          .emplace(std::move(cache_key),
                   std::make_pair(static_cast<std::uint32_t>(cache_ids_.size()),
                                  count))
          .second)
    cache_ids_.insert(cache_ids_.end(), out.begin() + first, out.end());
}

void BpeModel::merge_short(std::string_view piece,
                           std::vector<std::int32_t>& out) const {
  // symbols[i] and the merge of (symbols[i], symbols[i + 1]) in ranks[i].
  std::int32_t symbols[kShortPiece];
  Rank ranks[kShortPiece];
  std::size_t n = piece.size();
  for (std::size_t i = 0; i < n; ++i)
    symbols[i] = byte_ids_[static_cast<unsigned char>(piece[i])];
  for (std::size_t i = 0; i + 1 < n; ++i)
    ranks[i] = find(symbols[i], symbols[i + 1]);
  while (n > 1) {
    std::size_t best = n;
    for (std::size_t i = 0; i + 1 < n; ++i)
      if (ranks[i].rank >= 0 && (best == n || ranks[i].rank < ranks[best].rank))
        best = i;  // strictly lower: the leftmost of equal ranks
    if (best == n) break;
    symbols[best] = ranks[best].merged;
    for (std::size_t i = best + 1; i + 1 < n; ++i) {
      symbols[i] = symbols[i + 1];
      ranks[i] = ranks[i + 1];
    }
    --n;
    if (best + 1 < n) ranks[best] = find(symbols[best], symbols[best + 1]);
    if (best > 0) ranks[best - 1] = find(symbols[best - 1], symbols[best]);
  }
  out.insert(out.end(), symbols, symbols + n);
}

void BpeModel::merge_long(std::string_view piece,
                          std::vector<std::int32_t>& out) const {
  struct Symbol {
    std::int32_t id;
    std::int32_t prev;  // -1: none
    std::int32_t next;  // -1: none
  };
  struct Candidate {
    std::int32_t rank;
    std::int32_t pos;
    std::int32_t left;
    std::int32_t right;
    std::int32_t merged;
    // Lowest rank first, then leftmost: std::push_heap keeps the largest.
    bool operator<(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : pos > other.pos;
    }
  };
  const auto n = static_cast<std::int32_t>(piece.size());
  std::vector<Symbol> symbols(static_cast<std::size_t>(n));
  std::vector<Candidate> heap;
  heap.reserve(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n; ++i)
    symbols[i] = {byte_ids_[static_cast<unsigned char>(piece[i])], i - 1,
                  i + 1 < n ? i + 1 : -1};
  const auto consider = [&](std::int32_t pos) {
    const std::int32_t next = symbols[pos].next;
    if (next < 0) return;
    const Rank rank = find(symbols[pos].id, symbols[next].id);
    if (rank.rank < 0) return;
    heap.push_back(
        {rank.rank, pos, symbols[pos].id, symbols[next].id, rank.merged});
    std::push_heap(heap.begin(), heap.end());
  };
  for (std::int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Candidate c = heap.back();
    heap.pop_back();
    Symbol& left = symbols[c.pos];
    if (left.id != c.left || left.next < 0) continue;  // stale
    Symbol& right = symbols[left.next];
    if (right.id != c.right) continue;  // stale
    left.id = c.merged;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.pos;
    right.id = -1;
    if (left.prev >= 0) consider(left.prev);
    consider(c.pos);
  }
  for (std::int32_t i = 0; i >= 0; i = symbols[i].next)
    out.push_back(symbols[i].id);
}

}  // namespace mold
