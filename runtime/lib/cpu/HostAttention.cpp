//===- HostAttention.cpp - bf16 attention in plain loops ------------------===//
//
// fsdprt_attention_bf16 and fsdprt_attention_grad_bf16 (fsdprt.h) on the CPU
// backend: what cuDNN's fused attention computes on the CUDA backend, with
// the whole row of scores at hand. It is what a CUDA step whose kernels run
// on the CPU (fsdpc --test-kernels-on-cpu) calls, so it rounds where the
// fused kernel does (FlashAttention-2's algorithm): the operands are bf16;
// the scores, the softmax's statistics and every sum are wider; the
// probabilities are rounded to bf16 before their products with the values
// (forward) and with the output's gradient (backward), and so is the scores'
// gradient before its products with the keys and the queries; each result
// is rounded once when stored. Sums are taken in double, so that they are
// exact but for those roundings, whatever order a GPU adds in.
//
// The rows of a (batch, key head) pair are independent: pairs run in
// parallel on the host's threads.
//
//===----------------------------------------------------------------------===//

#include "abi/AttentionArguments.h"
#include "abi/DType.h"
#include "fsdprt/fsdprt.h"
#include "trainer/HostParallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace fsdprt {
namespace {

/// The bf16 tensors of one call, widened to double.
std::vector<double> widened(const void *data, int64_t count) {
  const auto *bits = static_cast<const uint16_t *>(data);
  std::vector<double> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    values[i] = bf16ToDouble(bits[i]);
  return values;
}

void narrowed(const std::vector<double> &values, void *data) {
  auto *bits = static_cast<uint16_t *>(data);
  for (size_t i = 0; i < values.size(); ++i)
    bits[i] = roundToBF16(values[i]);
}

/// Row `t` of head `h` of batch `b` in a [batch, heads, seq, headDim]
/// tensor, or a [batch, seq, heads, headDim] one (FSDPRT_ATTENTION_BSHD).
int64_t rowOffset(const AttentionShape &s, int64_t heads, int64_t b, int64_t h, int64_t t) {
  if (s.sequenceMajor())
    return ((b * s.seq + t) * heads + h) * s.headDim;
  return ((b * heads + h) * s.seq + t) * s.headDim;
}

double dot(const double *x, const double *y, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += x[i] * y[i];
  return sum;
}

/// The scaled scores of query row `t` of head `h` (batch `b`) against the keys it
/// sees: `row[j - s.firstKey(t)]` for key j.
void scores(const AttentionShape &s, const std::vector<double> &q, const std::vector<double> &k,
            int64_t b, int64_t h, int64_t t, std::vector<double> &row) {
  const double *query = &q[rowOffset(s, s.heads, b, h, t)];
  int64_t kvHead = h / s.group(), first = s.firstKey(t);
  row.resize(static_cast<size_t>(s.endKey(t) - first));
  for (int64_t j = first; j < s.endKey(t); ++j)
    row[j - first] = s.scale * dot(query, &k[rowOffset(s, s.kvHeads, b, kvHead, j)], s.headDim);
}

/// A value the fused kernel rounds to bf16 before a product.
double productOperand(double value) { return bf16ToDouble(roundToBF16(value)); }

/// Calls body(b, kvHead) for every pair, pairs on the host's threads.
template <typename Body> void forEachPair(const AttentionShape &s, Body body) {
  parallelChunks(s.batch * s.kvHeads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t pair = begin; pair < end; ++pair)
      body(pair / s.kvHeads, pair % s.kvHeads);
  });
}

} // namespace
} // namespace fsdprt

using namespace fsdprt;

