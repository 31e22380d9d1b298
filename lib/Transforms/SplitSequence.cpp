//===- SplitSequence.cpp - fsdp-split-sequence: sequence parallelism ------===//
//
// Megatron-LM's sequence parallelism on the regions fsdp-split-tensors laid
// out: between two regions every tensor rank would otherwise hold and compute
// the same whole activations (the residual stream, its norms). Here each
// holds its block of the sequence instead: a region's sum becomes a
// reduce-scatter along the sequence, ops that read each token apart (residual
// adds, biases, norms over the features) compute on the blocks, and the next
// region gathers the blocks where it read a copy. Communication stays the
// same (a reduce-scatter and an all-gather move what an all-reduce moves);
// activations between regions, and their compute, shrink by the tensor ranks.
//
// The pass walks the step once, in order: every op has its operands' form
// (whole, or blocks along a dimension) before it is visited.
//
//===----------------------------------------------------------------------===//

#include "fsdp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPSPLITSEQUENCEPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

RankedTensorType tensorTypeOf(Value value) { return llvm::cast<RankedTensorType>(value.getType()); }

class SequenceSplitter {
public:
  SequenceSplitter(int64_t ranks, MLIRContext *ctx) : ranks(ranks), b(ctx) {}

  LogicalResult run(Block &body);

private:
  /// A region's sum: a reduce-scatter along the sequence instead.
  LogicalResult scatter(TensorSumOp sum);
  /// An op reading blocks: computed on blocks, or on their whole.
  void visit(Operation &op);
  /// The dimension of `op`'s result whose blocks it computes from its block
  /// operands, if it reads each position of that dimension apart.
  std::optional<int64_t> blockDim(Operation &op);
  /// Makes `op`'s whole operands fit its block computation along `dim` of
  /// its result: cut where they span it, copied where they broadcast over it.
  void adaptWholeOperands(Operation &op, int64_t dim);

  /// The dimension of a [batch..., sequence, features] activation whose
  /// blocks the tensor ranks hold: the outermost one of the tokens' they
  /// divide. The batch's rows, where they divide them, are contiguous blocks
  /// (the collectives move them as they lie); the sequence's are not when
  /// there are several rows, and are laid out rank-major around them.
  std::optional<int64_t> tokenDim(RankedTensorType whole) {
    for (int64_t dim = 0; dim + 1 < whole.getRank(); ++dim)
      if (whole.getDimSize(dim) % ranks == 0)
        return dim;
    return std::nullopt;
  }
  RankedTensorType blockType(RankedTensorType whole, int64_t dim) {
    SmallVector<int64_t> shape(whole.getShape());
    shape[dim] /= ranks;
    return whole.clone(shape);
  }
  /// `slot`, built by `build` right after `anchor` is defined, once.
  Value onceAfter(Value &slot, Value anchor, function_ref<Value()> build);
  /// This rank's block of `whole` along `dim`; `whole` read inside blocks
  /// (its gradient summed); the whole of `block`: each made once.
  Value chunkOf(Value whole, int64_t dim);
  Value copyOf(Value whole);
  Value unchunkOf(Value block);

  int64_t ranks;
  OpBuilder b;
  /// The values held as blocks, and the dimension of their blocks.
  llvm::DenseMap<Value, int64_t> blocks;
  llvm::DenseMap<std::pair<Value, int64_t>, Value> chunks;
  llvm::DenseMap<Value, Value> copies, unchunks;
};

LogicalResult SequenceSplitter::scatter(TensorSumOp sum) {
  RankedTensorType whole = sum.getType();
  // A scalar or a vector has no sequence: it stays an all-reduce.
  if (whole.getRank() < 2)
    return success();
  std::optional<int64_t> dim = tokenDim(whole);
  if (!dim)
    return emitError(sum.getLoc())
           << "sequence_parallel: tensor_parallel = " << ranks << " divides neither the "
           << "sequence (dimension " << whole.getRank() - 2 << ", "
           << whole.getDimSize(whole.getRank() - 2) << ") nor the batch's rows of this "
           << "row-parallel product's result " << whole
           << ", which the tensor ranks would hold in blocks";
  b.setInsertionPoint(sum);
  auto scattered =
      TensorReduceScatterOp::create(b, sum.getLoc(), blockType(whole, *dim), sum.getInput(), *dim);
  sum.replaceAllUsesWith(scattered.getResult());
  sum.erase();
  blocks[scattered] = *dim;
  return success();
}

