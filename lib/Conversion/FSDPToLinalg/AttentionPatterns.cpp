//===- AttentionPatterns.cpp - fsdp.attention as tiled linalg -------------===//
//
// FlashAttention-2 on tensors: the keys are taken one block at a time, so no
// tensor ever has more than T x block scores (T query positions, `key_block`
// keys). The full blocks are one scf.for over the key offset (the 70B step's
// eight blocks per attention, unrolled, doubled its op count), carrying the
// running values in place; a last, shorter block follows it. Forward: each
// block's scores feed an online softmax (the running row maximum m, the
// running sum l of exp(score - m), and the output rescaled by
// exp(m_old - m_new) whenever m grows); the log-sum-exp m + log(l) of every
// row is the only statistic kept. Backward: each block's probabilities are
// recomputed as exp(score - lse), and the block's key and value gradients
// and its share of the query gradient follow from them.
//
// A sliding window (Mistral's, Gemma's local layers) takes the queries a
// block at a time too: each block's scores are computed for the keys its
// window reaches and no others (W + block - 1 of them, a slice whose start
// follows the block), so a window's work is the band's. Its key and value
// gradients add up over the blocks whose windows overlap.
//
// Grouped-query attention without copies: the query heads of one key head
// are contiguous, so [B, Hq, T, D] is viewed as [B * Hkv, G * T, D] (G = Hq /
// Hkv rows of T per key head) against keys and values [B * Hkv, S, D]; the
// key gradient's product then sums over the G query heads by itself.
//
// Scores, probabilities and the products are f32 (bf16 operands are widened
// exactly once, O(T) copies); the outputs are rounded once to their type
// (docs/MixedPrecision.md). The products are linalg.batch_matmul ops, which
// fsdp-lower-gemms hands to the GEMM.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include "fsdp/Conversion/FSDPToLinalg.h"
#include "fsdp/IR/BufferKinds.h"
#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// An attention's shapes: query [B, Hq, T, D], key and value [B, Hkv, S, D].
struct AttentionShape {
  int64_t batch, queryHeads, keyHeads, queries, keys, headDim;

  explicit AttentionShape(Value query, Value key) {
    ArrayRef<int64_t> q = tensorType(query).getShape(), k = tensorType(key).getShape();
    batch = q[0];
    queryHeads = q[1];
    queries = q[2];
    headDim = q[3];
    keyHeads = k[1];
    keys = k[2];
  }
  int64_t groups() const { return batch * keyHeads; }
  int64_t groupRows() const { return queryHeads / keyHeads * queries; }
};

RankedTensorType f32Tensor(OpBuilder &b, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, b.getF32Type());
}

/// [B, Hq, T, ...] (f32) as [B * Hkv, G * T, ...]: the query heads of a key
/// head, one after the other.
Value groupRows(OpBuilder &b, Location loc, Value value, const AttentionShape &a) {
  RankedTensorType type = tensorType(value);
  bool rows = type.getRank() == 4;
  SmallVector<int64_t> split = {a.batch, a.keyHeads, a.queryHeads / a.keyHeads, a.queries};
  SmallVector<int64_t> grouped = {a.groups(), a.groupRows()};
  SmallVector<ReassociationIndices> expand = {{0}, {1, 2}, {3}};
  SmallVector<ReassociationIndices> collapse = {{0, 1}, {2, 3}};
  if (rows) {
    split.push_back(a.headDim);
    grouped.push_back(a.headDim);
    expand.push_back({4});
    collapse.push_back({4});
  }
  Value wide = castTo(b, loc, value, computeTensorType(type));
  Value expanded = tensor::ExpandShapeOp::create(b, loc, f32Tensor(b, split), wide, expand);
  return tensor::CollapseShapeOp::create(b, loc, expanded, collapse);
}

/// The inverse of groupRows, rounded once to `type`.
Value ungroupRows(OpBuilder &b, Location loc, Value value, RankedTensorType type,
                  const AttentionShape &a) {
  bool rows = type.getRank() == 4;
  SmallVector<int64_t> split = {a.batch, a.keyHeads, a.queryHeads / a.keyHeads, a.queries};
  SmallVector<ReassociationIndices> expand = {{0, 1}, {2, 3}};
  SmallVector<ReassociationIndices> collapse = {{0}, {1, 2}, {3}};
  if (rows) {
    split.push_back(a.headDim);
    expand.push_back({4});
    collapse.push_back({4});
  }
  Value expanded = tensor::ExpandShapeOp::create(b, loc, f32Tensor(b, split), value, expand);
  Value collapsed = tensor::CollapseShapeOp::create(b, loc, expanded, collapse);
  return castTo(b, loc, collapsed, type);
}