extern "C" void fsdprt_attention_bf16(int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq,
                                      int64_t head_dim, int32_t causal, int64_t window, float scale,
                                      int32_t layout, const void *query, const void *key,
                                      const void *value, void *out, float *lse,
                                      void * /*workspace*/, int64_t /*workspace_bytes*/) {
  AttentionShape s =
      attentionShape(batch, heads, kv_heads, seq, head_dim, causal, window, scale, layout);
  checkAttention("fsdprt_attention_bf16", s);
  std::vector<double> q = widened(query, s.queryElements()), k = widened(key, s.keyElements()),
                      v = widened(value, s.keyElements()), o(s.queryElements());
  forEachPair(s, [&](int64_t b, int64_t kvHead) {
    std::vector<double> row;
    for (int64_t h = kvHead * s.group(); h < (kvHead + 1) * s.group(); ++h)
      for (int64_t t = 0; t < s.seq; ++t) {
        scores(s, q, k, b, h, t, row);
        // exp(score - the row's maximum), rounded for the product with the
        // values; the row's sum, which normalises the result, unrounded.
        double top = *std::max_element(row.begin(), row.end()), sum = 0;
        double *result = &o[rowOffset(s, s.heads, b, h, t)];
        for (int64_t j = s.firstKey(t); j < s.endKey(t); ++j) {
          double p = std::exp(row[j - s.firstKey(t)] - top);
          sum += p;
          const double *v_j = &v[rowOffset(s, s.kvHeads, b, kvHead, j)];
          for (int64_t d = 0; d < s.headDim; ++d)
            result[d] += productOperand(p) * v_j[d];
        }
        for (int64_t d = 0; d < s.headDim; ++d)
          result[d] /= sum;
        lse[(b * s.heads + h) * s.seq + t] = static_cast<float>(top + std::log(sum));
      }
  });
  narrowed(o, out);
}

extern "C" void fsdprt_attention_grad_bf16(int64_t batch, int64_t heads, int64_t kv_heads,
                                           int64_t seq, int64_t head_dim, int32_t causal,
                                           int64_t window, float scale, int32_t layout,
                                           int32_t /*deterministic*/, const void *query,
                                           const void *key, const void *value, const void *out,
                                           const float *lse, const void *out_grad, void *query_grad,
                                           void *key_grad, void *value_grad, void * /*workspace*/,
                                           int64_t /*workspace_bytes*/) {
  AttentionShape s =
      attentionShape(batch, heads, kv_heads, seq, head_dim, causal, window, scale, layout);
  checkAttention("fsdprt_attention_grad_bf16", s);
  std::vector<double> q = widened(query, s.queryElements()), k = widened(key, s.keyElements()),
                      v = widened(value, s.keyElements()), o = widened(out, s.queryElements()),
                      dO = widened(out_grad, s.queryElements()), dQ(s.queryElements()),
                      dK(s.keyElements()), dV(s.keyElements());
  // Each pair writes its own rows of dK and dV, and its group's rows of dQ.
  forEachPair(s, [&](int64_t b, int64_t kvHead) {
    std::vector<double> row;
    for (int64_t h = kvHead * s.group(); h < (kvHead + 1) * s.group(); ++h)
      for (int64_t t = 0; t < s.seq; ++t) {
        scores(s, q, k, b, h, t, row);
        int64_t at = rowOffset(s, s.heads, b, h, t);
        double total = lse[(b * s.heads + h) * s.seq + t];
        double rowTerm = dot(&dO[at], &o[at], s.headDim);
        for (int64_t j = s.firstKey(t); j < s.endKey(t); ++j) {
          int64_t kv = rowOffset(s, s.kvHeads, b, kvHead, j);
          double p = std::exp(row[j - s.firstKey(t)] - total);
          double dS = productOperand(p * (dot(&dO[at], &v[kv], s.headDim) - rowTerm) * s.scale);
          p = productOperand(p);
          for (int64_t d = 0; d < s.headDim; ++d) {
            dV[kv + d] += p * dO[at + d];
            dQ[at + d] += dS * k[kv + d];
            dK[kv + d] += dS * q[at + d];
          }
        }
      }
  });
  narrowed(dQ, query_grad);
  narrowed(dK, key_grad);
  narrowed(dV, value_grad);
}
