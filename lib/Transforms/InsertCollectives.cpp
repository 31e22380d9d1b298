//===- InsertCollectives.cpp - fsdp-insert-collectives --------------------===//
//
// Turns the step of a partitioned module into the FSDP schedule: each unit is
// gathered right before its parameters are first read and freed right after
// they are last read (once in forward, and again in backward when the
// strategy reshards after forward); its gradients are packed and reduced as
// soon as the last of them exists; every rank then updates its own shard.
//
//===----------------------------------------------------------------------===//

#include "Utils/StepFunction.h"
#include "fsdp/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPINSERTCOLLECTIVESPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// The latest of `ops` in their block.
Operation *lastInBlock(ArrayRef<Operation *> ops) {
  Operation *last = nullptr;
  for (Operation *op : ops)
    if (!last || last->isBeforeInBlock(op))
      last = op;
  return last;
}

/// The earliest of `ops` in their block.
Operation *firstInBlock(ArrayRef<Operation *> ops) {
  Operation *first = nullptr;
  for (Operation *op : ops)
    if (!first || op->isBeforeInBlock(first))
      first = op;
  return first;
}

/// Users of any of `values`.
SmallVector<Operation *> usersOf(ArrayRef<Value> values) {
  SmallVector<Operation *> users;
  for (Value value : values)
    users.append(value.user_begin(), value.user_end());
  return users;
}

/// Whether the unit's parameters are cut over the tensor ranks (the unit's
/// verifier holds its members all cut or all whole).
bool isCutUnit(UnitOp unit) {
  SmallVector<ParamOp> members = unit.getMembers();
  return !members.empty() && members.front().getSplitDim().has_value();
}

/// One unit's reduced gradient shard, waiting for the update.
struct ShardGradient {
  UnitOp unit;
  Value grad;
};

class CollectiveInserter {
public:
  CollectiveInserter(ModuleOp module, PlanAttr plan, func::FuncOp step)
      : plan(plan), body(step.getBody().front()), builder(module.getContext()) {}

  LogicalResult run(ModuleOp module);

private:
  /// Gathers before the first forward use, frees after the last; re-gathers
  /// for backward when the strategy reshards after forward.
  void scheduleGathers(UnitOp unit, ArrayRef<UseOp> uses);
  /// Flattens, reduces and returns the unit's gradient shard, or nothing when
  /// no parameter of the unit reaches the loss.
  Value reduceGradients(UnitOp unit);
  /// A gather of the unit at `before`, with views replacing `reads`' values
  /// for the users `isReader` selects; freed after the last of them.
  void gatherFor(UnitOp unit, Operation *before, ArrayRef<Value> reads,
                 function_ref<bool(Operation *)> isReader);
  bool isBackward(Operation *op) const { return endOfForward->isBeforeInBlock(op); }
  int64_t replicas(UnitOp unit) const { return plan.getDataRanks() / unit.getRanks(); }

  PlanAttr plan;
  Block &body;
  OpBuilder builder;
  Operation *endOfForward = nullptr;
  llvm::DenseMap<StringAttr, UpdateOp> updates;
};

void CollectiveInserter::gatherFor(UnitOp unit, Operation *before, ArrayRef<Value> reads,
                                   function_ref<bool(Operation *)> isReader) {
  builder.setInsertionPoint(before);
  auto gathered = AllGatherOp::create(builder, before->getLoc(), unit.getFlatType(),
                                      unit.getSymName());
  SmallVector<Value> views;
  for (Value read : reads) {
    if (llvm::none_of(read.getUsers(), isReader))
      continue;
    auto use = read.getDefiningOp<UseOp>();
    auto view = ParamViewOp::create(builder, use.getLoc(), read.getType(),
                                    use.getParamAttr(), gathered);
    read.replaceUsesWithIf(view, [&](OpOperand &use) { return isReader(use.getOwner()); });
    views.push_back(view);
  }
  if (views.empty()) {
    gathered.erase();
    return;
  }
  builder.setInsertionPointAfter(lastInBlock(usersOf(views)));
  FreeOp::create(builder, gathered.getLoc(), gathered);
}

void CollectiveInserter::scheduleGathers(UnitOp unit, ArrayRef<UseOp> uses) {
  SmallVector<Value> reads;
  for (UseOp use : uses)
    reads.push_back(use.getResult());
  bool reshard = plan.getStrategy() == Strategy::FullShard ||
                 plan.getStrategy() == Strategy::HybridShard;
  SmallVector<Operation *> readers = usersOf(reads), backwardReaders;
  for (Operation *reader : readers)
    if (isBackward(reader))
      backwardReaders.push_back(reader);

  // Backward first: its views must not be taken from the forward gather.
  if (reshard && !backwardReaders.empty())
    gatherFor(unit, firstInBlock(backwardReaders), reads,
              [&](Operation *op) { return isBackward(op); });
  // Right before the first op that reads the unit, wherever the model
  // wrote its fsdp.use; a unit nobody reads is not gathered.
  if (!readers.empty())
    gatherFor(unit, firstInBlock(readers), reads, [](Operation *) { return true; });
  for (UseOp use : uses)
    use.erase();
}