/// [B, Hkv, S, D] (f32) as [B * Hkv, S, D].
Value groupKeys(OpBuilder &b, Location loc, Value value) {
  Value wide = castTo(b, loc, value, computeTensorType(tensorType(value)));
  return tensor::CollapseShapeOp::create(b, loc, wide,
                                         SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
}

Value ungroupKeys(OpBuilder &b, Location loc, Value value, RankedTensorType type) {
  ArrayRef<int64_t> shape = type.getShape();
  Value expanded = tensor::ExpandShapeOp::create(
      b, loc, f32Tensor(b, shape), value, SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
  return castTo(b, loc, expanded, type);
}

/// Keys [first, first + count) of [G, S, D].
Value keyBlock(OpBuilder &b, Location loc, Value keys, OpFoldResult first, int64_t count) {
  ArrayRef<int64_t> shape = tensorType(keys).getShape();
  return tensor::ExtractSliceOp::create(
      b, loc, keys,
      ArrayRef<OpFoldResult>{b.getIndexAttr(0), first, b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(shape[0]), b.getIndexAttr(count),
                             b.getIndexAttr(shape[2])},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(1)});
}

/// `block` written at keys [first, first + rows) of `into` ([G, S, D]), by a
/// linalg.copy into the slice (which becomes loops or a kernel like any other
/// linalg op, where a copy of the strided slice as such would need a runtime
/// helper).
Value insertKeyBlock(OpBuilder &b, Location loc, Value block, Value into, OpFoldResult first) {
  int64_t rows = tensorType(block).getShape()[1];
  SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), first, b.getIndexAttr(0)};
  ArrayRef<int64_t> shape = tensorType(block).getShape();
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(shape[0]), b.getIndexAttr(rows),
                                     b.getIndexAttr(shape[2])};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  Value slice = tensor::ExtractSliceOp::create(b, loc, into, offsets, sizes, strides);
  Value copied = linalg::CopyOp::create(b, loc, block, slice).getResult(0);
  return tensor::InsertSliceOp::create(b, loc, copied, into, offsets, sizes, strides);
}

/// The f32 batched product of [G, ., .] operands, either transposed, added to
/// `accumulate` when given (the GEMM's beta = 1: a running sum is updated in
/// place, block after block, instead of each block's product living until a
/// fused sum of all of them).
Value batchMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs, bool transposeLhs,
                  bool transposeRhs, Value accumulate = Value()) {
  ArrayRef<int64_t> l = tensorType(lhs).getShape(), r = tensorType(rhs).getShape();
  int64_t m = transposeLhs ? l[2] : l[1], n = transposeRhs ? r[1] : r[2];
  RankedTensorType type = f32Tensor(b, {l[0], m, n});
  MLIRContext *ctx = b.getContext();
  AffineExpr bd, md, nd, kd;
  bindDims(ctx, bd, md, nd, kd);
  auto map = [&](AffineExpr x, AffineExpr y) { return AffineMap::get(4, 0, {bd, x, y}, ctx); };
  SmallVector<Attribute> maps = {AffineMapAttr::get(transposeLhs ? map(kd, md) : map(md, kd)),
                                 AffineMapAttr::get(transposeRhs ? map(nd, kd) : map(kd, nd)),
                                 AffineMapAttr::get(map(md, nd))};
  Value init = accumulate ? accumulate : buildFilled(b, loc, type, 0.0);
  return linalg::BatchMatmulOp::create(b, loc, TypeRange{type}, ValueRange{lhs, rhs},
                                       ValueRange{init},
                                       {b.getNamedAttr("indexing_maps", b.getArrayAttr(maps))})
      .getResult(0);
}

/// Maps of a generic over [G, R, C] reading full-shape inputs, then [G, R]
/// row values.
SmallVector<AffineMap> fullThenRows(OpBuilder &b, int64_t numFull, int64_t numRows) {
  SmallVector<AffineMap> maps(numFull, b.getMultiDimIdentityMap(3));
  maps.append(numRows, droppedDimsMap(b.getContext(), 3, {2}));
  return maps;
}

/// An index as i64 inside a generic's body.
Value i64Value(OpBuilder &b, Location loc, OpFoldResult index) {
  if (std::optional<int64_t> fixed = getConstantIntValue(index))
    return arith::ConstantIntOp::create(b, loc, *fixed, 64);
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), llvm::cast<Value>(index));
}

