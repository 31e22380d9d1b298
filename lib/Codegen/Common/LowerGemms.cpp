//===- LowerGemms.cpp - fsdp-lower-gemms: matrix products to BLAS ---------===//
//
// BLAS runs GEMMs an order of magnitude faster than loops LLVM vectorises, and
// GEMMs are almost all of a training step's arithmetic.
//
//===----------------------------------------------------------------------===//

#include "Utils/RuntimeABI.h"
#include "Utils/RuntimeCalls.h"
#include "fsdp/Codegen/Common/Passes.h"
#include "fsdp/IR/BufferKinds.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPLOWERGEMMSPASS
#include "fsdp/Codegen/Common/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// How a product reads its operands: which of them are transposed.
struct GemmForm {
  bool transposeA = false, transposeB = false;
};

/// Matches the indexing maps of a (batch) matmul whose loops are
/// ([batch,] m, n, k) against plain and transposed operands.
std::optional<GemmForm> matchForm(linalg::LinalgOp op, bool batched) {
  MLIRContext *ctx = op.getContext();
  unsigned loops = batched ? 4 : 3, first = batched ? 1 : 0;
  auto dim = [&](unsigned i) { return getAffineDimExpr(first + i, ctx); };
  auto map = [&](AffineExpr x, AffineExpr y) {
    SmallVector<AffineExpr> exprs;
    if (batched)
      exprs.push_back(getAffineDimExpr(0, ctx));
    exprs.append({x, y});
    return AffineMap::get(loops, 0, exprs, ctx);
  };
  AffineExpr m = dim(0), n = dim(1), k = dim(2);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps.size() != 3 || maps[2] != map(m, n))
    return std::nullopt;
  GemmForm form;
  if (maps[0] == map(k, m))
    form.transposeA = true;
  else if (maps[0] != map(m, k))
    return std::nullopt;
  if (maps[1] == map(n, k))
    form.transposeB = true;
  else if (maps[1] != map(k, n))
    return std::nullopt;
  return form;
}

/// A static f32 or bf16 memref whose rows are contiguous.
bool isBlasOperand(Value value) {
  auto type = llvm::dyn_cast<MemRefType>(value.getType());
  if (!type || !(type.getElementType().isF32() || type.getElementType().isBF16()) ||
      !type.hasStaticShape())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return strides.back() == 1;
}

/// The address, row stride and (for batches) matrix stride of a buffer.
struct BlasBuffer {
  Value pointer, rowStride, matrixStride;
};

BlasBuffer blasBuffer(OpBuilder &b, Location loc, Value memref) {
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  auto toI64 = [&](Value index) {
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), index).getResult();
  };
  auto strides = metadata.getStrides();
  BlasBuffer buffer{bufferAddress(b, loc, memref), toI64(strides[strides.size() - 2]), Value()};
  if (strides.size() == 3)
    buffer.matrixStride = toI64(strides[0]);
  return buffer;
}

/// The zero fill right before `op` of its output, if there is one: then
/// the product overwrites C instead of accumulating into it.
linalg::FillOp zeroFillBefore(linalg::LinalgOp op) {
  auto fill = llvm::dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  if (fill && fill.getDpsInits()[0] == op.getDpsInits()[0] &&
      matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
    return fill;
  return nullptr;
}

/// `out = product + bias` in f32, the bias a row vector added to every row
/// of a product no one else reads: the product's epilogue (cuBLASLt adds it
/// to the f32 sums before they are stored, one kernel fewer, the same
/// numbers). Not in bf16: the epilogue adds the bias before the one
/// rounding, where the bf16 step rounds the product and then the sum
/// (docs/MixedPrecision.md).
struct BiasEpilogue {
  linalg::GenericOp add;
  Value bias;
  /// The product's rows as the add reads them (an expand_shape of C), or null.
  memref::ExpandShapeOp expand;
};

/// Whether `add`'s body yields the sum of its two inputs, and nothing else.
bool addsItsInputs(linalg::GenericOp add) {
  Block &body = add.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto sum = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!sum || body.getOperations().size() != 2)
    return false;
  auto lhs = llvm::dyn_cast<BlockArgument>(sum.getLhs());
  auto rhs = llvm::dyn_cast<BlockArgument>(sum.getRhs());
  return lhs && rhs && lhs.getOwner() == &body && rhs.getOwner() == &body &&
         lhs.getArgNumber() + rhs.getArgNumber() == 1;
}

