//===- AttentionArguments.cpp - Checks of an attention's arguments --------===//

#include "abi/AttentionArguments.h"

#include "abi/Error.h"

#include <cmath>
#include <sstream>

namespace fsdprt {

static void checkPositive(const char *what, int64_t value, const char *name) {
  if (value <= 0)
    fatal(std::string(what) + ": " + name + " = " + std::to_string(value) + " is not positive");
}

AttentionShape attentionShape(int64_t batch, int64_t heads, int64_t kvHeads, int64_t seq,
                              int64_t headDim, int32_t causal, int64_t window, float scale,
                              int32_t layout) {
  AttentionShape shape;
  shape.batch = batch;
  shape.heads = heads;
  shape.kvHeads = kvHeads;
  shape.seq = seq;
  shape.headDim = headDim;
  shape.causal = causal != 0;
  shape.window = window;
  shape.scale = scale;
  shape.layout = layout;
  return shape;
}

void checkAttention(const char *what, const AttentionShape &shape) {
  checkPositive(what, shape.batch, "batch");
  checkPositive(what, shape.heads, "heads");
  checkPositive(what, shape.kvHeads, "kv_heads");
  checkPositive(what, shape.seq, "seq");
  checkPositive(what, shape.headDim, "head_dim");
  if (shape.heads % shape.kvHeads != 0)
    fatal(std::string(what) + ": heads = " + std::to_string(shape.heads) +
          " is not a multiple of kv_heads = " + std::to_string(shape.kvHeads));
  if (shape.window < 0)
    fatal(std::string(what) + ": window = " + std::to_string(shape.window) + " is negative");
  if (shape.window > 0 && !shape.causal)
    fatal(std::string(what) + ": window = " + std::to_string(shape.window) +
          " needs causal attention");
  if (!std::isfinite(shape.scale))
    fatal(std::string(what) + ": scale is not finite");
  if (shape.layout != FSDPRT_ATTENTION_BHSD && shape.layout != FSDPRT_ATTENTION_BSHD)
    fatal(std::string(what) + ": layout = " + std::to_string(shape.layout) +
          " is neither FSDPRT_ATTENTION_BHSD (0) nor FSDPRT_ATTENTION_BSHD (1)");
  // Each factor is at most 2^62 after the checks above; the products are
  // taken in long double so that an overflow cannot wrap to a small size.
  long double elements = static_cast<long double>(shape.batch) * shape.heads * shape.seq *
                         shape.headDim;
  if (elements * 4 > static_cast<long double>(int64_t(1) << 62))
    fatal(std::string(what) + ": the query of " + describeAttention(shape) + " is too large");
}

std::string describeAttention(const AttentionShape &shape) {
  std::ostringstream text;
  text << "batch = " << shape.batch << ", heads = " << shape.heads
       << ", kv_heads = " << shape.kvHeads << ", seq = " << shape.seq
       << ", head_dim = " << shape.headDim << (shape.causal ? ", causal" : "");
  if (shape.window > 0)
    text << ", window = " << shape.window;
  text << ", scale = " << shape.scale << (shape.sequenceMajor() ? ", [B, S, H, D]" : "");
  return text.str();
}

} // namespace fsdprt