Value CollectiveInserter::reduceGradients(UnitOp unit) {
  SmallVector<ParamOp> members = unit.getMembers();
  SmallVector<Value> grads;
  SmallVector<Operation *> producers;
  bool anyGradient = false;
  for (ParamOp param : members) {
    UpdateOp update = updates.lookup(param.getSymNameAttr());
    grads.push_back(update ? update.getGrad() : Value());
    anyGradient |= bool(update);
    // A gradient that is an argument of the step is ready at its start.
    if (update && update.getGrad().getDefiningOp())
      producers.push_back(update.getGrad().getDefiningOp());
  }
  if (!anyGradient)
    return Value();

  // As soon as the last gradient of the unit is complete.
  if (producers.empty())
    builder.setInsertionPointToStart(&body);
  else
    builder.setInsertionPointAfter(lastInBlock(producers));
  Location loc = unit.getLoc();
  for (auto [param, grad] : llvm::zip_equal(members, grads))
    if (!grad)
      grad = arith::ConstantOp::create(
          builder, loc,
          DenseElementsAttr::get(param.getTensorType(),
                                 builder.getZeroAttr(param.getTensorType().getElementType())));
  Value grad = FlattenOp::create(builder, loc, unit.getFlatType(), unit.getSymName(), grads);
  if (unit.getRanks() > 1)
    grad = ReduceScatterOp::create(builder, loc, unit.getShardType(), grad, Reduction::Avg);
  if (replicas(unit) > 1)
    grad = AllReduceOp::create(builder, loc, grad, Reduction::Avg, Group::Replica);
  return grad;
}

LogicalResult CollectiveInserter::run(ModuleOp module) {
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  endOfForward = ret.getNumOperands() == 1 ? ret.getOperand(0).getDefiningOp() : nullptr;
  if (!endOfForward)
    return ret.emitError("the step must return the loss it computes");
  for (UpdateOp update : body.getOps<UpdateOp>())
    updates[update.getParamAttr().getAttr()] = update;
  UpdateOp anyUpdate = updates.empty() ? UpdateOp() : updates.begin()->second;

  // The parameter reads of each unit, in order.
  SymbolTable symbols(module);
  llvm::StringMap<SmallVector<UseOp>> usesOfUnit;
  for (UseOp use : body.getOps<UseOp>())
    if (auto param = symbols.lookup<ParamOp>(use.getParam()); param && param.getUnit())
      usesOfUnit[*param.getUnit()].push_back(use);

  SmallVector<ShardGradient> shardGrads;
  for (UnitOp unit : module.getOps<UnitOp>()) {
    auto uses = usesOfUnit.find(unit.getSymName());
    if (unit.getRanks() > 1 && uses != usesOfUnit.end())
      scheduleGathers(unit, uses->second);
    if (Value grad = reduceGradients(unit))
      shardGrads.push_back({unit, grad});
  }
  if (shardGrads.empty())
    return success();

  // The per-parameter updates (and the clipping computed from unreduced
  // gradients) give way to one update per shard.
  Value step = anyUpdate.getStep(), lr = anyUpdate.getLr();
  for (auto &entry : updates)
    entry.second.erase();
  builder.setInsertionPoint(ret);
  Location loc = ret.getLoc();
  Value coefficient;
  double maxNorm = plan.getClipGradNorm().convertToDouble();
  if (maxNorm > 0.0) {
    // Shards are disjoint and padding is zero: the partial sums add up to
    // the squared norm of the whole gradient. The tensor ranks hold blocks of
    // a cut unit but each the same whole unit: its squares count 1 / T.
    Value sumOfSquares;
    int64_t tensorRanks = plan.getTensorParallel();
    for (ShardGradient &shard : shardGrads) {
      Value squares = MulOp::create(builder, loc, shard.grad, shard.grad);
      Value sum = ReduceSumOp::create(builder, loc, squares, ArrayRef<int64_t>{0});
      if (tensorRanks > 1 && !isCutUnit(shard.unit))
        sum = ScaleOp::create(builder, loc, sum, APFloat(1.0 / static_cast<double>(tensorRanks)));
      sumOfSquares = sumOfSquares ? AddOp::create(builder, loc, sumOfSquares, sum) : sum;
    }
    if (shardGrads.front().unit.getRanks() > 1)
      sumOfSquares =
          AllReduceOp::create(builder, loc, sumOfSquares, Reduction::Sum, Group::Shard);
    if (tensorRanks > 1)
      sumOfSquares = AllReduceOp::create(builder, loc, sumOfSquares, Reduction::Sum, Group::Tensor);
    coefficient = ClipCoefficientOp::create(builder, loc, sumOfSquares,
                                            builder.getF64FloatAttr(maxNorm));
  }
  for (ShardGradient &shard : shardGrads)
    UpdateOp::create(builder, shard.unit.getLoc(), shard.unit.getSymName(), shard.grad, step,
                     lr, coefficient, plan.getOptimizer());
  IRRewriter rewriter(module.getContext());
  (void)runRegionDCE(rewriter, *body.getParent());
  return success();
}

struct FSDPInsertCollectivesPass
    : public fsdp::impl::FSDPInsertCollectivesPassBase<FSDPInsertCollectivesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = requireStep(module, StepLevel::Model, getArgument());
    if (!step)
      return signalPassFailure();
    auto plan = module->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName());
    if (!plan || module.getOps<UnitOp>().empty()) {
      module.emitError("fsdp-insert-collectives needs a partitioned module (fsdp-partition)");
      return signalPassFailure();
    }
    if (failed(CollectiveInserter(module, plan, step).run(module)))
      signalPassFailure();
  }
};

} // namespace
