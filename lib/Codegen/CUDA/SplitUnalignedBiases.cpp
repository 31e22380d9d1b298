//===- SplitUnalignedBiases.cpp - fsdp-cuda-split-unaligned-biases --------===//
//
// cuBLASLt's bias epilogue loads the bias in 16-byte vectors, and nothing
// tells its heuristic how far a bias is aligned: on a GPU a less aligned
// bias is a misaligned-address fault. The buffer plan fixes every bias's
// address, so the products whose bias it did not align add the bias in a
// kernel of their own instead (the same f32 sum).
//
//===----------------------------------------------------------------------===//

#include "Analysis/ArenaAccesses.h"
#include "Utils/RuntimeABI.h"
#include "Utils/RuntimeCalls.h"
#include "Utils/StepFunction.h"
#include "fsdp/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPSPLITUNALIGNEDBIASESPASS
#include "fsdp/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// The byte offset of `buffer`'s first element in `arena`, where the buffer
/// plan fixes it.
std::optional<int64_t> arenaOffset(Value buffer, Value arena) {
  auto type = cast<MemRefType>(buffer.getType());
  int64_t offset;
  SmallVector<int64_t> strides;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset))
    return std::nullopt;
  std::optional<ArenaSpan> span = arenaSpanOf(
      buffer, arena, cast<MemRefType>(arena.getType()).getNumElements());
  if (!span)
    return std::nullopt;
  return span->pointer + offset * type.getElementTypeBitWidth() / 8;
}

/// `c += bias` on every row of the m x n matrix `c`.
void addToRows(OpBuilder &b, Location loc, Value bias, Value c) {
  MLIRContext *ctx = b.getContext();
  AffineMap rows = AffineMap::getMultiDimIdentityMap(2, ctx);
  AffineMap columns = AffineMap::get(2, 0, getAffineDimExpr(1, ctx));
  linalg::GenericOp::create(
      b, loc, ValueRange{bias}, ValueRange{c},
      ArrayRef<AffineMap>{columns, rows},
      ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                    utils::IteratorType::parallel},
      [](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(
            nb, nl,
            ValueRange{arith::AddFOp::create(nb, nl, args[1], args[0])});
      });
}

/// `call` (fsdprt_sgemm_bias) as fsdprt_sgemm and the add of its bias.
LogicalResult split(func::CallOp call, ModuleOp module) {
  OperandRange args = call.getArgOperands();
  // (trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias)
  Value bias = bufferOfAddress(args.back()), c = bufferOfAddress(args[11]);
  auto biasType = bias ? dyn_cast<MemRefType>(bias.getType()) : MemRefType();
  auto cType = c ? dyn_cast<MemRefType>(c.getType()) : MemRefType();
  if (!biasType || !cType || cType.getRank() != 2 || biasType.getRank() != 1 ||
      !cType.getLayout().isIdentity() ||
      biasType.getDimSize(0) != cType.getDimSize(1))
    return call.emitOpError("has a bias the buffer plan did not align to ")
           << kGemmBiasAlignment
           << " bytes, and its C and bias are not buffers of the shapes an add "
              "needs";
  OpBuilder b(call);
  ValueRange plain = args.drop_back();
  func::FuncOp sgemm = declareRuntimeFunction(
      module, kGemm, FunctionType::get(b.getContext(), plain.getTypes(), {}));
  func::CallOp::create(b, call.getLoc(), sgemm, plain);
  addToRows(b, call.getLoc(), bias, c);
  call.erase();
  return success();
}

struct FSDPSplitUnalignedBiasesPass
    : public fsdp::impl::FSDPSplitUnalignedBiasesPassBase<
          FSDPSplitUnalignedBiasesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = requireStep(module, StepLevel::Runtime, getArgument());
    if (!step)
      return signalPassFailure();
    Value arena = step.getArgument(0);
    SmallVector<func::CallOp> unaligned;
    step.walk([&](func::CallOp call) {
      if (call.getCallee() != kGemmBias)
        return;
      Value bias = bufferOfAddress(call.getArgOperands().back());
      std::optional<int64_t> offset =
          bias ? arenaOffset(bias, arena) : std::nullopt;
      if (!offset || *offset % kGemmBiasAlignment != 0)
        unaligned.push_back(call);
    });
    for (func::CallOp call : unaligned)
      if (failed(split(call, module)))
        return signalPassFailure();
  }
};

} // namespace