/// Which scores of a block are hidden: with `causal`, the keys after their
/// query; with a `window` as well, the keys `window` or more positions before
/// it. Row r of the block is query position queryFirst + (r mod positions)
/// (the rows are the query heads of a group one after the other), column c
/// key position keyFirst + c.
struct ScoreMask {
  bool causal = false;
  std::optional<int64_t> window;
  int64_t positions = 0;
  OpFoldResult queryFirst, keyFirst;

  /// Whether the score at (row, column) of the generic's body is hidden.
  Value hidden(OpBuilder &b, Location loc) const {
    ScalarMath math(b, loc);
    Value query = arith::RemSIOp::create(b, loc, math.index(1),
                                         arith::ConstantIntOp::create(b, loc, positions, 64));
    if (getConstantIntValue(queryFirst) != 0)
      query = arith::AddIOp::create(b, loc, query, i64Value(b, loc, queryFirst));
    Value key = arith::AddIOp::create(b, loc, math.index(2), i64Value(b, loc, keyFirst));
    Value after = math.greaterInt(key, query);
    if (!window)
      return after;
    // key <= query - window, i.e. query - window + 1 > key.
    Value reach =
        arith::AddIOp::create(b, loc, query, arith::ConstantIntOp::create(b, loc, 1 - *window, 64));
    return arith::OrIOp::create(b, loc, after, math.greaterInt(reach, key));
  }

  /// This mask for the block of keys `first` keys after this mask's first.
  ScoreMask keysFrom(OpBuilder &b, Location loc, OpFoldResult first) const {
    ScoreMask block = *this;
    if (getConstantIntValue(keyFirst) == 0)
      block.keyFirst = first;
    else
      block.keyFirst = addIndex(b, loc, keyFirst, first);
    return block;
  }

  static OpFoldResult addIndex(OpBuilder &b, Location loc, OpFoldResult x, OpFoldResult y) {
    std::optional<int64_t> cx = getConstantIntValue(x), cy = getConstantIntValue(y);
    if (cx && cy)
      return b.getIndexAttr(*cx + *cy);
    return arith::AddIOp::create(b, loc, getValueOrCreateConstantIndexOp(b, loc, x),
                                 getValueOrCreateConstantIndexOp(b, loc, y))
        .getResult();
  }
};

/// How raw scores become the softmax's: times `scale`, then, with a
/// `softcap` C, C tanh(s / C).
struct ScoreForm {
  double scale;
  std::optional<double> softcap;

  Value apply(ScalarMath &math, Value score) const {
    Value scaled = math.mul(score, math.constant(score, scale));
    if (!softcap)
      return scaled;
    Value capped = math.tanh(math.div(scaled, math.constant(score, *softcap)));
    return math.mul(capped, math.constant(score, *softcap));
  }

  /// The cap's derivative, 1 - (c / C)^2 at the capped score c (that of
  /// C tanh(s / C) at s); 0 where the mask hid the score (c = -infinity,
  /// whose probability is 0: the product would be 0 times infinity).
  Value capDerivative(ScalarMath &math, Value score) const {
    Value ratio = math.mul(score, math.constant(score, 1.0 / *softcap));
    return math.max(math.sub(math.constant(score, 1.0), math.mul(ratio, ratio)),
                    math.constant(score, 0.0));
  }
};

/// One block's scores in the softmax's form, -infinity where `mask` hides
/// them. `recomputed`: the forward pass computed these scores already (the
/// backward's), which the product says (kRecomputedAttr) for the step's FLOP
/// count.
Value formedScores(OpBuilder &b, Location loc, Value queries, Value keys, const ScoreForm &form,
                   const ScoreMask &mask, bool recomputed) {
  Value scores = batchMatmul(b, loc, queries, keys, false, true);
  if (recomputed)
    scores.getDefiningOp()->setAttr(kRecomputedAttr, b.getUnitAttr());
  return buildParallel(
      b, loc, tensorType(scores), scores, b.getMultiDimIdentityMap(3),
      [&](OpBuilder &nb, Location l, ValueRange x) {
        ScalarMath math(nb, l);
        Value formed = form.apply(math, x[0]);
        if (!mask.causal)
          return formed;
        return math.select(mask.hidden(nb, l), math.constant(x[0], -INFINITY), formed);
      });
}

/// exp(scores - row), for a [G, R] row value per score row.
Value expMinusRow(OpBuilder &b, Location loc, Value scores, Value row) {
  return buildParallel(b, loc, tensorType(scores), {scores, row}, fullThenRows(b, 1, 1),
                       [](OpBuilder &nb, Location l, ValueRange x) {
                         ScalarMath math(nb, l);
                         return math.exp(math.sub(x[0], x[1]));
                       });
}

