//===- FuseAttention.cpp - fsdp-fuse-attention: the runtime's fused attention -===//
//
// On a GPU, attention as key-block loops writes every block's scores to
// device memory and reads them back several times; a fused kernel keeps them
// on chip. A bf16 fsdp.attention (and its gradient) becomes one call of the
// runtime's fsdprt_attention_bf16 (fsdprt_attention_grad_bf16), cuDNN's fused
// attention on the CUDA target. What the call cannot compute keeps the loops
// of convert-fsdp-to-linalg, and the compile log says why, once per reason.
//
//===----------------------------------------------------------------------===//

#include "Utils/RuntimeABI.h"
#include "Utils/RuntimeCalls.h"
#include "fsdp/Conversion/Passes.h"
#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/STLExtras.h"

#include <array>

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPFUSEATTENTIONPASS
#include "fsdp/Conversion/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// cuDNN's fused attention on Hopper and Ampere takes head dimensions that
/// are multiples of 8, up to 256.
constexpr int64_t kMaxHeadDim = 256;
/// What cuDNN 9's forward plans ask for (measured, docs/CUDA.md).
constexpr int64_t kForwardWorkspaceBytes = 256;

/// Why the attention `op` (or its gradient) cannot be the runtime's fused
/// call, or "" when it can.
template <typename OpT> std::string refusal(OpT op) {
  auto q = llvm::cast<RankedTensorType>(op.getQuery().getType());
  auto k = llvm::cast<RankedTensorType>(op.getKey().getType());
  if (!q.getElementType().isBF16())
    return "its operands are not bf16 (the fused kernel is bf16; param_dtype = bf16 gives it)";
  if (q.getDimSize(2) != k.getDimSize(2))
    return "it has " + std::to_string(q.getDimSize(2)) + " queries and " +
           std::to_string(k.getDimSize(2)) + " keys (the fused call takes as many of each)";
  int64_t headDim = q.getDimSize(3);
  if (headDim % 8 != 0 || headDim > kMaxHeadDim)
    return "its head dimension " + std::to_string(headDim) +
           " is not a multiple of 8 up to 256 (cuDNN's fused kernel)";
  if (op.getSoftcap())
    return "its scores are soft-capped (the fused call has no cap)";
  return "";
}

/// Whether `value` is a constant of zeros: the log-sum-exp's gradient when
/// nothing reads the log-sum-exp.
bool isZeros(Value value) {
  DenseElementsAttr constant;
  return matchPattern(value, m_Constant(&constant)) && constant.isSplat() &&
         constant.getSplatValue<APFloat>().isZero();
}

/// The swap of heads and sequence, [B, S, H, D] <-> [B, H, S, D].
constexpr std::array<int64_t, 4> kSwapHeadsAndSequence = {0, 2, 1, 3};

/// The [B, S, H, D] tensor whose transpose `value` ([B, H, S, D]) is, or
/// null: a projection's rows split into heads, which the call reads in place.
Value sequenceMajorSource(Value value) {
  auto transpose = value.getDefiningOp<TransposeOp>();
  if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>(kSwapHeadsAndSequence))
    return {};
  return transpose.getInput();
}

/// Whether every one of `operands` is such a transpose: the call then takes
/// them, and gives its results, as [B, S, H, D] (FSDPRT_ATTENTION_BSHD).
bool takesSequenceMajor(ValueRange operands) {
  return llvm::all_of(operands, [](Value operand) { return sequenceMajorSource(operand); });
}

/// Builds the runtime calls in place of the attention ops.
struct FusedCallBuilder {
  OpBuilder b;
  ModuleOp module;
  bool deterministic;

  /// The buffer of an operand as the call takes it: `tensor` itself, or
  /// with `sequenceMajor` the [B, S, H, D] tensor it is the transpose of.
  Value operandBuffer(Location loc, Value tensor, bool sequenceMajor) {
    return operandBuffer(loc, sequenceMajor ? sequenceMajorSource(tensor) : tensor);
  }

  /// A result the call writes, in a fresh buffer: [B, S, H, D] with
  /// `sequenceMajor`. Its address is the call's argument; once the call is
  /// made, bindResults puts the buffer's tensor in place of `result`.
  struct ResultBuffer {
    Value result, buffer, address;
    RankedTensorType type;
    bool sequenceMajor;
  };
  ResultBuffer resultBufferOf(Location loc, Value result, bool sequenceMajor) {
    auto type = llvm::cast<RankedTensorType>(result.getType());
    if (sequenceMajor)
      type = type.clone(applyPermutation(type.getShape(), kSwapHeadsAndSequence));
    Value buffer =
        memref::AllocOp::create(b, loc, MemRefType::get(type.getShape(), type.getElementType()));
    return {result, buffer, bufferAddress(b, loc, buffer), type, sequenceMajor};
  }