/// The bias epilogue of the product `op` into the fresh buffer `c`, if the
/// only reader of `c` is such an add, and nothing between them has effects.
std::optional<BiasEpilogue> matchBiasEpilogue(linalg::LinalgOp op, linalg::FillOp fill) {
  Value c = op.getDpsInits()[0];
  if (!fill || !c.getDefiningOp<memref::AllocOp>())
    return std::nullopt;
  Operation *reader = nullptr;
  for (Operation *user : c.getUsers()) {
    if (user == op || user == fill)
      continue;
    if (reader)
      return std::nullopt;
    reader = user;
  }
  BiasEpilogue epilogue;
  epilogue.expand = llvm::dyn_cast_or_null<memref::ExpandShapeOp>(reader);
  if (epilogue.expand) {
    if (!epilogue.expand->hasOneUse())
      return std::nullopt;
    reader = *epilogue.expand->user_begin();
  }
  epilogue.add = llvm::dyn_cast_or_null<linalg::GenericOp>(reader);
  linalg::GenericOp add = epilogue.add;
  if (!add || add->getBlock() != op->getBlock() || add.getNumDpsInputs() != 2 ||
      add.getNumDpsInits() != 1 || add.getNumReductionLoops() != 0 || !addsItsInputs(add))
    return std::nullopt;
  Value product = epilogue.expand ? epilogue.expand.getResult() : c;
  unsigned productIndex = add.getDpsInputs()[0] == product ? 0 : 1;
  if (add.getDpsInputs()[productIndex] != product)
    return std::nullopt;
  epilogue.bias = add.getDpsInputs()[1 - productIndex];
  auto productType = llvm::cast<MemRefType>(product.getType());
  auto outType = llvm::dyn_cast<MemRefType>(add.getDpsInits()[0].getType());
  auto biasType = llvm::dyn_cast<MemRefType>(epilogue.bias.getType());
  int64_t rank = productType.getRank();
  if (!outType || !biasType || outType.getShape() != productType.getShape() ||
      !outType.getLayout().isIdentity() || biasType.getRank() != 1 ||
      !isBlasOperand(epilogue.bias) ||
      !productType.getElementType().isF32() ||
      outType.getElementType() != productType.getElementType() ||
      biasType.getElementType() != productType.getElementType())
    return std::nullopt;
  SmallVector<AffineMap> maps = add.getIndexingMapsArray();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, op.getContext());
  if (maps[productIndex] != identity || maps[2] != identity ||
      maps[1 - productIndex] != identity.getSubMap({static_cast<unsigned>(rank - 1)}))
    return std::nullopt;
  // The product moves down to the add (where its output exists): nothing in
  // between may touch memory.
  for (Operation *between = op->getNextNode(); between != add; between = between->getNextNode())
    if (!isa<memref::AllocOp>(between) && !isMemoryEffectFree(between))
      return std::nullopt;
  return epilogue;
}