/// The maximum or the sum of each row of `input`, continuing from `from`
/// (the running value of the earlier blocks) when given. A running value is a
/// reduction's initial value, never an input: an elementwise chain through
/// the blocks would be fused into one op reading every block's values at the
/// end (fsdp-fuse-elementwise), keeping them all alive.
Value rowReduce(OpBuilder &b, Location loc, Value input, bool max, Value from = Value()) {
  auto body = [max](OpBuilder &nb, Location l, ValueRange x) {
    ScalarMath math(nb, l);
    return max ? math.max(x[1], x[0]) : math.add(x[1], x[0]);
  };
  if (from)
    return buildReductionInto(b, loc, input, {2}, from, body);
  return buildReduction(b, loc, input, {2}, max ? -INFINITY : 0.0, body);
}

Value rowElementwise(OpBuilder &b, Location loc, ValueRange rows, BodyBuilder body) {
  return buildElementwise(b, loc, tensorType(rows.front()), rows, body);
}

/// A copy of `value` in a tensor of its own.
Value copied(OpBuilder &b, Location loc, Value value) {
  RankedTensorType type = tensorType(value);
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::CopyOp::create(b, loc, value, empty).getResult(0);
}

/// `target` ([G, R] or [G, R, C]) updated in place from its own values and
/// the [G, R] row values `rows`: body(row value, element).
Value updated(OpBuilder &b, Location loc, Value target, Value rows, BodyBuilder body) {
  int64_t rank = tensorType(target).getRank();
  SmallVector<AffineMap> maps = {rank == 2 ? b.getMultiDimIdentityMap(2)
                                           : droppedDimsMap(b.getContext(), 3, {2}),
                                 b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{target.getType()}, ValueRange{rows}, ValueRange{target}, maps,
             iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, body(nb, l, args));
             })
      .getResult(0);
}

/// Runs `block` over keys [0, keys) in blocks of `blockSize`: the full blocks
/// as one scf.for carrying `carried` (the running values `block` reads and
/// replaces), each op of a block written once whatever the sequence length,
/// then the last, shorter block if there is one.
void forEachKeyBlock(OpBuilder &b, Location loc, int64_t keys, int64_t blockSize,
                     ArrayRef<Value *> carried,
                     llvm::function_ref<void(OpBuilder &, OpFoldResult, int64_t)> block) {
  int64_t full = keys / blockSize;
  if (full == 1) {
    block(b, b.getIndexAttr(0), blockSize);
  } else if (full > 1) {
    SmallVector<Value> inits;
    for (Value *value : carried)
      inits.push_back(*value);
    Value lower = arith::ConstantIndexOp::create(b, loc, 0);
    Value upper = arith::ConstantIndexOp::create(b, loc, full * blockSize);
    Value step = arith::ConstantIndexOp::create(b, loc, blockSize);
    auto loop = scf::ForOp::create(
        b, loc, lower, upper, step, inits,
        [&](OpBuilder &nb, Location, Value first, ValueRange iterArgs) {
          for (auto [value, iterArg] : llvm::zip_equal(carried, iterArgs))
            *value = iterArg;
          block(nb, first, blockSize);
          SmallVector<Value> results;
          for (Value *value : carried)
            results.push_back(*value);
          scf::YieldOp::create(nb, loc, results);
        });
    for (auto [value, result] : llvm::zip_equal(carried, loop.getResults()))
      *value = result;
  }
  if (int64_t tail = keys % blockSize)
    block(b, b.getIndexAttr(full * blockSize), tail);
}

/// What both lowerings start from: the shapes, the grouped f32 operands and
/// the op's attributes.
struct GroupedAttention {
  AttentionShape shape;
  Value queries, keys, values;
  ScoreForm form;
  bool causal;
  std::optional<int64_t> window;
  int64_t blockSize;

  template <typename OpT>
  GroupedAttention(OpBuilder &b, Location loc, OpT op)
      : shape(op.getQuery(), op.getKey()), queries(groupRows(b, loc, op.getQuery(), shape)),
        keys(groupKeys(b, loc, op.getKey())),
        values(groupKeys(b, loc, op.getValue())), form{op.getScaleValue(), softcapOf(op)},
        causal(op.getCausal()), window(op.getWindow()), blockSize(op.getKeyBlockValue()) {}

  template <typename OpT> static std::optional<double> softcapOf(OpT op) {
    if (std::optional<llvm::APFloat> cap = op.getSoftcap())
      return cap->convertToDouble();
    return std::nullopt;
  }

  /// The mask of all queries against all keys.
  ScoreMask wholeMask(OpBuilder &b) const {
    return {causal, window, shape.queries, b.getIndexAttr(0), b.getIndexAttr(0)};
  }
};

