//===- FSDPOps.cpp - fsdp operations: verifiers and shape rules -----------===//

#include "fsdp/IR/FSDPOps.h"

#include "CrossEntropyShapes.h"

#include "fsdp/IR/FSDPOpInterfaces.cpp.inc"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fsdp;

/// Prints a shape as `4x8x16` (or `scalar`) inside diagnostics.
static std::string shapeString(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(shape, os, "x");
  return text;
}

/// Real-valued op attributes read and print like the dialect's attribute
/// parameters: the shortest decimal form that parses back to the same double.
static ParseResult parseF64(OpAsmParser &parser, FloatAttr &attr) {
  FailureOr<llvm::APFloat> value = parseF64Parameter(parser);
  if (failed(value))
    return failure();
  attr = parser.getBuilder().getF64FloatAttr(value->convertToDouble());
  return success();
}

static void printF64(OpAsmPrinter &printer, Operation *, FloatAttr attr) {
  printF64Parameter(printer, attr.getValue());
}

/// Shape-rule failures read like verifier errors: `'fsdp.matmul' op ...`. The
/// verifier reports them while checking the declared result type.
template <typename... Args>
static LogicalResult inferenceError(std::optional<Location> loc, StringRef opName,
                                    Args &&...args) {
  return emitOptionalError(loc, "'", opName, "' op ", std::forward<Args>(args)...);
}

//===----------------------------------------------------------------------===//
// Model tensors
//===----------------------------------------------------------------------===//

/// The element count of a static shape, or nothing when a dimension is below
/// 1 or the count overflows int64.
static std::optional<int64_t> elementCount(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    if (dim < 1 || llvm::MulOverflow(count, dim, count))
      return std::nullopt;
  return count;
}

bool mlir::fsdp::isModelTensorType(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  return tensor && !tensor.getEncoding() && elementCount(tensor.getShape());
}

//===----------------------------------------------------------------------===//
// ParamOp / UseOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verifySplitParts() {
  std::optional<ArrayRef<int64_t>> parts = getSplitParts();
  if (!parts)
    return success();
  if (!getSplitDim())
    return emitOpError("has parts but no split dimension");
  auto module = (*this)->getParentOfType<ModuleOp>();
  auto plan = module ? module->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName()) : nullptr;
  int64_t ranks = plan ? plan.getTensorParallel() : 1;
  int64_t whole = getTensorType().getDimSize(*getSplitDim()) * ranks, sum = 0;
  for (int64_t part : *parts) {
    if (part < 1 || part % ranks != 0)
      return emitOpError("part ") << part << " of the split dimension does not cut into " << ranks
                                  << " tensor ranks' equal blocks";
    sum += part;
  }
  if (parts->size() < 2 || (plan && sum != whole))
    return emitOpError("the parts of the split dimension must be two or more summing to its "
                       "whole size")
           << (plan ? " (" + std::to_string(whole) + ")" : std::string()) << ", got "
           << parts->size() << " summing to " << sum;
  return success();
}

LogicalResult ParamOp::verify() {
  auto type = llvm::dyn_cast<RankedTensorType>(getType());
  if (!type || !type.hasStaticShape() || type.getEncoding())
    return emitOpError("parameter type must be a statically shaped tensor without "
                       "encoding, got ")
           << getType();
  if (!type.getElementType().isF32() && !type.getElementType().isBF16())
    return emitOpError("parameter element type must be f32 or bf16, got ")
           << type.getElementType();
  if (!elementCount(type.getShape()))
    return emitOpError("parameter dimensions must be at least 1 and hold fewer than "
                       "2^63 elements, got ")
           << type;
  if (std::optional<StringRef> unit = getUnit(); unit && unit->empty())
    return emitOpError("unit name must not be empty");
  if (std::optional<int64_t> dim = getSplitDim(); dim && (*dim < 0 || *dim >= type.getRank()))
    return emitOpError("split dimension ") << *dim << " is not a dimension of " << type;
  if (getSplitDim() && getTensorLayout() == TensorLayout::Whole)
    return emitOpError("is split over the tensor ranks, but annotated 'tensor whole'");
  if (failed(verifySplitParts()))
    return failure();
  if (std::optional<int64_t> offset = getOffset()) {
    if (!getUnit())
      return emitOpError("an offset ('at') needs a unit");
    if (*offset < 0)
      return emitOpError("offset must not be negative, got ") << *offset;
  }
  return getInit().verifyForType(type, [&] { return emitOpError(); });
}