  /// After the call: each result replaced by its buffer's tensor, read only
  /// there (a pass that puts an op right after the tensor's definition, as
  /// fsdp-widen-bf16-products does, must not read the buffer before the call
  /// writes it), or by that tensor's transpose to [B, H, S, D], where each
  /// transpose back to [B, S, H, D] becomes the tensor itself.
  void bindResults(ArrayRef<ResultBuffer> results) {
    for (const ResultBuffer &r : results) {
      Value tensor = bufferization::ToTensorOp::create(b, r.result.getLoc(), r.type, r.buffer,
                                                       b.getUnitAttr(), b.getUnitAttr());
      Value result = r.result;
      if (!r.sequenceMajor) {
        result.replaceAllUsesWith(tensor);
        continue;
      }
      Value headMajor = TransposeOp::create(b, result.getLoc(), tensor, kSwapHeadsAndSequence);
      result.replaceAllUsesWith(headMajor);
      for (Operation *user : llvm::make_early_inc_range(headMajor.getUsers()))
        if (auto back = dyn_cast<TransposeOp>(user);
            back && back.getPermutation() == ArrayRef<int64_t>(kSwapHeadsAndSequence)) {
          back.getResult().replaceAllUsesWith(tensor);
          back->erase();
        }
      if (headMajor.use_empty())
        headMajor.getDefiningOp()->erase();
    }
  }

  /// The buffer a tensor operand lies in, read by the call alone.
  Value operandBuffer(Location loc, Value tensor) {
    auto type = llvm::cast<RankedTensorType>(tensor.getType());
    auto buffer = bufferization::ToBufferOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()), tensor,
        /*read_only=*/true);
    return bufferAddress(b, loc, buffer);
  }

  /// Workspace for the call (64-byte aligned in the arena, as every buffer):
  /// its address and its size.
  std::pair<Value, Value> workspace(Location loc, int64_t bytes) {
    Value buffer = memref::AllocOp::create(b, loc, MemRefType::get({bytes}, b.getI8Type()));
    return {bufferAddress(b, loc, buffer), i64Constant(b, loc, bytes)};
  }

  /// batch, heads, kv_heads, seq, head_dim, causal, window (0: none), scale,
  /// layout: the calls' first arguments, of attention `op` or its gradient.
  template <typename OpT>
  SmallVector<Value> shapeArguments(Location loc, OpT op, bool sequenceMajor) {
    ArrayRef<int64_t> q = llvm::cast<RankedTensorType>(op.getQuery().getType()).getShape();
    ArrayRef<int64_t> k = llvm::cast<RankedTensorType>(op.getKey().getType()).getShape();
    return {i64Constant(b, loc, q[0]),
            i64Constant(b, loc, q[1]),
            i64Constant(b, loc, k[1]),
            i64Constant(b, loc, q[2]),
            i64Constant(b, loc, q[3]),
            i32Constant(b, loc, op.getCausal()),
            i64Constant(b, loc, op.getWindow().value_or(0)),
            arith::ConstantOp::create(b, loc,
                                      b.getF32FloatAttr(static_cast<float>(op.getScaleValue()))),
            i32Constant(b, loc,
                        static_cast<int32_t>(sequenceMajor ? RuntimeAttentionLayout::BSHD
                                                           : RuntimeAttentionLayout::BHSD))};
  }

  void call(Location loc, StringRef name, ValueRange args) {
    auto type = FunctionType::get(b.getContext(), args.getTypes(), {});
    func::CallOp::create(b, loc, declareRuntimeFunction(module, name, type), args);
  }

  void replace(AttentionOp op) {
    b.setInsertionPoint(op);
    Location loc = op.getLoc();
    bool sequenceMajor = takesSequenceMajor({op.getQuery(), op.getKey(), op.getValue()});
    SmallVector<Value> args = shapeArguments(loc, op, sequenceMajor);
    for (Value operand : {op.getQuery(), op.getKey(), op.getValue()})
      args.push_back(operandBuffer(loc, operand, sequenceMajor));
    SmallVector<ResultBuffer> results = {resultBufferOf(loc, op.getResult(), sequenceMajor),
                                         resultBufferOf(loc, op.getLse(), false)};
    for (const ResultBuffer &r : results)
      args.push_back(r.address);
    auto [workspaceAddress, workspaceBytes] = workspace(loc, kForwardWorkspaceBytes);
    args.append({workspaceAddress, workspaceBytes});
    call(loc, kAttentionBF16, args);
    bindResults(results);
    eraseWithDeadTransposes(op);
  }

  void replace(AttentionGradOp op) {
    b.setInsertionPoint(op);
    Location loc = op.getLoc();
    bool sequenceMajor = takesSequenceMajor(
        {op.getQuery(), op.getKey(), op.getValue(), op.getOutput(), op.getGrad()});
    SmallVector<Value> args = shapeArguments(loc, op, sequenceMajor);
    args.push_back(i32Constant(b, loc, deterministic));
    for (Value operand : {op.getQuery(), op.getKey(), op.getValue(), op.getOutput()})
      args.push_back(operandBuffer(loc, operand, sequenceMajor));
    args.push_back(operandBuffer(loc, op.getLse()));
    args.push_back(operandBuffer(loc, op.getGrad(), sequenceMajor));
    SmallVector<ResultBuffer> results;
    for (Value gradient : op->getResults()) {
      results.push_back(resultBufferOf(loc, gradient, sequenceMajor));
      args.push_back(results.back().address);
    }
    auto [workspaceAddress, workspaceBytes] =
        workspace(loc, backwardWorkspaceBytes(op.getQuery(), op.getKey()));
    args.append({workspaceAddress, workspaceBytes});
    call(loc, kAttentionGradBF16, args);
    bindResults(results);
    eraseWithDeadTransposes(op);
  }

  /// Erases `op`, and the transposes to [B, H, S, D] it alone read.
  static void eraseWithDeadTransposes(Operation *op) {
    SetVector<Operation *> transposes;
    for (Value operand : op->getOperands())
      if (sequenceMajorSource(operand))
        transposes.insert(operand.getDefiningOp());
    op->erase();
    for (Operation *transpose : transposes)
      if (transpose->use_empty())
        transpose->erase();
  }

  /// What cuDNN 9's backward plans ask for (docs/CUDA.md): the query
  /// gradient accumulated in f32 twice over, one f32 per query row, 256
  /// bytes; the deterministic algorithm adds the bf16 gradient of the scores,
  /// [B, Hq, T, S] with T and S rounded up to multiples of 64.
  int64_t backwardWorkspaceBytes(Value query, Value key) const {
    ArrayRef<int64_t> q = llvm::cast<RankedTensorType>(query.getType()).getShape();
    int64_t rows = q[0] * q[1] * q[2];
    int64_t bytes = 2 * rows * q[3] * 4 + rows * 4 + 256;
    if (deterministic) {
      int64_t keys = llvm::cast<RankedTensorType>(key.getType()).getDimSize(2);
      bytes += q[0] * q[1] * llvm::alignTo(q[2], 64) * llvm::alignTo(keys, 64) * 2;
    }
    return bytes;
  }
};