/// `op` as a call of the runtime's product; `fill`, the zero fill of its
/// output right before it (zeroFillBefore), or null.
void lowerToCall(linalg::LinalgOp op, GemmForm form, bool batched, ModuleOp module,
                 linalg::FillOp fill, std::optional<BiasEpilogue> epilogue) {
  bool overwrites = fill != nullptr;
  OpBuilder b(epilogue ? epilogue->add.getOperation() : op.getOperation());
  Location loc = op.getLoc();
  Value a = op.getDpsInputs()[0], bm = op.getDpsInputs()[1], c = op.getDpsInits()[0];
  auto cType = llvm::cast<MemRefType>(c.getType());
  auto aType = llvm::cast<MemRefType>(a.getType());
  int64_t rank = cType.getRank();
  int64_t m = cType.getDimSize(rank - 2), n = cType.getDimSize(rank - 1);
  int64_t k = form.transposeA ? aType.getDimSize(rank - 2) : aType.getDimSize(rank - 1);
  if (epilogue) {
    // The product lands in the add's output, seen with C's shape.
    c = epilogue->add.getDpsInits()[0];
    if (epilogue->expand)
      c = memref::CollapseShapeOp::create(b, loc, c,
                                          epilogue->expand.getReassociationIndices());
  }

  auto i32 = [&](bool flag) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(flag)).getResult();
  };
  auto i64 = [&](int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v)).getResult();
  };
  Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0));
  Value beta = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(overwrites ? 0.0 : 1.0));
  BlasBuffer bufA = blasBuffer(b, loc, a), bufB = blasBuffer(b, loc, bm),
             bufC = blasBuffer(b, loc, c);

  SmallVector<Value> args = {i32(form.transposeA), i32(form.transposeB)};
  if (batched)
    args.push_back(i64(cType.getDimSize(0)));
  args.append({i64(m), i64(n), i64(k), one, bufA.pointer, bufA.rowStride});
  if (batched)
    args.push_back(bufA.matrixStride);
  args.append({bufB.pointer, bufB.rowStride});
  if (batched)
    args.push_back(bufB.matrixStride);
  args.append({beta, bufC.pointer, bufC.rowStride});
  if (batched)
    args.push_back(bufC.matrixStride);
  if (epilogue)
    args.push_back(bufferAddress(b, loc, epilogue->bias));

  auto type = FunctionType::get(b.getContext(), ValueRange(args).getTypes(), {});
  // bf16 operands: summed in f32 and rounded once (fsdprt_gemm_bf16).
  bool bf16 = cType.getElementType().isBF16();
  StringRef name = epilogue ? kGemmBias
                   : bf16   ? (batched ? kBatchedGemmBF16 : kGemmBF16)
                            : (batched ? kBatchedGemm : kGemm);
  func::FuncOp callee = declareRuntimeFunction(module, name, type);
  auto call = func::CallOp::create(b, loc, callee, args);
  if (op->hasAttr(kRecomputedAttr))
    call->setAttr(kRecomputedAttr, b.getUnitAttr());
  if (fill)
    fill->erase();
  Value product = op.getDpsInits()[0];
  op->erase();
  if (epilogue) {
    epilogue->add->erase();
    if (epilogue->expand)
      epilogue->expand->erase();
    product.getDefiningOp()->erase();
  }
}

struct FSDPLowerGemmsPass : public fsdp::impl::FSDPLowerGemmsPassBase<FSDPLowerGemmsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<linalg::LinalgOp, bool>> products;
    module.walk([&](linalg::LinalgOp op) {
      if (isa<linalg::MatmulOp>(op))
        products.push_back({op, false});
      else if (isa<linalg::BatchMatmulOp>(op))
        products.push_back({op, true});
    });
    for (auto [op, batched] : products) {
      std::optional<GemmForm> form;
      Type element = getElementTypeOrSelf(op->getOperand(0).getType());
      if (op.hasPureBufferSemantics() && llvm::all_of(op->getOperands(), isBlasOperand) &&
          llvm::all_of(op->getOperandTypes(),
                       [&](Type t) { return getElementTypeOrSelf(t) == element; }))
        form = matchForm(op, batched);
      if (form) {
        linalg::FillOp fill = zeroFillBefore(op);
        std::optional<BiasEpilogue> epilogue;
        if (fuseBias && !batched)
          epilogue = matchBiasEpilogue(op, fill);
        lowerToCall(op, *form, batched, module, fill, epilogue);
        continue;
      }
      // Loops would sum a bf16 product in bf16: never the f32 sum it stands for.
      if (llvm::any_of(op->getOperandTypes(),
                       [](Type t) { return getElementTypeOrSelf(t).isBF16(); })) {
        op->emitOpError("is a bf16 product the runtime's GEMMs cannot compute (operands "
                        "must be static with contiguous rows)");
        return signalPassFailure();
      }
    }
  }
};

} // namespace