LogicalResult UseOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto param = symbolTable.lookupNearestSymbolFrom<ParamOp>(*this, getParamAttr());
  if (!param)
    return emitOpError("'") << getParam() << "' does not name an fsdp.param";
  if (param.getType() != getType())
    return emitOpError("type ")
           << getType() << " does not match the declaration of '" << getParam()
           << "' as " << param.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

namespace {
/// The two trailing dimensions of a matrix operand, after an optional swap.
struct MatrixDims {
  int64_t rows, cols;
};
} // namespace

static MatrixDims trailingMatrix(ArrayRef<int64_t> shape, bool transposed) {
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  return transposed ? MatrixDims{cols, rows} : MatrixDims{rows, cols};
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto lhs = llvm::cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = llvm::cast<RankedTensorType>(adaptor.getRhs().getType());
  if (lhs.getRank() < 2)
    return inferenceError(loc, MatmulOp::getOperationName(), "lhs must have rank 2 or more, got ", lhs);
  if (rhs.getRank() != 2)
    return inferenceError(loc, MatmulOp::getOperationName(), "rhs must be a matrix (rank 2), got ", rhs,
                             "; use fsdp.batch_matmul for batched operands");
  if (lhs.getElementType() != rhs.getElementType())
    return inferenceError(loc, MatmulOp::getOperationName(), "operand element types differ: ",
                             lhs.getElementType(), " and ", rhs.getElementType());
  MatrixDims a = trailingMatrix(lhs.getShape(), adaptor.getTransposeLhs());
  MatrixDims b = trailingMatrix(rhs.getShape(), adaptor.getTransposeRhs());
  if (a.cols != b.rows)
    return inferenceError(loc, MatmulOp::getOperationName(), "contraction sizes differ: lhs has ", a.cols,
                             " columns but rhs has ", b.rows, " rows");
  SmallVector<int64_t> shape(lhs.getShape().drop_back(2));
  shape.append({a.rows, b.cols});
  inferred.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

LogicalResult BatchMatmulOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  auto lhs = llvm::cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = llvm::cast<RankedTensorType>(adaptor.getRhs().getType());
  if (lhs.getRank() < 3 || rhs.getRank() != lhs.getRank())
    return inferenceError(loc, BatchMatmulOp::getOperationName(), "operands must have the same rank, 3 or more, got ",
                             lhs, " and ", rhs);
  if (lhs.getElementType() != rhs.getElementType())
    return inferenceError(loc, BatchMatmulOp::getOperationName(), "operand element types differ: ",
                             lhs.getElementType(), " and ", rhs.getElementType());
  ArrayRef<int64_t> batch = lhs.getShape().drop_back(2);
  if (batch != rhs.getShape().drop_back(2))
    return inferenceError(loc, BatchMatmulOp::getOperationName(), "batch dimensions differ: ", shapeString(batch),
                             " and ", shapeString(rhs.getShape().drop_back(2)));
  MatrixDims a = trailingMatrix(lhs.getShape(), adaptor.getTransposeLhs());
  MatrixDims b = trailingMatrix(rhs.getShape(), adaptor.getTransposeRhs());
  if (a.cols != b.rows)
    return inferenceError(loc, BatchMatmulOp::getOperationName(), "contraction sizes differ: lhs has ", a.cols,
                             " columns but rhs has ", b.rows, " rows");
  SmallVector<int64_t> shape(batch);
  shape.append({a.rows, b.cols});
  inferred.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static LogicalResult inferBroadcast(std::optional<Location> loc, StringRef opName,
                                    Value lhsValue,
                                    Value rhsValue,
                                    SmallVectorImpl<Type> &inferred) {
  auto lhs = llvm::cast<RankedTensorType>(lhsValue.getType());
  auto rhs = llvm::cast<RankedTensorType>(rhsValue.getType());
  if (lhs.getElementType() != rhs.getElementType())
    return inferenceError(loc, opName, "operand element types differ: ",
                             lhs.getElementType(), " and ", rhs.getElementType());
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(lhs.getShape(), rhs.getShape(), shape))
    return inferenceError(loc, opName, "shapes ", shapeString(lhs.getShape()), " and ",
                             shapeString(rhs.getShape()), " do not broadcast");
  inferred.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

LogicalResult AddOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return inferBroadcast(loc, getOperationName(), adaptor.getLhs(), adaptor.getRhs(),
                        inferred);
}

