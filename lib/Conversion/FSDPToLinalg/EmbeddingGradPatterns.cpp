//===- EmbeddingGradPatterns.cpp - the embedding gradient's scatter-add ---===//
//
// table_grad[ids[n], d] += grad[n, d]: two positions may name the same row,
// so the rows cannot simply be written in parallel. On a CPU one loop over
// the positions in order is the fastest there is. On a GPU that loop is one
// thread per column walking every position (16,384 in order for the 1B
// Llama), so there the positions are sorted by row first, with gathers only:
//
//   keys     [N]    ids[n] * N + n: distinct, ordered by (row, position)
//   merge    [N]    ceil(log2 N) rounds, each merging sorted runs pairwise
//                   (every output finds its element by a merge-path search)
//   pieces   [N]    a piece: positions of one row within one chunk of
//                   kPieceRows sorted positions; its length at its start
//   sums     [N, D] each piece's rows added in position order (f32)
//   starts   [V+1]  where each table row's positions begin in sorted order
//   result   [V, D] each row's pieces added in order, rounded once
//
// Every loop a thread runs has at most max(kPieceRows, N / kPieceRows) trips,
// and every sum has one order: the same bits every run.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include "fsdp/Conversion/FSDPToLinalg.h"
#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// Sorted positions summed together by one thread: a piece never crosses a
/// multiple of this in sorted order, so no thread adds more rows in order.
constexpr int64_t kPieceRows = 256;

/// The halvings a binary search needs to close an interval of `size`.
int64_t searchTrips(int64_t size) { return llvm::Log2_64(std::max<int64_t>(size, 1)) + 1; }