/// The query positions [first, first + count) of a window's block, and the
/// keys its window reaches: [keyFirst, keyFirst + keys).
struct QueryBlock {
  OpFoldResult first, keyFirst;
  int64_t count, keys;

  /// A block of `count` queries from `first`: its window of W keys per query
  /// reaches W + count - 1 keys back from its last query (fewer at the
  /// start), never before key 0.
  QueryBlock(OpBuilder &b, Location loc, OpFoldResult first, int64_t count,
             const GroupedAttention &g)
      : first(first), count(count), keys(attentionWindowKeys(g.shape.keys, *g.window, count)) {
    int64_t back = count - keys; // keyFirst = max(0, first + count - keys)
    if (std::optional<int64_t> fixed = getConstantIntValue(first)) {
      keyFirst = b.getIndexAttr(std::max<int64_t>(0, *fixed + back));
      return;
    }
    Value start = arith::AddIOp::create(b, loc, llvm::cast<Value>(first),
                                        arith::ConstantIndexOp::create(b, loc, back));
    keyFirst = arith::MaxSIOp::create(b, loc, start, arith::ConstantIndexOp::create(b, loc, 0))
                   .getResult();
  }

  ScoreMask mask(const GroupedAttention &g) const {
    return {g.causal, g.window, count, first, keyFirst};
  }
};

/// [G, Gq * T, ...] viewed as [G, Gq, T, ...]: the positions of each query
/// head on their own axis.
Value splitQueryHeads(OpBuilder &b, Location loc, Value rows, const AttentionShape &a) {
  RankedTensorType type = tensorType(rows);
  SmallVector<int64_t> shape = {a.groups(), a.queryHeads / a.keyHeads, a.queries};
  SmallVector<ReassociationIndices> expand = {{0}, {1, 2}};
  if (type.getRank() == 3) {
    shape.push_back(a.headDim);
    expand.push_back({3});
  }
  return tensor::ExpandShapeOp::create(b, loc, f32Tensor(b, shape), rows, expand);
}

/// The offsets, sizes and strides of positions [first, first + count) of
/// every query head in a [G, Gq, T, ...] tensor.
struct PositionSlice {
  SmallVector<OpFoldResult> offsets, sizes, strides;

  PositionSlice(OpBuilder &b, RankedTensorType split, OpFoldResult first, int64_t count) {
    for (auto [dim, size] : llvm::enumerate(split.getShape())) {
      offsets.push_back(dim == 2 ? first : b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(dim == 2 ? count : size));
      strides.push_back(b.getIndexAttr(1));
    }
  }
};

/// The rows of positions [first, first + count) of every query head of
/// `split` ([G, Gq, T, ...]), copied together: [G, Gq * count, ...].
Value takeQueryBlock(OpBuilder &b, Location loc, Value split, OpFoldResult first, int64_t count) {
  RankedTensorType type = tensorType(split);
  PositionSlice at(b, type, first, count);
  Value slice = tensor::ExtractSliceOp::create(b, loc, split, at.offsets, at.sizes, at.strides);
  RankedTensorType blockType = tensorType(slice);
  Value empty = tensor::EmptyOp::create(b, loc, blockType.getShape(), b.getF32Type());
  Value block = linalg::CopyOp::create(b, loc, slice, empty).getResult(0);
  SmallVector<ReassociationIndices> collapse = {{0}, {1, 2}};
  if (type.getRank() == 4)
    collapse.push_back({3});
  return tensor::CollapseShapeOp::create(b, loc, block, collapse);
}

/// `rows` ([G, Gq * count, ...]) written at positions [first, first + count)
/// of every query head of `into` ([G, Gq, T, ...]).
Value putQueryBlock(OpBuilder &b, Location loc, Value rows, Value into, OpFoldResult first,
                    int64_t count) {
  RankedTensorType type = tensorType(into);
  PositionSlice at(b, type, first, count);
  Value slice = tensor::ExtractSliceOp::create(b, loc, into, at.offsets, at.sizes, at.strides);
  SmallVector<ReassociationIndices> expand = {{0}, {1, 2}};
  if (type.getRank() == 4)
    expand.push_back({3});
  Value block = tensor::ExpandShapeOp::create(b, loc, tensorType(slice), rows, expand);
  Value copied = linalg::CopyOp::create(b, loc, block, slice).getResult(0);
  return tensor::InsertSliceOp::create(b, loc, copied, into, at.offsets, at.sizes, at.strides);
}