LogicalResult SubOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return inferBroadcast(loc, getOperationName(), adaptor.getLhs(), adaptor.getRhs(),
                        inferred);
}

LogicalResult MulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return inferBroadcast(loc, getOperationName(), adaptor.getLhs(), adaptor.getRhs(),
                        inferred);
}

LogicalResult DivOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return inferBroadcast(loc, getOperationName(), adaptor.getLhs(), adaptor.getRhs(),
                        inferred);
}

LogicalResult ScaleOp::verify() {
  if (!std::isfinite(getFactor().convertToDouble()))
    return emitOpError("factor must be finite");
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation and attention
//===----------------------------------------------------------------------===//

static LogicalResult verifyDimInRange(Operation *op, int64_t dim, int64_t rank) {
  if (dim >= rank)
    return op->emitOpError("dim ") << dim << " is out of range for rank " << rank;
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyDimInRange(*this, getDim(), getType().getRank());
}

LogicalResult SoftmaxGradOp::verify() {
  return verifyDimInRange(*this, getDim(), getType().getRank());
}

/// Checks an affine parameter of a normalisation over the last dimension.
static LogicalResult verifyNormParam(Operation *op, RankedTensorType input,
                                     Value param, StringRef name,
                                     llvm::APFloat eps) {
  if (input.getRank() < 1)
    return op->emitOpError("input must have rank 1 or more");
  auto type = llvm::cast<RankedTensorType>(param.getType());
  int64_t channels = input.getShape().back();
  if (type.getRank() != 1 || type.getDimSize(0) != channels)
    return op->emitOpError()
           << name << " must be "
           << RankedTensorType::get({channels}, input.getElementType())
           << " (the last dimension of the input), got " << type;
  double value = eps.convertToDouble();
  if (!(value > 0.0) || !std::isfinite(value))
    return op->emitOpError("eps must be positive and finite");
  return success();
}

LogicalResult LayerNormOp::verify() {
  auto input = getInput().getType();
  if (failed(verifyNormParam(*this, input, getGamma(), "gamma", getEpsAttr().getValue())))
    return failure();
  return verifyNormParam(*this, input, getBeta(), "beta", getEpsAttr().getValue());
}

LogicalResult RMSNormOp::verify() {
  return verifyNormParam(*this, getInput().getType(), getGamma(), "gamma",
                         getEpsAttr().getValue());
}

LogicalResult LayerNormGradOp::verify() {
  return verifyNormParam(*this, getInput().getType(), getGamma(), "gamma",
                         getEpsAttr().getValue());
}

LogicalResult RMSNormGradOp::verify() {
  return verifyNormParam(*this, getInput().getType(), getGamma(), "gamma",
                         getEpsAttr().getValue());
}

static LogicalResult verifySquareTrailingMatrix(Operation *op, RankedTensorType type) {
  ArrayRef<int64_t> shape = type.getShape();
  if (shape.size() < 2 || shape[shape.size() - 1] != shape[shape.size() - 2])
    return op->emitOpError("needs a square (query x key) trailing matrix, got ")
           << shapeString(shape);
  return success();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// Whether an optional attribute's value, if given, is positive and finite.
static bool positiveIfGiven(std::optional<llvm::APFloat> value) {
  return !value || (value->convertToDouble() > 0.0 && std::isfinite(value->convertToDouble()));
}

/// The shape rule of fsdp.attention and its gradient: `query` [B, Hq, T, D],
/// `key` and `value` [B, Hkv, S, D] of one element type, Hkv dividing Hq,
/// T = S when causal, a window only with causal, a positive finite scale and
/// soft cap. Returns the log-sum-exp type [B, Hq, T] x f32.
template <typename AdaptorT>
static FailureOr<RankedTensorType> checkAttention(function_ref<InFlightDiagnostic()> emitError,
                                                  AdaptorT op) {
  auto q = llvm::cast<RankedTensorType>(op.getQuery().getType());
  auto k = llvm::cast<RankedTensorType>(op.getKey().getType());
  auto v = llvm::cast<RankedTensorType>(op.getValue().getType());
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4) {
    emitError() << "query, key and value must be [batch, heads, positions, head_dim], got "
                << q << ", " << k << " and " << v;
    return failure();
  }
  if (q.getElementType() != k.getElementType() || q.getElementType() != v.getElementType()) {
    emitError() << "query, key and value must have one element type, got " << q << ", " << k
                << " and " << v;
    return failure();
  }
  if (k != v) {
    emitError() << "key and value must have the same shape, got " << k << " and " << v;
    return failure();
  }
  ArrayRef<int64_t> qs = q.getShape(), ks = k.getShape();
  if (qs[0] != ks[0] || qs[3] != ks[3]) {
    emitError() << "query and key must have the same batch and head_dim, got " << q << " and "
                << k;
    return failure();
  }
  if (qs[1] % ks[1] != 0) {
    emitError() << "the query's " << qs[1] << " heads must be a multiple of the key's "
                << ks[1] << " (grouped-query attention)";
    return failure();
  }
  if (op.getCausal() && qs[2] != ks[2]) {
    emitError() << "causal attention needs as many query as key positions, got " << qs[2]
                << " and " << ks[2];
    return failure();
  }
  if (op.getWindow() && !op.getCausal()) {
    emitError() << "a sliding window needs causal attention (it bounds how far back a "
                   "query looks)";
    return failure();
  }
  if (!positiveIfGiven(op.getScale())) {
    emitError() << "scale must be positive and finite, got " << op.getScale()->convertToDouble();
    return failure();
  }
  if (!positiveIfGiven(op.getSoftcap())) {
    emitError() << "softcap must be positive and finite, got "
                << op.getSoftcap()->convertToDouble();
    return failure();
  }
  return RankedTensorType::get({qs[0], qs[1], qs[2]}, Float32Type::get(q.getContext()));
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> lse = checkAttention(
      [&] {
        return mlir::emitError(loc ? *loc : UnknownLoc::get(adaptor.getQuery().getContext()),
                               "'fsdp.attention' op ");
      },
      adaptor);
  if (failed(lse))
    return failure();
  inferred.push_back(adaptor.getQuery().getType());
  inferred.push_back(*lse);
  return success();
}

int64_t mlir::fsdp::attentionScoredPairs(int64_t queries, int64_t keys,
                                         std::optional<int64_t> window, int64_t keyBlock) {
  if (!window)
    return queries * keys;
  int64_t pairs = 0;
  for (int64_t first = 0; first < queries; first += keyBlock) {
    int64_t count = std::min(keyBlock, queries - first);
    pairs += count * attentionWindowKeys(keys, *window, count);
  }
  return pairs;
}

double mlir::fsdp::attentionFusedPairs(int64_t queries, int64_t keys, bool causal,
                                       std::optional<int64_t> window) {
  auto t = static_cast<double>(queries);
  if (!causal)
    return t * static_cast<double>(keys);
  if (!window || *window >= queries)
    return t * t / 2;
  auto w = static_cast<double>(*window);
  return w * t - w * (w - 1) / 2;
}

double mlir::fsdp::attentionScale(std::optional<llvm::APFloat> scale,
                                  RankedTensorType query) {
  if (scale)
    return scale->convertToDouble();
  return 1.0 / std::sqrt(static_cast<double>(query.getShape()[3]));
}

LogicalResult AttentionGradOp::verify() {
  FailureOr<RankedTensorType> lse = checkAttention([&] { return emitOpError(); }, *this);
  if (failed(lse))
    return failure();
  if (getLse().getType() != *lse)
    return emitOpError("lse must be ") << *lse << ", got " << getLse().getType();
  return success();
}

LogicalResult CausalMaskOp::verify() {
  return verifySquareTrailingMatrix(*this, getType());
}

LogicalResult CausalMaskGradOp::verify() {
  return verifySquareTrailingMatrix(*this, getType());
}

int64_t RopeOp::getRotaryDimValue() {
  return getRotaryDim().value_or(getType().getShape().back());
}

LogicalResult RopeOp::verify() {
  ArrayRef<int64_t> shape = getType().getShape();
  if (shape.size() < 2)
    return emitOpError("needs positions and features: rank 2 or more, got ") << shape.size();
  int64_t rank = static_cast<int64_t>(shape.size());
  if (static_cast<int64_t>(getPositions()) >= rank - 1)
    return emitOpError("positions must be a dimension before the last (the features), got ")
           << getPositions() << " of rank " << rank;
  double theta = getTheta().convertToDouble();
  if (!std::isfinite(theta) || !(theta > 1.0))
    return emitOpError("theta must be finite and above 1, got ") << theta;
  int64_t rotary = getRotaryDimValue();
  if (rotary > shape.back() || rotary % 2 != 0)
    return emitOpError("rotates an even number of features, at most the ")
           << shape.back() << " of the last dimension; got " << rotary;
  int scalings = !!getLinearScalingAttr() + !!getScalingAttr() + !!getYarnAttr();
  if (scalings > 1)
    return emitOpError("takes one frequency scaling, linear, Llama 3's or YaRN's, not two");
  if (!positiveIfGiven(getLinearScaling()))
    return emitOpError("linear_scaling must be positive and finite, got ")
           << getLinearScaling()->convertToDouble();
  // Positions are f32 in the angle: exact only below 2^24.
  if (shape[getPositions()] > (int64_t{1} << 24))
    return emitOpError("positions must be at most 2^24, got ") << shape[getPositions()];
  return success();
}

//===----------------------------------------------------------------------===//
// Lookup and layout
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto table = llvm::cast<RankedTensorType>(adaptor.getTable().getType());
  auto indices = llvm::cast<RankedTensorType>(adaptor.getIndices().getType());
  if (table.getRank() != 2)
    return inferenceError(loc, EmbeddingOp::getOperationName(), "table must be [rows, features], got ", table);
  SmallVector<int64_t> shape(indices.getShape());
  shape.push_back(table.getDimSize(1));
  inferred.push_back(RankedTensorType::get(shape, table.getElementType()));
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  RankedTensorType table = getType();
  if (table.getRank() != 2)
    return emitOpError("table gradient must be [rows, features], got ") << table;
  SmallVector<int64_t> rows(getIndices().getType().getShape());
  rows.push_back(table.getDimSize(1));
  auto expected = RankedTensorType::get(rows, table.getElementType());
  if (expected != getGrad().getType())
    return emitOpError("gradient type ")
           << getGrad().getType() << " does not match the embedding output " << expected;
  return success();
}

