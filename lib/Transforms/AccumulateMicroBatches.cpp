//===- AccumulateMicroBatches.cpp - fsdp-accumulate-micro-batches ---------===//
//
// Gradient accumulation inside the step. Everything but the optimizer's part
// (the clip coefficient and the updates) is one micro-batch's forward and
// backward, typed by fsdp-partition for a micro-batch; it is copied once per
// further micro-batch, each copy reading inputs of its own, and the update
// reads the mean of the micro-batches' gradients. Copies rather than a loop:
// the step stays one block, so the buffer plan stays exact (every copy's
// activations are dead before the next copy starts and reuse the same bytes)
// and every later pass works unchanged; identical copies share their compiled
// functions (fsdp-outline-kernels), so compile time grows with k only by the
// calls in the step.
//
//===----------------------------------------------------------------------===//

#include "Utils/StepFunction.h"
#include "fsdp/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPACCUMULATEMICROBATCHESPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// How one unit's gradient reaches its update: the flat gradient, then
/// collectives and conversions, one after the other.
struct GradientChain {
  FlattenOp flatten;
  /// The first collective that reads the flat gradient; null when none does
  /// (a unit of one rank without replicas).
  Operation *firstCollective = nullptr;
  /// What the update (and the clip coefficient) reads.
  Value shard;
};

FailureOr<GradientChain> findChain(UpdateOp update) {
  GradientChain chain;
  chain.shard = update.getGrad();
  Value value = chain.shard;
  while (Operation *op = value.getDefiningOp()) {
    if (auto flatten = dyn_cast<FlattenOp>(op)) {
      chain.flatten = flatten;
      return chain;
    }
    // What the update reads may be read by the clip coefficient too; the
    // values before it, by the next op of the chain only.
    if (!isa<ReduceScatterOp, AllReduceOp, ConvertOp>(op) ||
        (value != chain.shard && !value.hasOneUse()))
      break;
    if (!isa<ConvertOp>(op))
      chain.firstCollective = op;
    value = op->getOperand(0);
  }
  return update.emitOpError("reads a gradient that is not a unit's flat gradient, reduced; "
                            "fsdp-accumulate-micro-batches runs after fsdp-insert-collectives");
}

class MicroBatchSplitter {
public:
  MicroBatchSplitter(PlanAttr plan, func::FuncOp step)
      : plan(plan), step(step), body(step.getBody().front()), builder(step.getContext()),
        count(plan.getMicroBatches()) {}

  LogicalResult run();

private:
  /// The ops that read a gradient shard, directly or not: the optimizer's
  /// part, run once.
  llvm::SetVector<Operation *> optimizerOps(ArrayRef<GradientChain> chains);
  /// `first` plus its copy in each further micro-batch, each added as soon as
  /// it exists; returns the sum.
  Value sumOverMicroBatches(Value first);
  /// The mean of `sum`, right after it.
  Value mean(Value sum);
  /// Erases `first` and the collectives and conversions after it, which
  /// nothing else reads.
  static void eraseChain(Operation *first);

  PlanAttr plan;
  func::FuncOp step;
  Block &body;
  OpBuilder builder;
  int64_t count;
  /// Micro-batch m's copy of the first micro-batch's values (m >= 1).
  SmallVector<IRMapping> copies;
};

llvm::SetVector<Operation *> MicroBatchSplitter::optimizerOps(ArrayRef<GradientChain> chains) {
  llvm::SetVector<Operation *> ops;
  SmallVector<Value> worklist;
  for (const GradientChain &chain : chains)
    worklist.push_back(chain.shard);
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers())
      if (!isa<func::ReturnOp>(user) && ops.insert(user))
        worklist.append(user->result_begin(), user->result_end());
  }
  return ops;
}

Value MicroBatchSplitter::sumOverMicroBatches(Value first) {
  Value sum = first;
  for (IRMapping &copy : copies) {
    Value next = copy.lookup(first);
    builder.setInsertionPointAfterValue(next);
    sum = AddOp::create(builder, next.getLoc(), sum, next);
  }
  return sum;
}

Value MicroBatchSplitter::mean(Value sum) {
  builder.setInsertionPointAfterValue(sum);
  return ScaleOp::create(builder, sum.getLoc(), sum,
                         llvm::APFloat(1.0 / static_cast<double>(count)));
}

void MicroBatchSplitter::eraseChain(Operation *first) {
  SmallVector<Operation *> chain = {first};
  while (chain.back()->getResult(0).hasOneUse()) {
    Operation *user = *chain.back()->getResult(0).user_begin();
    if (!isa<ReduceScatterOp, AllReduceOp, ConvertOp>(user))
      break;
    chain.push_back(user);
  }
  for (Operation *op : llvm::reverse(chain))
    op->erase();
}