/// The forward of `queries` ([G, R, D] rows) against `keys` and `values`
/// ([G, K, D]), keys taken `g.blockSize` at a time with an online softmax:
/// the output rows [G, R, D] and their log-sum-exp [G, R], in f32.
std::pair<Value, Value> onlineSoftmax(OpBuilder &b, Location loc, const GroupedAttention &g,
                                      Value queries, Value keys, Value values,
                                      const ScoreMask &mask) {
  ArrayRef<int64_t> rowShape = tensorType(queries).getShape();
  // m: running row maximum; l: running sum of exp(score - m); acc: the
  // output so far, scaled by exp(-m). They start at -infinity and zeros:
  // the first block's exp(m - newMax) is then 0, and what it rescales 0.
  RankedTensorType rows = f32Tensor(b, {rowShape[0], rowShape[1]});
  Value m = buildFilled(b, loc, rows, -INFINITY), l = buildFilled(b, loc, rows, 0.0),
        acc = buildFilled(b, loc, f32Tensor(b, rowShape), 0.0);
  // Each block writes the running values in place (a loop's iterations
  // carry them in one buffer each): the new maximum goes to a copy first,
  // since the rescale reads the old one.
  auto block = [&](OpBuilder &b, OpFoldResult first, int64_t count) {
    Value scores = formedScores(b, loc, queries, keyBlock(b, loc, keys, first, count), g.form,
                                mask.keysFrom(b, loc, first), /*recomputed=*/false);
    Value newMax = rowReduce(b, loc, scores, /*max=*/true, copied(b, loc, m));
    Value probs = expMinusRow(b, loc, scores, newMax);
    Value blockValues = keyBlock(b, loc, values, first, count);
    // The earlier blocks' share, rescaled to the new maximum.
    Value rescale =
        rowElementwise(b, loc, {m, newMax}, [](OpBuilder &nb, Location x, ValueRange v) {
          ScalarMath math(nb, x);
          return math.exp(math.sub(v[0], v[1]));
        });
    auto times = [](OpBuilder &nb, Location x, ValueRange v) {
      return ScalarMath(nb, x).mul(v[1], v[0]);
    };
    l = rowReduce(b, loc, probs, /*max=*/false, updated(b, loc, l, rescale, times));
    acc =
        batchMatmul(b, loc, probs, blockValues, false, false, updated(b, loc, acc, rescale, times));
    m = linalg::CopyOp::create(b, loc, newMax, m).getResult(0);
  };
  forEachKeyBlock(b, loc, tensorType(keys).getShape()[1], g.blockSize, {&m, &l, &acc}, block);
  Value output = buildParallel(
      b, loc, f32Tensor(b, rowShape), {acc, l}, fullThenRows(b, 1, 1),
      [](OpBuilder &nb, Location x, ValueRange v) { return ScalarMath(nb, x).div(v[0], v[1]); });
  Value lse = rowElementwise(b, loc, {m, l}, [](OpBuilder &nb, Location x, ValueRange v) {
    ScalarMath math(nb, x);
    return math.add(v[0], math.log(v[1]));
  });
  return {output, lse};
}

/// The forward with a window: each block of queries against the keys its
/// window reaches. Output rows [G, Gq * T, D] and log-sum-exp [G, Gq * T].
std::pair<Value, Value> windowedForward(OpBuilder &b, Location loc, const GroupedAttention &g) {
  const AttentionShape &a = g.shape;
  Value queries = splitQueryHeads(b, loc, g.queries, a);
  Value output = tensor::EmptyOp::create(b, loc, tensorType(queries).getShape(), b.getF32Type());
  Value lse = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{a.groups(), a.queryHeads / a.keyHeads, a.queries}, b.getF32Type());
  auto block = [&](OpBuilder &b, OpFoldResult first, int64_t count) {
    QueryBlock q(b, loc, first, count, g);
    auto [rows, rowsLse] = onlineSoftmax(b, loc, g, takeQueryBlock(b, loc, queries, first, count),
                                         keyBlock(b, loc, g.keys, q.keyFirst, q.keys),
                                         keyBlock(b, loc, g.values, q.keyFirst, q.keys), q.mask(g));
    output = putQueryBlock(b, loc, rows, output, first, count);
    lse = putQueryBlock(b, loc, rowsLse, lse, first, count);
  };
  forEachKeyBlock(b, loc, a.queries, g.blockSize, {&output, &lse}, block);
  SmallVector<ReassociationIndices> rows = {{0}, {1, 2}, {3}};
  return {tensor::CollapseShapeOp::create(b, loc, output, rows),
          tensor::CollapseShapeOp::create(b, loc, lse, ArrayRef(rows).drop_back())};
}