LogicalResult BroadcastOp::verify() {
  ArrayRef<int64_t> from = getInput().getType().getShape();
  ArrayRef<int64_t> to = getType().getShape();
  SmallVector<int64_t> shape;
  if (from.size() > to.size() ||
      !OpTrait::util::getBroadcastedShape(from, to, shape) || ArrayRef(shape) != to)
    return emitOpError("cannot broadcast ")
           << shapeString(from) << " to " << shapeString(to);
  return success();
}

LogicalResult ReshapeOp::verify() {
  if (getInput().getType().getNumElements() != getType().getNumElements())
    return emitOpError("cannot reshape ")
           << shapeString(getInput().getType().getShape()) << " ("
           << getInput().getType().getNumElements() << " elements) to "
           << shapeString(getType().getShape()) << " (" << getType().getNumElements()
           << " elements)";
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto input = llvm::cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if (static_cast<int64_t>(perm.size()) != input.getRank())
    return inferenceError(loc, TransposeOp::getOperationName(), "permutation has ", perm.size(),
                             " entries but the input has rank ", input.getRank());
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t dim : perm) {
    if (dim < 0 || dim >= input.getRank() || seen[dim])
      return inferenceError(loc, TransposeOp::getOperationName(), "permutation must hold each of 0..",
                               input.getRank() - 1, " exactly once");
    seen[dim] = true;
    shape.push_back(input.getDimSize(dim));
  }
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