std::optional<int64_t> SequenceSplitter::blockDim(Operation &op) {
  if (op.getNumResults() != 1 || !llvm::isa<RankedTensorType>(op.getResult(0).getType()))
    return std::nullopt;
  int64_t rank = tensorTypeOf(op.getResult(0)).getRank();
  if (isa<AddOp, SubOp, MulOp, DivOp>(op)) {
    // Broadcasting aligns trailing dimensions: every block operand's blocks
    // must land on the same dimension of the result.
    std::optional<int64_t> dim;
    for (Value operand : op.getOperands()) {
      auto block = blocks.find(operand);
      if (block == blocks.end())
        continue;
      int64_t aligned = block->second + rank - tensorTypeOf(operand).getRank();
      if (dim && *dim != aligned)
        return std::nullopt;
      dim = aligned;
    }
    return dim;
  }
  auto block = blocks.find(op.getOperand(0));
  if (block == blocks.end())
    return std::nullopt;
  int64_t dim = block->second;
  if (isa<ReluOp, GeluOp, SiluOp, TanhOp, ExpOp, ScaleOp, ConvertOp>(op))
    return dim;
  // A norm over the features reads each token apart (its gains broadcast).
  if (isa<RMSNormOp, LayerNormOp>(op) && dim != rank - 1)
    return dim;
  return std::nullopt;
}

void SequenceSplitter::adaptWholeOperands(Operation &op, int64_t dim) {
  int64_t rank = tensorTypeOf(op.getResult(0)).getRank();
  for (OpOperand &operand : op.getOpOperands()) {
    Value value = operand.get();
    if (blocks.contains(value))
      continue;
    RankedTensorType type = tensorTypeOf(value);
    int64_t own = dim - (rank - type.getRank());
    // Spanning the sequence: this rank's block of it. Broadcast over it
    // (a gain, a bias): read whole, its gradient summed over the blocks.
    if (own >= 0 && type.getDimSize(own) != 1)
      operand.set(chunkOf(value, own));
    else
      operand.set(copyOf(value));
  }
}

void SequenceSplitter::visit(Operation &op) {
  if (auto copy = dyn_cast<TensorCopyOp>(op)) {
    // The next region gathers the blocks it would have copied whole.
    b.setInsertionPoint(copy);
    Value input = copy.getInput();
    auto gather =
        TensorAllGatherOp::create(b, copy.getLoc(), copy.getType(), input, blocks.lookup(input));
    copy.replaceAllUsesWith(gather.getResult());
    copy.erase();
    return;
  }
  if (std::optional<int64_t> dim = blockDim(op)) {
    adaptWholeOperands(op, *dim);
    Value result = op.getResult(0);
    result.setType(blockType(tensorTypeOf(result), *dim));
    blocks[result] = *dim;
    return;
  }
  for (OpOperand &operand : op.getOpOperands())
    if (blocks.contains(operand.get()))
      operand.set(unchunkOf(operand.get()));
}

Value SequenceSplitter::onceAfter(Value &slot, Value anchor, function_ref<Value()> build) {
  if (!slot) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(anchor);
    slot = build();
  }
  return slot;
}

Value SequenceSplitter::chunkOf(Value whole, int64_t dim) {
  return onceAfter(chunks[{whole, dim}], whole, [&]() -> Value {
    return TensorChunkOp::create(b, whole.getLoc(), blockType(tensorTypeOf(whole), dim), whole,
                                 dim);
  });
}

Value SequenceSplitter::copyOf(Value whole) {
  return onceAfter(copies[whole], whole,
                   [&]() -> Value { return TensorCopyOp::create(b, whole.getLoc(), whole); });
}

Value SequenceSplitter::unchunkOf(Value block) {
  return onceAfter(unchunks[block], block, [&]() -> Value {
    int64_t dim = blocks.lookup(block);
    RankedTensorType type = tensorTypeOf(block);
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] *= ranks;
    return TensorUnchunkOp::create(b, block.getLoc(), type.clone(shape), block, dim);
  });
}

LogicalResult SequenceSplitter::run(Block &body) {
  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (auto sum = dyn_cast<TensorSumOp>(op)) {
      if (failed(scatter(sum)))
        return failure();
      continue;
    }
    if (llvm::any_of(op.getOperands(), [&](Value v) { return blocks.contains(v); }))
      visit(op);
  }
  return success();
}

struct FSDPSplitSequencePass : public fsdp::impl::FSDPSplitSequencePassBase<FSDPSplitSequencePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto plan = module->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName());
    if (!plan) {
      module.emitError("fsdp-split-sequence needs the module's 'fsdp.plan'");
      return signalPassFailure();
    }
    if (!plan.getSequenceParallel())
      return;
    auto functions = llvm::to_vector(module.getOps<func::FuncOp>());
    if (functions.size() != 1 || !functions.front().getBody().hasOneBlock()) {
      module.emitError("fsdp-split-sequence expects one single-block function, the model's "
                       "loss");
      return signalPassFailure();
    }
    Block &body = functions.front().getBody().front();
    if (failed(SequenceSplitter(plan.getTensorParallel(), &getContext()).run(body)))
      return signalPassFailure();
  }
};

} // namespace