struct AttentionLowering : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    GroupedAttention g(b, loc, op);
    auto [output, lse] =
        g.window ? windowedForward(b, loc, g)
                 : onlineSoftmax(b, loc, g, g.queries, g.keys, g.values, g.wholeMask(b));
    rewriter.replaceOp(op, {ungroupRows(b, loc, output, op.getResult().getType(), g.shape),
                            ungroupRows(b, loc, lse, op.getLse().getType(), g.shape)});
    return success();
  }
};

/// What the gradient of one block of query rows needs besides the operands:
/// the incoming gradient [G, R, D], the log-sum-exp [G, R] and the rows'
/// centre rowsum(dO * O) - dlse [G, R].
struct RowGradients {
  Value queries, grad, lse, center;
};

/// The gradients accumulated block by block: the queries' [G, R, D], and
/// the keys' and values' [G, K, D]. `accumulateKeys`: add each key block's
/// gradients to what is there (a window's keys are reached by several query
/// blocks); otherwise write them (each key block is visited once).
struct BlockGradients {
  Value query, key, value;
  bool accumulateKeys;
};

/// `keys` ([G, K, D], a slice of `into` taken by keyBlock and updated in
/// place) put back at keys [first, first + K) of `into`.
Value putKeys(OpBuilder &b, Location loc, Value keys, Value into, OpFoldResult first) {
  ArrayRef<int64_t> shape = tensorType(keys).getShape();
  return tensor::InsertSliceOp::create(
      b, loc, keys, into, ArrayRef<OpFoldResult>{b.getIndexAttr(0), first, b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(shape[0]), b.getIndexAttr(shape[1]),
                             b.getIndexAttr(shape[2])},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(1)});
}

/// Writes (or adds, with `accumulate`) the product `lhs^T rhs` at keys
/// [first, first + rows) of `into`.
Value keyBlockProduct(OpBuilder &b, Location loc, Value lhs, Value rhs, Value into,
                      OpFoldResult first, bool accumulate) {
  if (!accumulate)
    return insertKeyBlock(b, loc, batchMatmul(b, loc, lhs, rhs, true, false), into, first);
  Value slice = keyBlock(b, loc, into, first, tensorType(lhs).getShape()[2]);
  return putKeys(b, loc, batchMatmul(b, loc, lhs, rhs, true, false, slice), into, first);
}

/// The gradient of a block's raw scores from its probabilities, their
/// gradient and the rows' centres [G, R] (with a soft cap, times the cap's
/// derivative, read from the capped `scores`).
Value rawScoresGradient(OpBuilder &b, Location loc, const ScoreForm &form, Value probs,
                        Value probsGrad, Value scores, Value center) {
  SmallVector<Value> operands = {probs, probsGrad};
  if (form.softcap)
    operands.push_back(scores);
  size_t numFull = operands.size();
  operands.push_back(center);
  return buildParallel(b, loc, tensorType(probs), operands, fullThenRows(b, numFull, 1),
                       [&form, numFull](OpBuilder &nb, Location x, ValueRange v) {
                         ScalarMath math(nb, x);
                         Value grad = math.mul(v[0], math.sub(v[1], v[numFull]));
                         if (form.softcap)
                           grad = math.mul(grad, form.capDerivative(math, v[2]));
                         return math.mul(grad, math.constant(v[0], form.scale));
                       });
}

/// The backward of query rows `r` against `keys` and `values` ([G, K, D]),
/// the scores recomputed one key block at a time from the log-sum-exp.
void blockBackward(OpBuilder &b, Location loc, const GroupedAttention &g, const RowGradients &r,
                   Value keys, Value values, const ScoreMask &mask, BlockGradients &grads) {
  auto block = [&](OpBuilder &b, OpFoldResult first, int64_t count) {
    Value blockKeys = keyBlock(b, loc, keys, first, count);
    Value scores = formedScores(b, loc, r.queries, blockKeys, g.form, mask.keysFrom(b, loc, first),
                                /*recomputed=*/true);
    Value probs = expMinusRow(b, loc, scores, r.lse);
    grads.value = keyBlockProduct(b, loc, probs, r.grad, grads.value, first, grads.accumulateKeys);
    Value probsGrad =
        batchMatmul(b, loc, r.grad, keyBlock(b, loc, values, first, count), false, true);
    Value scoresGrad = rawScoresGradient(b, loc, g.form, probs, probsGrad, scores, r.center);
    grads.query = batchMatmul(b, loc, scoresGrad, blockKeys, false, false, grads.query);
    grads.key =
        keyBlockProduct(b, loc, scoresGrad, r.queries, grads.key, first, grads.accumulateKeys);
  };
  forEachKeyBlock(b, loc, tensorType(keys).getShape()[1], g.blockSize,
                  {&grads.query, &grads.key, &grads.value}, block);
}