/// Why `part` is not the range [offset, offset + size) of dimension `dim` of
/// `whole` (size: part's extent along dim), or "" when it is.
static std::string sliceMismatch(RankedTensorType whole, RankedTensorType part, int64_t dim,
                                 int64_t offset) {
  std::string why;
  llvm::raw_string_ostream os(why);
  if (dim < 0 || dim >= whole.getRank()) {
    os << "dim " << dim << " is not a dimension of '" << whole << "'";
    return why;
  }
  if (part.getRank() != whole.getRank()) {
    os << "the slice '" << part << "' and the sliced '" << whole << "' differ in rank";
    return why;
  }
  for (int64_t d = 0; d < whole.getRank(); ++d)
    if (d != dim && part.getDimSize(d) != whole.getDimSize(d)) {
      os << "the slice '" << part << "' and the sliced '" << whole << "' differ in dimension "
         << d << ", which is not sliced";
      return why;
    }
  int64_t size = part.getDimSize(dim);
  if (offset < 0 || size < 1 || offset + size > whole.getDimSize(dim))
    os << "the range [" << offset << ", " << offset + size << ") of dimension " << dim
       << " is not within its " << whole.getDimSize(dim) << " entries";
  return why;
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto input = llvm::cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t dim = adaptor.getDim();
  if (dim < 0 || dim >= input.getRank())
    return inferenceError(loc, SliceOp::getOperationName(), "dim ", dim,
                          " is not a dimension of ", input);
  SmallVector<int64_t> shape(input.getShape());
  shape[dim] = adaptor.getSize();
  auto result = input.clone(shape);
  std::string why = sliceMismatch(input, result, dim, adaptor.getOffset());
  if (!why.empty())
    return inferenceError(loc, SliceOp::getOperationName(), why);
  inferred.push_back(result);
  return success();
}

