//===- LinalgBuilders.h - helpers to build linalg generics ------*- C++ -*-===//
//
// The fsdp lowering writes almost everything as linalg.generic ops; these
// helpers build them from a result shape, indexing maps and a scalar body.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_CONVERSION_FSDPTOLINALG_LINALGBUILDERS_H
#define FSDP_CONVERSION_FSDPTOLINALG_LINALGBUILDERS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

namespace mlir::fsdp {

/// Builds the scalar body of a generic from its block arguments (one per
/// input, then one per output; bf16 ones widened to f32).
using BodyBuilder = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// The map that reads an operand of `shape` broadcast, NumPy-style, to an
/// iteration space of `resultShape`: aligned from the last dimension; size-1
/// dimensions that are broadcast read index 0.
AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> shape,
                       ArrayRef<int64_t> resultShape);

/// The map from an iteration space of `rank` dimensions to the same space
/// without the dimensions in `dropped` (the shape of a reduction's result).
AffineMap droppedDimsMap(MLIRContext *ctx, int64_t rank, ArrayRef<int64_t> dropped);

/// The map that reads the one element of a [1] tensor (a tensor rank's
/// first index of its block) from every point of a `rank`-dimensional space.
AffineMap singleElementMap(MLIRContext *ctx, int64_t rank);

/// A tensor of `type` filled with `value`.
Value buildFilled(OpBuilder &b, Location loc, RankedTensorType type, double value);

/// An elementwise generic over `resultType` whose inputs are broadcast to it.
Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange inputs, BodyBuilder body);

/// A generic over the iteration space of `resultType` with explicit maps for
/// the inputs (the output map is the identity).
Value buildParallel(OpBuilder &b, Location loc, RankedTensorType resultType,
                    ValueRange inputs, ArrayRef<AffineMap> inputMaps, BodyBuilder body);

/// Reduces `inputs` (all of one shape) over `dims`, starting from `init`; the
/// body receives the inputs' elements and the accumulator, and returns the new
/// accumulator. The accumulator is f32 for bf16 inputs (computeType).
Value buildReduction(OpBuilder &b, Location loc, ValueRange inputs,
                     ArrayRef<int64_t> dims, double init, BodyBuilder body);

/// As buildReduction, over the iteration space of `space` (its shape; the
/// accumulator is f32 for a bf16 element type), reading `inputs` through
/// `inputMaps`: operands broadcast along the space, as a norm's weights and
/// its rows' statistics are.
Value buildMappedReduction(OpBuilder &b, Location loc, RankedTensorType space, ValueRange inputs,
                           ArrayRef<AffineMap> inputMaps, ArrayRef<int64_t> dims, double init,
                           BodyBuilder body);

/// As buildReduction, from the values of `accumulator` (f32, the shape of
/// the result) instead of a constant: a running reduction continued.
Value buildReductionInto(OpBuilder &b, Location loc, ValueRange inputs, ArrayRef<int64_t> dims,
                         Value accumulator, BodyBuilder body);

/// The element type arithmetic runs in for `element`: f32 for bf16, which
/// generic bodies widen on reading and round once on writing
/// (docs/MixedPrecision.md, section 2).
Type computeType(Type element);
/// `type` with computeType's element type: for intermediate tensors of an op,
/// which are never rounded.
RankedTensorType computeTensorType(RankedTensorType type);
/// `value` rounded (or widened) to `type`'s element type; itself if it has it.
Value castTo(OpBuilder &b, Location loc, Value value, RankedTensorType type);

/// The ranked tensor type of a value the fsdp ops produce.
RankedTensorType tensorType(Value value);

/// Merges every dimension but the last `keep` into one: [a, b, ..., K] -> [a*b*..., K]
/// for keep = 1, a flat vector for keep = 0. Returns `value` when already so.
Value collapseLeading(OpBuilder &b, Location loc, Value value, int64_t keep);

/// The inverse of collapseLeading: splits the leading dimension of `value`
/// back into those of `type`.
Value expandLeading(OpBuilder &b, Location loc, Value value, RankedTensorType type,
                    int64_t keep);

/// Any shape to any shape of the same element count, row-major: through the
/// flat vector, which bufferizes to views, never copies.
Value reshapeTo(OpBuilder &b, Location loc, Value input, RankedTensorType target);

/// A floating-point constant of `type`.
Value constantFloat(OpBuilder &b, Location loc, Type type, double value);

/// The iteration indices of the enclosing generic (index values), one per
/// dimension of its `rank`-dimensional space: where a gather starts from.
SmallVector<Value> iterationIndices(OpBuilder &b, Location loc, int64_t rank);

/// The element of `tensor` at `indices`, read inside a generic's body and
/// widened to computeType as the body's block arguments are (bf16 exactly).
Value gatherElement(OpBuilder &b, Location loc, Value tensor, ValueRange indices);

/// All dimensions but the last: the leading dimensions of a normalisation.
SmallVector<int64_t> leadingDims(int64_t rank);

/// Scalar floating-point arithmetic at one location, for generic bodies.
class ScalarMath {
public:
  ScalarMath(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value add(Value x, Value y);
  Value sub(Value x, Value y);
  Value mul(Value x, Value y);
  Value div(Value x, Value y);
  Value max(Value x, Value y);
  Value min(Value x, Value y);
  Value exp(Value x);
  Value log(Value x);
  Value tanh(Value x);
  Value sqrt(Value x);
  Value rsqrt(Value x);
  /// `x > y` (ordered).
  Value greater(Value x, Value y);
  Value select(Value condition, Value ifTrue, Value ifFalse);
  /// `x > y` for signed integers.
  Value greaterInt(Value x, Value y);
  /// A constant of `like`'s type.
  Value constant(Value like, double value);
  /// An index-valued iteration index of the enclosing generic, as i64.
  Value index(int64_t dim);
  /// An integer converted to index.
  Value toIndex(Value integer);
  /// A signed integer widened to i64 (itself if it is one).
  Value toI64(Value integer);
  /// An i64 constant.
  Value i64(int64_t value);

private:
  OpBuilder &b;
  Location loc;
};

} // namespace mlir::fsdp

#endif // FSDP_CONVERSION_FSDPTOLINALG_LINALGBUILDERS_H