/// The gradients with a window: each block of query rows against the keys
/// its window reaches, its key and value gradients added where the windows
/// of the blocks overlap.
BlockGradients windowedBackward(OpBuilder &b, Location loc, const GroupedAttention &g,
                                const RowGradients &all) {
  const AttentionShape &a = g.shape;
  RowGradients split = {splitQueryHeads(b, loc, all.queries, a),
                        splitQueryHeads(b, loc, all.grad, a), splitQueryHeads(b, loc, all.lse, a),
                        splitQueryHeads(b, loc, all.center, a)};
  RankedTensorType keysType = tensorType(g.keys);
  Value queryGrad =
      tensor::EmptyOp::create(b, loc, tensorType(split.queries).getShape(), b.getF32Type());
  Value keyGrad = buildFilled(b, loc, keysType, 0.0),
        valueGrad = buildFilled(b, loc, keysType, 0.0);
  auto block = [&](OpBuilder &b, OpFoldResult first, int64_t count) {
    QueryBlock q(b, loc, first, count, g);
    auto take = [&](Value value) { return takeQueryBlock(b, loc, value, first, count); };
    RowGradients rows = {take(split.queries), take(split.grad), take(split.lse),
                         take(split.center)};
    BlockGradients grads = {buildFilled(b, loc, tensorType(rows.queries), 0.0),
                            keyBlock(b, loc, keyGrad, q.keyFirst, q.keys),
                            keyBlock(b, loc, valueGrad, q.keyFirst, q.keys), true};
    blockBackward(b, loc, g, rows, keyBlock(b, loc, g.keys, q.keyFirst, q.keys),
                  keyBlock(b, loc, g.values, q.keyFirst, q.keys), q.mask(g), grads);
    queryGrad = putQueryBlock(b, loc, grads.query, queryGrad, first, count);
    keyGrad = putKeys(b, loc, grads.key, keyGrad, q.keyFirst);
    valueGrad = putKeys(b, loc, grads.value, valueGrad, q.keyFirst);
  };
  forEachKeyBlock(b, loc, a.queries, g.blockSize, {&queryGrad, &keyGrad, &valueGrad}, block);
  return {tensor::CollapseShapeOp::create(b, loc, queryGrad,
                                          SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}}),
          keyGrad, valueGrad, true};
}

struct AttentionGradLowering : OpRewritePattern<AttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionGradOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    GroupedAttention g(b, loc, op);
    const AttentionShape &a = g.shape;
    Value output = groupRows(b, loc, op.getOutput(), a);
    Value grad = groupRows(b, loc, op.getGrad(), a);
    Value lse = groupRows(b, loc, op.getLse(), a);
    Value lseGrad = groupRows(b, loc, op.getLseGrad(), a);

    // rowsum(dO * O) - dlse: what each row's probabilities' gradient is
    // measured against (the derivative of the softmax's normalisation).
    Value dot = buildReduction(b, loc, {grad, output}, {2}, 0.0,
                               [](OpBuilder &nb, Location x, ValueRange v) {
                                 ScalarMath math(nb, x);
                                 return math.add(v[2], math.mul(v[0], v[1]));
                               });
    Value center =
        rowElementwise(b, loc, {dot, lseGrad}, [](OpBuilder &nb, Location x, ValueRange v) {
          return ScalarMath(nb, x).sub(v[0], v[1]);
        });
    RowGradients rows = {g.queries, grad, lse, center};
    BlockGradients grads;
    if (g.window) {
      grads = windowedBackward(b, loc, g, rows);
    } else {
      RankedTensorType keysType = tensorType(g.keys);
      grads = {buildFilled(b, loc, tensorType(g.queries), 0.0),
               tensor::EmptyOp::create(b, loc, keysType.getShape(), b.getF32Type()),
               tensor::EmptyOp::create(b, loc, keysType.getShape(), b.getF32Type()), false};
      blockBackward(b, loc, g, rows, g.keys, g.values, g.wholeMask(b), grads);
    }
    rewriter.replaceOp(op, {ungroupRows(b, loc, grads.query, op.getQueryGrad().getType(), a),
                            ungroupKeys(b, loc, grads.key, op.getKeyGrad().getType()),
                            ungroupKeys(b, loc, grads.value, op.getValueGrad().getType())});
    return success();
  }
};

} // namespace

void mlir::fsdp::populateFSDPAttentionToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<AttentionLowering, AttentionGradLowering>(patterns.getContext());
}