LogicalResult SliceGradOp::verify() {
  std::string why =
      sliceMismatch(getType(), getGrad().getType(), getDim(), getOffset());
  if (!why.empty())
    return emitOpError(why);
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

static LogicalResult inferReduction(std::optional<Location> loc, StringRef opName,
                                    Value inputValue,
                                    ArrayRef<int64_t> dims,
                                    SmallVectorImpl<Type> &inferred) {
  auto input = llvm::cast<RankedTensorType>(inputValue.getType());
  if (dims.empty())
    return inferenceError(loc, opName, "dims must name at least one dimension");
  for (auto [i, dim] : llvm::enumerate(dims)) {
    if (dim < 0 || dim >= input.getRank())
      return inferenceError(loc, opName, "dim ", dim, " is out of range for rank ",
                               input.getRank());
    if (i > 0 && dim <= dims[i - 1])
      return inferenceError(loc, opName, "dims must be strictly increasing");
  }
  SmallVector<int64_t> shape;
  for (auto [dim, size] : llvm::enumerate(input.getShape()))
    if (!llvm::is_contained(dims, static_cast<int64_t>(dim)))
      shape.push_back(size);
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult ReduceSumOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferReduction(loc, ReduceSumOp::getOperationName(), adaptor.getInput(),
                        adaptor.getDims(), inferred);
}

LogicalResult ReduceMeanOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  return inferReduction(loc, ReduceMeanOp::getOperationName(), adaptor.getInput(),
                        adaptor.getDims(), inferred);
}

