#include "mold/tensor/chunked_attention.hpp"

#include <algorithm>
#include <limits>

#include "mold/estimate/attention_chunk.hpp"

namespace mold {

at::Tensor chunked_attention(const at::Tensor& q, const at::Tensor& k_t,
                             const at::Tensor& v, const at::Tensor& key_mask) {
  const int64_t batch = q.size(0), heads = q.size(1), seq = q.size(2),
                head_dim = q.size(3);
  at::Tensor blocked;  // (B, 1, 1, S): keys not attended to
  if (key_mask.defined())
    blocked = key_mask.logical_not().view({batch, 1, 1, seq});
  at::Tensor out = at::empty({batch, seq, heads, head_dim}, q.options());
  const int64_t rows = attention_chunk(batch, heads, seq).rows;
  for (int64_t r0 = 0; r0 < seq; r0 += rows) {
    const int64_t n = std::min(rows, seq - r0);
    at::Tensor scores = at::matmul(q.narrow(2, r0, n), k_t);  // (B, H, n, S)
    if (blocked.defined())
      scores.masked_fill_(blocked, -std::numeric_limits<double>::infinity());
    scores = at::softmax(scores, -1);
    out.narrow(1, r0, n).copy_(at::matmul(scores, v).permute({0, 2, 1, 3}));
  }
  return out;
}

}  // namespace mold
