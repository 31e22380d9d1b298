//===- LinalgBuilders.cpp - helpers to build linalg generics --------------===//

#include "LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"

using namespace mlir;
using namespace mlir::fsdp;

AffineMap mlir::fsdp::broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> shape,
                                   ArrayRef<int64_t> resultShape) {
  int64_t rank = resultShape.size(), lead = rank - shape.size();
  SmallVector<AffineExpr> exprs;
  for (auto [i, size] : llvm::enumerate(shape)) {
    int64_t dim = lead + i;
    exprs.push_back(size == 1 && resultShape[dim] != 1 ? getAffineConstantExpr(0, ctx)
                                                       : getAffineDimExpr(dim, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

AffineMap mlir::fsdp::droppedDimsMap(MLIRContext *ctx, int64_t rank,
                                     ArrayRef<int64_t> dropped) {
  SmallVector<AffineExpr> exprs;
  for (int64_t dim = 0; dim < rank; ++dim)
    if (!llvm::is_contained(dropped, dim))
      exprs.push_back(getAffineDimExpr(dim, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

Value mlir::fsdp::constantFloat(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

Value mlir::fsdp::buildFilled(OpBuilder &b, Location loc, RankedTensorType type,
                              double value) {
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  Value scalar = constantFloat(b, loc, type.getElementType(), value);
  return linalg::FillOp::create(b, loc, scalar, empty).getResult(0);
}

SmallVector<Value> mlir::fsdp::iterationIndices(OpBuilder &b, Location loc, int64_t rank) {
  SmallVector<Value> indices;
  for (int64_t dim = 0; dim < rank; ++dim)
    indices.push_back(linalg::IndexOp::create(b, loc, dim));
  return indices;
}

Value mlir::fsdp::gatherElement(OpBuilder &b, Location loc, Value tensor, ValueRange indices) {
  Value element = tensor::ExtractOp::create(b, loc, tensor, indices);
  Type type = computeType(element.getType());
  if (type == element.getType())
    return element;
  return arith::ExtFOp::create(b, loc, type, element);
}

AffineMap mlir::fsdp::singleElementMap(MLIRContext *ctx, int64_t rank) {
  return AffineMap::get(rank, 0, {getAffineConstantExpr(0, ctx)}, ctx);
}

Type mlir::fsdp::computeType(Type element) {
  return element.isBF16() ? Float32Type::get(element.getContext()) : element;
}

RankedTensorType mlir::fsdp::computeTensorType(RankedTensorType type) {
  return type.clone(computeType(type.getElementType()));
}

Value mlir::fsdp::castTo(OpBuilder &b, Location loc, Value value, RankedTensorType type) {
  if (value.getType() == type)
    return value;
  return buildElementwise(b, loc, type, value,
                          [](OpBuilder &, Location, ValueRange args) { return args[0]; });
}

/// Creates a generic and its body; the body's value is yielded. The body
/// computes in f32 from bf16 elements, widened exactly, and its value is
/// rounded once to the output's element type (docs/MixedPrecision.md).
static Value buildGeneric(OpBuilder &b, Location loc, ValueRange inputs, Value init,
                          ArrayRef<AffineMap> maps,
                          ArrayRef<utils::IteratorType> iterators, BodyBuilder body) {
  Type output = llvm::cast<RankedTensorType>(init.getType()).getElementType();
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), inputs, init, maps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        SmallVector<Value> widened;
        for (Value arg : args)
          widened.push_back(arg.getType().isBF16()
                                ? arith::ExtFOp::create(nested, nestedLoc,
                                                        computeType(arg.getType()), arg)
                                : arg);
        Value result = body(nested, nestedLoc, widened);
        if (result.getType() != output)
          result = arith::TruncFOp::create(nested, nestedLoc, output, result);
        linalg::YieldOp::create(nested, nestedLoc, result);
      });
  return generic.getResult(0);
}

Value mlir::fsdp::buildParallel(OpBuilder &b, Location loc, RankedTensorType resultType,
                                ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                                BodyBuilder body) {
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(b.getMultiDimIdentityMap(resultType.getRank()));
  SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                             utils::IteratorType::parallel);
  Value init = tensor::EmptyOp::create(b, loc, resultType.getShape(),
                                       resultType.getElementType());
  return buildGeneric(b, loc, inputs, init, maps, iterators, body);
}

Value mlir::fsdp::buildElementwise(OpBuilder &b, Location loc,
                                   RankedTensorType resultType, ValueRange inputs,
                                   BodyBuilder body) {
  SmallVector<AffineMap> maps;
  for (Value input : inputs)
    maps.push_back(broadcastMap(b.getContext(),
                                llvm::cast<RankedTensorType>(input.getType()).getShape(),
                                resultType.getShape()));
  return buildParallel(b, loc, resultType, inputs, maps, body);
}

/// The reduction over `dims` of a `rank`-dimensional iteration space, reading
/// `inputs` through `inputMaps`, into `accumulator`.
static Value reduceInto(OpBuilder &b, Location loc, int64_t rank, ValueRange inputs,
                        ArrayRef<AffineMap> inputMaps, ArrayRef<int64_t> dims, Value accumulator,
                        BodyBuilder body) {
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(droppedDimsMap(b.getContext(), rank, dims));
  SmallVector<utils::IteratorType> iterators;
  for (int64_t dim = 0; dim < rank; ++dim)
    iterators.push_back(llvm::is_contained(dims, dim) ? utils::IteratorType::reduction
                                                      : utils::IteratorType::parallel);
  return buildGeneric(b, loc, inputs, accumulator, maps, iterators, body);
}

Value mlir::fsdp::buildMappedReduction(OpBuilder &b, Location loc, RankedTensorType space,
                                       ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                                       ArrayRef<int64_t> dims, double init, BodyBuilder body) {
  SmallVector<int64_t> kept;
  for (int64_t dim = 0; dim < space.getRank(); ++dim)
    if (!llvm::is_contained(dims, dim))
      kept.push_back(space.getDimSize(dim));
  // Accumulated in f32 whatever the inputs' type.
  auto resultType = RankedTensorType::get(kept, computeType(space.getElementType()));
  return reduceInto(b, loc, space.getRank(), inputs, inputMaps, dims,
                    buildFilled(b, loc, resultType, init), body);
}

Value mlir::fsdp::buildReduction(OpBuilder &b, Location loc, ValueRange inputs,
                                 ArrayRef<int64_t> dims, double init, BodyBuilder body) {
  auto inputType = llvm::cast<RankedTensorType>(inputs.front().getType());
  SmallVector<AffineMap> maps(inputs.size(), b.getMultiDimIdentityMap(inputType.getRank()));
  return buildMappedReduction(b, loc, inputType, inputs, maps, dims, init, body);
}

Value mlir::fsdp::buildReductionInto(OpBuilder &b, Location loc, ValueRange inputs,
                                     ArrayRef<int64_t> dims, Value accumulator,
                                     BodyBuilder body) {
  int64_t rank = llvm::cast<RankedTensorType>(inputs.front().getType()).getRank();
  SmallVector<AffineMap> maps(inputs.size(), b.getMultiDimIdentityMap(rank));
  return reduceInto(b, loc, rank, inputs, maps, dims, accumulator, body);
}

RankedTensorType mlir::fsdp::tensorType(Value value) {
  return llvm::cast<RankedTensorType>(value.getType());
}

/// Reassociation that merges all dimensions but the last `keep` into one.
static SmallVector<ReassociationIndices> mergeLeading(int64_t rank, int64_t keep) {
  SmallVector<ReassociationIndices> groups(1);
  for (int64_t dim = 0; dim < rank - keep; ++dim)
    groups.front().push_back(dim);
  for (int64_t dim = rank - keep; dim < rank; ++dim)
    groups.push_back({dim});
  return groups;
}

Value mlir::fsdp::collapseLeading(OpBuilder &b, Location loc, Value value, int64_t keep) {
  int64_t rank = tensorType(value).getRank();
  if (rank == keep + 1)
    return value;
  return tensor::CollapseShapeOp::create(b, loc, value, mergeLeading(rank, keep));
}

Value mlir::fsdp::expandLeading(OpBuilder &b, Location loc, Value value,
                                RankedTensorType type, int64_t keep) {
  if (value.getType() == type)
    return value;
  return tensor::ExpandShapeOp::create(b, loc, type, value,
                                       mergeLeading(type.getRank(), keep));
}

SmallVector<int64_t> mlir::fsdp::leadingDims(int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(0, rank - 1));
}

Value ScalarMath::add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
Value ScalarMath::sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
Value ScalarMath::mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
Value ScalarMath::div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
Value ScalarMath::max(Value x, Value y) { return arith::MaximumFOp::create(b, loc, x, y); }
Value ScalarMath::min(Value x, Value y) { return arith::MinimumFOp::create(b, loc, x, y); }
Value ScalarMath::exp(Value x) { return math::ExpOp::create(b, loc, x); }
Value ScalarMath::log(Value x) { return math::LogOp::create(b, loc, x); }
Value ScalarMath::tanh(Value x) { return math::TanhOp::create(b, loc, x); }
Value ScalarMath::sqrt(Value x) { return math::SqrtOp::create(b, loc, x); }
// 1 / sqrt(x) rather than math.rsqrt, which has no libm function to lower to.
Value ScalarMath::rsqrt(Value x) { return div(constant(x, 1.0), sqrt(x)); }

Value ScalarMath::greater(Value x, Value y) {
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, y);
}

Value ScalarMath::select(Value condition, Value ifTrue, Value ifFalse) {
  return arith::SelectOp::create(b, loc, condition, ifTrue, ifFalse);
}

Value ScalarMath::constant(Value like, double value) {
  return constantFloat(b, loc, like.getType(), value);
}

Value ScalarMath::index(int64_t dim) {
  Value index = linalg::IndexOp::create(b, loc, dim);
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
}

Value ScalarMath::toIndex(Value integer) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), integer);
}

Value ScalarMath::toI64(Value integer) {
  if (integer.getType().isInteger(64))
    return integer;
  return arith::ExtSIOp::create(b, loc, b.getI64Type(), integer);
}

Value ScalarMath::i64(int64_t value) {
  return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(value));
}

Value ScalarMath::greaterInt(Value x, Value y) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, x, y);
}

Value mlir::fsdp::reshapeTo(OpBuilder &b, Location loc, Value input, RankedTensorType target) {
  if (input.getType() == target)
    return input;
  RankedTensorType from = tensorType(input);
  if (target.getRank() == 0 || from.getRank() == 0) {
    // Rank 0 <-> all-ones shapes need no grouping.
    if (target.getRank() == 0)
      return tensor::CollapseShapeOp::create(b, loc, target, input,
                                             ArrayRef<ReassociationIndices>{});
    return tensor::ExpandShapeOp::create(b, loc, target, input, ArrayRef<ReassociationIndices>{});
  }
  Value flat = collapseLeading(b, loc, input, 0);
  return expandLeading(b, loc, flat, target, 0);
}