//===----------------------------------------------------------------------===//
// Conversion
//===----------------------------------------------------------------------===//

/// Whether every value of `from` is exactly a value of `to`.
static bool widens(Type from, Type to) {
  auto narrow = llvm::cast<FloatType>(from), wide = llvm::cast<FloatType>(to);
  return narrow.getFPMantissaWidth() <= wide.getFPMantissaWidth() &&
         narrow.getWidth() <= wide.getWidth();
}

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // Narrowing back what was widened gives the original value.
  if (auto widened = getInput().getDefiningOp<ConvertOp>();
      widened && widened.getInput().getType() == getType() &&
      widens(getType().getElementType(), widened.getType().getElementType()))
    return widened.getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult mlir::fsdp::inferCrossEntropyLoss(std::optional<Location> loc, StringRef opName,
                                                Value logitsValue, Value targetsValue,
                                                SmallVectorImpl<Type> &inferred) {
  auto logits = llvm::cast<RankedTensorType>(logitsValue.getType());
  auto targets = llvm::cast<RankedTensorType>(targetsValue.getType());
  if (logits.getRank() < 2)
    return inferenceError(loc, opName,
                          "logits must be [..., classes] with rank 2 or more, got ", logits);
  if (targets.getShape() != logits.getShape().drop_back())
    return inferenceError(loc, opName, "targets shape ", shapeString(targets.getShape()),
                          " must be the logits shape without its last dimension (",
                          shapeString(logits.getShape().drop_back()), ")");
  // Losses are f32 whatever the logits' type (docs/MixedPrecision.md).
  inferred.push_back(RankedTensorType::get({}, Float32Type::get(logits.getContext())));
  return success();
}

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &inferred) {
  return inferCrossEntropyLoss(loc, getOperationName(), adaptor.getLogits(),
                               adaptor.getTargets(), inferred);
}

LogicalResult CrossEntropyGradOp::verify() {
  // The shapes; the loss gradient's type (f32) is the operand's constraint.
  SmallVector<Type> loss;
  return inferCrossEntropyLoss(getLoc(), getOperationName(), getLogits(), getTargets(),
                               loss);
}

LogicalResult MSEOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  Type prediction = adaptor.getPrediction().getType();
  if (prediction != adaptor.getTarget().getType())
    return inferenceError(loc, MSEOp::getOperationName(), "prediction ", prediction, " and target ",
                             adaptor.getTarget().getType(), " must have the same type");
  inferred.push_back(RankedTensorType::get({}, Float32Type::get(prediction.getContext())));
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

LogicalResult ClipCoefficientOp::verify() {
  double maxNorm = getMaxNorm().convertToDouble();
  if (!(maxNorm > 0.0) || !std::isfinite(maxNorm))
    return emitOpError("max_norm must be positive, got ") << maxNorm;
  return success();
}

LogicalResult UpdateOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *target = symbolTable.lookupNearestSymbolFrom(*this, getParamAttr());
  if (auto unit = llvm::dyn_cast_if_present<UnitOp>(target)) {
    SmallVector<ParamOp> members = unit.getMembers();
    if (!members.empty() && members.front().getFrozen())
      return emitOpError("unit '") << getParam() << "' is frozen and cannot be updated";
    if (unit.getShardType() != getGrad().getType())
      return emitOpError("gradient type ")
             << getGrad().getType() << " is not the shard type " << unit.getShardType()
             << " of unit '" << getParam() << "'";
    return success();
  }
  auto param = llvm::dyn_cast_if_present<ParamOp>(target);
  if (!param)
    return emitOpError("'") << getParam() << "' does not name an fsdp.param or fsdp.unit";
  if (param.getFrozen())
    return emitOpError("'") << getParam() << "' is frozen and cannot be updated";
  if (param.getType() != getGrad().getType())
    return emitOpError("gradient type ")
           << getGrad().getType() << " does not match the declaration of '"
           << getParam() << "' as " << param.getType();
  return success();
}

#define GET_OP_CLASSES
#include "fsdp/IR/FSDPOps.cpp.inc"