/// Integer arithmetic in a generic's body. Positions, lengths and the
/// searches' bounds are i32 and become index only to address a tensor: a
/// kernel's index values then stay provably within 32 bits
/// (fsdp-cuda-narrow-kernel-indices), which a loop-carried or loaded index
/// would not.
class IntMath {
public:
  IntMath(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value i32(int64_t value) { return constant(b.getI32Type(), value); }
  Value constant(Type type, int64_t value) {
    return arith::ConstantIntOp::create(b, loc, type, value);
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  /// Quotient and remainder of non-negative values.
  Value div(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value rem(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value less(Value x, Value y) { return compare(arith::CmpIPredicate::slt, x, y); }
  Value equal(Value x, Value y) { return compare(arith::CmpIPredicate::eq, x, y); }
  Value notEqual(Value x, Value y) { return compare(arith::CmpIPredicate::ne, x, y); }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value either(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value truth() { return arith::ConstantIntOp::create(b, loc, 1, 1); }
  Value select(Value condition, Value x, Value y) {
    return arith::SelectOp::create(b, loc, condition, x, y);
  }
  /// The enclosing generic's iteration index `dim`, as i32.
  Value position(int64_t dim) { return to(b.getI32Type(), linalg::IndexOp::create(b, loc, dim)); }
  /// An i32 as an index, to address a tensor.
  Value toIndex(Value x) { return arith::IndexCastOp::create(b, loc, b.getIndexType(), x); }
  /// An integer or index converted to the integer `type` (sign-extended or
  /// truncated: every value here fits both).
  Value to(Type type, Value x) {
    if (x.getType() == type)
      return x;
    if (x.getType().isIndex())
      return arith::IndexCastOp::create(b, loc, type, x);
    if (x.getType().getIntOrFloatBitWidth() < type.getIntOrFloatBitWidth())
      return arith::ExtSIOp::create(b, loc, type, x);
    return arith::TruncIOp::create(b, loc, type, x);
  }

  /// The first position in [lo, hi) where `goesRight` is false, or hi: the
  /// predicate holds on a prefix of the interval. A fixed number of halvings
  /// (enough for an interval of `maxSize`), so the loop's trips are known.
  Value search(Value lo, Value hi, int64_t maxSize, function_ref<Value(Value)> goesRight) {
    auto index = [&](int64_t value) { return arith::ConstantIndexOp::create(b, loc, value); };
    auto loop = scf::ForOp::create(
        b, loc, index(0), index(searchTrips(maxSize)), index(1), ValueRange{lo, hi},
        [&](OpBuilder &nested, Location nestedLoc, Value, ValueRange bounds) {
          IntMath m(nested, nestedLoc);
          Value open = m.less(bounds[0], bounds[1]);
          Value mid = m.div(m.add(bounds[0], bounds[1]), m.i32(2));
          Value right = goesRight(mid);
          Value newLo = m.select(m.both(open, right), m.add(mid, m.i32(1)), bounds[0]);
          Value newHi = m.select(open, m.select(right, bounds[1], mid), bounds[1]);
          scf::YieldOp::create(nested, nestedLoc, ValueRange{newLo, newHi});
        });
    return loop.getResult(0);
  }

  /// The f32 sum, in order, of `term(k)` for k = 0 .. bound - 1 (an i32
  /// `bound` at most `maxTrips`, which the loop states as min(bound, maxTrips)
  /// so that its longest chain is known: KernelCost's largestValueOf).
  Value orderedSum(Value bound, int64_t maxTrips, Type f32,
                   function_ref<Value(OpBuilder &, Location, Value)> term) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = scf::ForOp::create(b, loc, zero, toIndex(min(bound, i32(maxTrips))), one,
                                   ValueRange{constantFloat(b, loc, f32, 0.0)},
                                   [&](OpBuilder &inner, Location l, Value t, ValueRange sum) {
                                     Value k = IntMath(inner, l).to(inner.getI32Type(), t);
                                     Value next =
                                         arith::AddFOp::create(inner, l, sum[0], term(inner, l, k));
                                     scf::YieldOp::create(inner, l, next);
                                   });
    return loop.getResult(0);
  }

private:
  Value compare(arith::CmpIPredicate predicate, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, predicate, x, y);
  }

  OpBuilder &b;
  Location loc;
};

/// The generics of one sorted scatter-add of `positions` rows into a table
/// of `rows` rows.
class SortedScatterBuilder {
public:
  SortedScatterBuilder(OpBuilder &b, Location loc, int64_t positions, int64_t rows)
      : b(b), loc(loc), positions(positions),
        // id * N + n for every id in [0, rows] (rowStarts' bound) and n < N.
        keyType(b.getIntegerType(
            (rows + 1) * positions <= std::numeric_limits<int32_t>::max() ? 32 : 64)) {}

  /// ids[n] * N + n, sorted.
  Value sortedKeys(Value ids) {
    auto type = RankedTensorType::get({positions}, keyType);
    Value keys =
        buildElementwise(b, loc, type, ids, [&](OpBuilder &nested, Location l, ValueRange args) {
          IntMath m(nested, l);
          Value n = m.to(keyType, m.position(0));
          return m.add(m.mul(m.to(keyType, args[0]), m.constant(keyType, positions)), n);
        });
    for (int64_t width = 1; width < positions; width *= 2)
      keys = mergeRound(keys, width);
    return keys;
  }

  /// At each piece's first sorted position its length, 0 elsewhere.
  Value pieceLengths(Value sorted) {
    auto type = RankedTensorType::get({positions}, b.getI32Type());
    return buildParallel(b, loc, type, {}, {}, [&](OpBuilder &nested, Location l, ValueRange) {
      IntMath m(nested, l);
      Value p = m.position(0);
      Value row = rowOf(m, keyAt(nested, l, sorted, p));
      Value previous = rowOf(m, keyAt(nested, l, sorted, m.sub(m.max(p, m.i32(1)), m.i32(1))));
      Value piece = m.i32(kPieceRows);
      Value starts = m.either(m.equal(m.rem(p, piece), m.i32(0)), m.notEqual(previous, row));
      Value chunkEnd = m.min(m.i32(positions), m.mul(m.add(m.div(p, piece), m.i32(1)), piece));
      Value nextRow = m.mul(m.add(row, m.constant(keyType, 1)), m.constant(keyType, positions));
      Value end = m.search(p, chunkEnd, kPieceRows, [&](Value mid) {
        return m.less(keyAt(nested, l, sorted, mid), nextRow);
      });
      return m.select(starts, m.sub(end, p), m.i32(0));
    });
  }

  /// At each piece's start, its gradient rows added in position order.
  Value pieceSums(Value sorted, Value lengths, Value grad) {
    RankedTensorType type = computeTensorType(llvm::cast<RankedTensorType>(grad.getType()));
    return buildParallel(b, loc, type, {}, {}, [&](OpBuilder &nested, Location l, ValueRange) {
      IntMath m(nested, l);
      Value p = m.position(0);
      Value d = linalg::IndexOp::create(nested, l, 1);
      Value length = tensor::ExtractOp::create(nested, l, lengths, m.toIndex(p));
      return m.orderedSum(
          length, kPieceRows, type.getElementType(), [&](OpBuilder &inner, Location il, Value k) {
            IntMath im(inner, il);
            Value key = keyAt(inner, il, sorted, im.add(p, k));
            Value position =
                im.to(inner.getI32Type(), im.rem(key, im.constant(keyType, positions)));
            return gatherElement(inner, il, grad, ValueRange{im.toIndex(position), d});
          });
    });
  }

  /// Where the sorted positions of each table row begin, and the end of the
  /// last.
  Value rowStarts(Value sorted, int64_t rows) {
    auto type = RankedTensorType::get({rows + 1}, b.getI32Type());
    return buildParallel(b, loc, type, {}, {}, [&](OpBuilder &nested, Location l, ValueRange) {
      IntMath m(nested, l);
      Value row = m.to(keyType, m.position(0));
      Value firstKey = m.mul(row, m.constant(keyType, positions));
      return m.search(m.i32(0), m.i32(positions), positions,
                      [&](Value mid) { return m.less(keyAt(nested, l, sorted, mid), firstKey); });
    });
  }

  /// Each table row's pieces added in order, rounded once to `tableType`.
  Value rowSums(Value sums, Value starts, RankedTensorType tableType) {
    int64_t chunks = llvm::divideCeil(positions, kPieceRows);
    return buildParallel(b, loc, tableType, {}, {}, [&](OpBuilder &nested, Location l, ValueRange) {
      IntMath m(nested, l);
      Value row = m.position(0);
      Value d = linalg::IndexOp::create(nested, l, 1);
      Value lo = tensor::ExtractOp::create(nested, l, starts, m.toIndex(row));
      Value hi = tensor::ExtractOp::create(nested, l, starts, m.toIndex(m.add(row, m.i32(1))));
      Value piece = m.i32(kPieceRows);
      Value firstChunk = m.div(lo, piece);
      // (hi - 1) / L - lo / L + 1 pieces when the row has positions.
      Value spanned =
          m.add(m.sub(m.div(m.max(m.sub(hi, m.i32(1)), lo), piece), firstChunk), m.i32(1));
      Value pieces = m.select(m.less(lo, hi), spanned, m.i32(0));
      return m.orderedSum(
          pieces, chunks, computeType(tableType.getElementType()),
          [&](OpBuilder &inner, Location il, Value k) -> Value {
            IntMath im(inner, il);
            Value later = im.mul(im.add(firstChunk, k), piece);
            Value start = im.select(im.equal(k, im.i32(0)), lo, later);
            return tensor::ExtractOp::create(inner, il, sums, ValueRange{im.toIndex(start), d});
          });
    });
  }

private:
  /// One round: runs of `width` sorted keys merged pairwise into runs of
  /// twice that. Output j of a pair of runs A, B is min(A[i], B[j - i]) where
  /// i, the number of A's keys among the first j outputs, is the first i
  /// with A[i] > B[j - 1 - i] (the merge path; keys are distinct).
  Value mergeRound(Value keys, int64_t width) {
    auto type = llvm::cast<RankedTensorType>(keys.getType());
    return buildParallel(b, loc, type, {}, {}, [&](OpBuilder &nested, Location l, ValueRange) {
      IntMath m(nested, l);
      Value k = m.position(0);
      Value n = m.i32(positions), w = m.i32(width), pair = m.i32(2 * width);
      Value base = m.mul(m.div(k, pair), pair);
      Value second = m.add(base, w);
      Value lengthA = m.min(w, m.sub(n, base));
      Value lengthB = m.min(w, m.max(m.sub(n, second), m.i32(0)));
      Value j = m.sub(k, base);
      Value lo = m.max(m.sub(j, lengthB), m.i32(0)), hi = m.min(j, lengthA);
      Value i = m.search(lo, hi, width, [&](Value mid) {
        Value a = keyAt(nested, l, keys, m.add(base, mid));
        Value bKey = keyAt(nested, l, keys, m.sub(m.add(second, j), m.add(mid, m.i32(1))));
        return m.less(a, bKey);
      });
      Value a = keyAt(nested, l, keys, m.add(base, i));
      Value bKey = keyAt(nested, l, keys, m.sub(m.add(second, j), i));
      // A's key when A has keys left and B has none or a larger one.
      Value bLeft = m.less(m.sub(j, i), lengthB);
      Value takeA = m.both(m.less(i, lengthA), m.select(bLeft, m.less(a, bKey), m.truth()));
      return m.select(takeA, a, bKey);
    });
  }

  /// The key at the i32 `position`, clamped into the tensor: a search's
  /// probe past either end (whose result it does not use) reads a real key.
  Value keyAt(OpBuilder &nested, Location l, Value keys, Value position) {
    IntMath m(nested, l);
    Value inside = m.min(m.max(position, m.i32(0)), m.i32(positions - 1));
    return tensor::ExtractOp::create(nested, l, keys, m.toIndex(inside));
  }

  Value rowOf(IntMath &m, Value key) { return m.div(key, m.constant(keyType, positions)); }

  OpBuilder &b;
  Location loc;
  int64_t positions;
  Type keyType;
};

/// ids and grad as [N] and [N, D].
std::pair<Value, Value> flatOperands(OpBuilder &b, EmbeddingGradOp op) {
  RankedTensorType idsType = op.getIndices().getType();
  int64_t positions = idsType.getNumElements(), features = op.getType().getDimSize(1);
  Value ids = reshapeTo(b, op.getLoc(), op.getIndices(),
                        RankedTensorType::get({positions}, idsType.getElementType()));
  auto gradType = llvm::cast<RankedTensorType>(op.getGrad().getType());
  Value grad = reshapeTo(b, op.getLoc(), op.getGrad(),
                         RankedTensorType::get({positions, features}, gradType.getElementType()));
  return {ids, grad};
}

/// The positions in order, each row added into an f32 table.
struct OrderedEmbeddingGradLowering : OpRewritePattern<EmbeddingGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingGradOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType tableType = op.getType();
    auto [ids, grad] = flatOperands(rewriter, op);
    int64_t positions = op.getIndices().getType().getNumElements(),
            features = tableType.getDimSize(1);
    // Rows of one index add up in f32; the table gradient is rounded once.
    RankedTensorType sumType = computeTensorType(tableType);
    Value zeros = buildFilled(rewriter, loc, sumType, 0.0);
    auto index = [&](int64_t value) {
      return arith::ConstantIndexOp::create(rewriter, loc, value).getResult();
    };
    Value zero = index(0), one = index(1);
    auto outer = scf::ForOp::create(
        rewriter, loc, zero, index(positions), one, ValueRange{zeros},
        [&](OpBuilder &b, Location l, Value n, ValueRange acc) {
          Value id = tensor::ExtractOp::create(b, l, ids, n);
          Value row = arith::IndexCastOp::create(b, l, b.getIndexType(), id);
          auto inner = scf::ForOp::create(
              b, l, zero, index(features), one, acc,
              [&](OpBuilder &ib, Location il, Value d, ValueRange table) {
                Value g = gatherElement(ib, il, grad, ValueRange{n, d});
                Value old = tensor::ExtractOp::create(ib, il, table[0], ValueRange{row, d});
                Value sum = arith::AddFOp::create(ib, il, old, g);
                Value updated = tensor::InsertOp::create(ib, il, sum, table[0], ValueRange{row, d});
                scf::YieldOp::create(ib, il, updated);
              });
          scf::YieldOp::create(b, l, inner.getResults());
        });
    rewriter.replaceOp(op, castTo(rewriter, loc, outer.getResult(0), tableType));
    return success();
  }
};

/// The positions sorted by row, then summed in pieces (the file's comment).
struct SortedEmbeddingGradLowering : OpRewritePattern<EmbeddingGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingGradOp op, PatternRewriter &rewriter) const override {
    RankedTensorType tableType = op.getType();
    auto [ids, grad] = flatOperands(rewriter, op);
    SortedScatterBuilder scatter(rewriter, op.getLoc(), op.getIndices().getType().getNumElements(),
                                 tableType.getDimSize(0));
    Value sorted = scatter.sortedKeys(ids);
    Value sums = scatter.pieceSums(sorted, scatter.pieceLengths(sorted), grad);
    Value starts = scatter.rowStarts(sorted, tableType.getDimSize(0));
    rewriter.replaceOp(op, scatter.rowSums(sums, starts, tableType));
    return success();
  }
};

} // namespace

void mlir::fsdp::populateFSDPEmbeddingGradToLinalgPatterns(RewritePatternSet &patterns,
                                                           bool sortPositions) {
  if (sortPositions)
    patterns.add<SortedEmbeddingGradLowering>(patterns.getContext());
  else
    patterns.add<OrderedEmbeddingGradLowering>(patterns.getContext());
}