LogicalResult MicroBatchSplitter::run() {
  if (step->hasAttr(FSDPDialect::getMicroBatchesAttrName()))
    return step.emitError("the step is split into micro-batches already");
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() != 1 || body.getNumArguments() < 2)
    return step.emitError("fsdp-accumulate-micro-batches needs the @train_step of "
                          "fsdp-autodiff: (inputs..., step, lr) -> loss");

  SmallVector<GradientChain> chains;
  for (UpdateOp update : body.getOps<UpdateOp>()) {
    FailureOr<GradientChain> chain = findChain(update);
    if (failed(chain))
      return failure();
    chains.push_back(*chain);
  }
  // The optimizer's part moves to the end of the step (in order), after
  // which the copies of the rest go.
  llvm::SetVector<Operation *> optimizer = optimizerOps(chains);
  SmallVector<Operation *> microBatch, optimizerInOrder;
  for (Operation &op : body.without_terminator())
    (optimizer.contains(&op) ? optimizerInOrder : microBatch).push_back(&op);
  for (Operation *op : optimizerInOrder)
    op->moveBefore(ret);
  Operation *firstOptimizerOp = optimizerInOrder.empty() ? ret : optimizerInOrder.front();

  // Each further micro-batch's inputs, then its copy of the forward and
  // backward, after the first's.
  unsigned numInputs = body.getNumArguments() - 2;
  SmallVector<unsigned> positions;
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> attrs;
  SmallVector<Location> locs;
  for (int64_t m = 1; m < count; ++m)
    for (unsigned i = 0; i < numInputs; ++i) {
      positions.push_back(numInputs);
      types.push_back(body.getArgument(i).getType());
      attrs.push_back(DictionaryAttr());
      locs.push_back(body.getArgument(i).getLoc());
    }
  if (failed(step.insertArguments(positions, types, attrs, locs)))
    return failure();
  copies.resize(count - 1);
  for (int64_t m = 1; m < count; ++m) {
    IRMapping &copy = copies[m - 1];
    for (unsigned i = 0; i < numInputs; ++i)
      copy.map(body.getArgument(i), body.getArgument(m * numInputs + i));
    builder.setInsertionPoint(firstOptimizerOp);
    for (Operation *op : microBatch)
      builder.clone(*op, copy);
  }

  // The gradients' mean, for the optimizer's part only.
  for (GradientChain &chain : chains) {
    bool noSync = plan.getAccumulate() == Accumulation::NoSync && chain.firstCollective;
    Value sum;
    if (noSync) {
      // The flat gradients add up, and the last micro-batch's collectives
      // reduce the sum.
      sum = sumOverMicroBatches(chain.flatten.getResult());
      copies.back().lookup(chain.firstCollective)->setOperand(0, sum);
      sum = copies.back().lookup(chain.shard);
    } else {
      sum = sumOverMicroBatches(chain.shard);
    }
    Value gradient = mean(sum);
    chain.shard.replaceUsesWithIf(
        gradient, [&](OpOperand &use) { return optimizer.contains(use.getOwner()); });
    if (noSync) {
      // The other micro-batches' collectives have nothing to reduce.
      eraseChain(chain.firstCollective);
      for (IRMapping &copy : MutableArrayRef(copies).drop_back())
        eraseChain(copy.lookup(chain.firstCollective));
    }
  }
  ret->setOperand(0, mean(sumOverMicroBatches(ret.getOperand(0))));

  MLIRContext *ctx = step.getContext();
  step->setAttr(FSDPDialect::getMicroBatchesAttrName(),
                IntegerAttr::get(IntegerType::get(ctx, 64), count));
  return success();
}

/// What fsdp-remat recorded for one micro-batch, for the whole step.
void scaleRecomputeCounts(ModuleOp module, int64_t count) {
  if (auto recompute = module->getAttrOfType<RecomputeAttr>(FSDPDialect::getRecomputeAttrName()))
    module->setAttr(FSDPDialect::getRecomputeAttrName(), recompute.scaled(count));
}

struct FSDPAccumulateMicroBatchesPass
    : public fsdp::impl::FSDPAccumulateMicroBatchesPassBase<FSDPAccumulateMicroBatchesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = requireStep(module, StepLevel::Model, getArgument());
    if (!step)
      return signalPassFailure();
    auto plan = module->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName());
    if (!plan) {
      module.emitError("fsdp-accumulate-micro-batches needs the module's 'fsdp.plan'");
      return signalPassFailure();
    }
    if (plan.getMicroBatches() == 1)
      return markAllAnalysesPreserved();
    if (failed(MicroBatchSplitter(plan, step).run()))
      return signalPassFailure();
    scaleRecomputeCounts(module, plan.getMicroBatches());
  }
};

} // namespace