struct FSDPFuseAttentionPass
    : public fsdp::impl::FSDPFuseAttentionPassBase<FSDPFuseAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FusedCallBuilder builder{OpBuilder(module.getContext()), module, deterministic};
    // Each reason, the first op refused for it and how many were.
    struct Refused {
      std::string why;
      Operation *first;
      int count;
    };
    SmallVector<Refused> refused;
    auto refuse = [&](Operation *op, const std::string &why) {
      auto same = llvm::find_if(refused, [&](const Refused &r) { return r.why == why; });
      if (same == refused.end())
        refused.push_back({why, op, 1});
      else
        ++same->count;
    };
    // Collected first: a replacement erases transposes after its op.
    SmallVector<Operation *> attentions;
    module.walk([&](Operation *op) {
      if (isa<AttentionOp, AttentionGradOp>(op))
        attentions.push_back(op);
    });
    for (Operation *op : attentions) {
      if (auto attention = dyn_cast<AttentionOp>(op)) {
        std::string why = refusal(attention);
        why.empty() ? builder.replace(attention) : refuse(op, why);
      } else if (auto grad = dyn_cast<AttentionGradOp>(op)) {
        std::string why = refusal(grad);
        if (why.empty() && !isZeros(grad.getLseGrad()))
          why = "the gradient of its log-sum-exp is not zero (the fused backward has none)";
        why.empty() ? builder.replace(grad) : refuse(op, why);
      }
    }
    // At the location alone: the op itself would add nothing a model's
    // author needs.
    if (!quiet)
      for (const Refused &r : refused)
        emitRemark(r.first->getLoc())
            << "attention runs as key-block loops, not cuDNN's fused kernel (" << r.count
            << (r.count > 1 ? " ops" : " op") << ", forward and backward): " << r.why;
  }
};

} // namespace
