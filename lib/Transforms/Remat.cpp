//===- Remat.cpp - fsdp-remat: recompute activations in backward ----------===//
//
// Activation recompute (activation checkpointing) as the plan's `remat` says.
// The forward pass is cut into parts, one per unit: a part starts at the
// first op that reads a parameter of a unit no earlier op read, and runs to
// the next such op. A value a part hands to another part (the residual
// stream between blocks) is always kept. With `remat = unit` nothing else of
// a recomputed part is kept; with `remat = selective` the results of matrix
// products are kept too. Every other value a backward op reads is computed
// again by a copy of its forward op, placed right before the first backward
// op that needs it, from kept values and other copies: the forward values die
// in the forward pass, and the copies live only in backward.
//
// The copies are the same ops on the same operands, so they compute the same
// values: a step with recompute gives the losses and parameters of the step
// without it, bit for bit. Their parameter reads come after the forward pass,
// so fsdp-insert-collectives gathers the unit again for them (full_shard,
// hybrid_shard) as it does for the unit's backward.
//
//===----------------------------------------------------------------------===//

#include "Utils/StepFunction.h"
#include "fsdp/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPREMATPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// One unit's part of the forward pass.
struct Part {
  StringAttr unit; // null for the ops before the first parameter read
  bool recompute = false;
};

/// What the copies add to a step, and the FLOPs of all its products (the
/// copies' included), to put them in proportion.
struct RecomputeCost {
  int64_t ops = 0, products = 0, productFlops = 0, otherElements = 0, stepProductFlops = 0;
  /// The products of the recomputed attentions' forward passes, 2 of
  /// 2 T S D per batch and query head, and the part of them in causal ones
  /// (a fused attention computes half of those, a tiled one all):
  /// fsdp-record-step-flops leaves them out of the model's FLOPs with
  /// `productFlops`.
  int64_t attentionFlops = 0, fusedAttentionFlops = 0;
};

int64_t numElements(Value value) {
  return llvm::cast<RankedTensorType>(value.getType()).getNumElements();
}

/// 2 M N K per matrix of a product, from its result (every M x N of every
/// batch) and the contracted dimension of its left operand.
std::optional<int64_t> productFlops(Operation *op) {
  auto flops = [](Value lhs, bool transposeLhs, Value result) {
    auto type = llvm::cast<RankedTensorType>(lhs.getType());
    int64_t k = type.getDimSize(type.getRank() - (transposeLhs ? 2 : 1));
    return 2 * k * numElements(result);
  };
  if (auto matmul = dyn_cast<MatmulOp>(op))
    return flops(matmul.getLhs(), matmul.getTransposeLhs(), matmul.getResult());
  if (auto batched = dyn_cast<BatchMatmulOp>(op))
    return flops(batched.getLhs(), batched.getTransposeLhs(), batched.getResult());
  return std::nullopt;
}

/// A forward attention's products: 2 of 2 T S D per batch and query head,
/// of the band's pairs only with a sliding window.
int64_t attentionFlops(AttentionOp attention) {
  auto query = llvm::cast<RankedTensorType>(attention.getQuery().getType());
  auto key = llvm::cast<RankedTensorType>(attention.getKey().getType());
  int64_t queries = query.getDimSize(2);
  int64_t pairs = attentionScoredPairs(queries, key.getDimSize(2), attention.getWindow(),
                                       attention.getKeyBlockValue());
  return 2 * 2 * (query.getNumElements() / queries) * pairs;
}

/// The same as a fused call computes them (attentionFusedPairs).
int64_t fusedAttentionFlops(AttentionOp attention) {
  auto query = llvm::cast<RankedTensorType>(attention.getQuery().getType());
  auto key = llvm::cast<RankedTensorType>(attention.getKey().getType());
  int64_t queries = query.getDimSize(2);
  double pairs =
      attentionFusedPairs(queries, key.getDimSize(2), attention.getCausal(), attention.getWindow());
  return std::llround(2 * 2 * static_cast<double>(query.getNumElements() / queries) * pairs);
}

class Rematerializer {
public:
  Rematerializer(ModuleOp module, PlanAttr plan, func::FuncOp step)
      : module(module), plan(plan), body(step.getBody().front()) {}

  LogicalResult run();
  const RecomputeCost &cost() const { return added; }

private:
  /// Cuts the forward pass (up to `endOfForward`) into parts.
  LogicalResult formParts(Operation *endOfForward);
  /// Marks the parts the plan recomputes; the part that computes the loss
  /// never is (its backward starts where its forward ends).
  LogicalResult chooseParts(Operation *endOfForward);
  /// Whether backward ops read `value` from a copy instead of the forward op.
  bool isRecomputed(Value value) const;
  /// The copy of `value` (made before `builder`'s insertion point, with the
  /// copies it needs, unless made before).
  Value recompute(Value value, OpBuilder &builder);

  ModuleOp module;
  PlanAttr plan;
  Block &body;
  SmallVector<Part> parts;
  llvm::DenseMap<Operation *, unsigned> partOf;
  /// Forward values read by a forward op of another part.
  llvm::DenseSet<Value> handedOver;
  llvm::DenseMap<Value, Value> copies;
  RecomputeCost added;
};

LogicalResult Rematerializer::formParts(Operation *endOfForward) {
  SymbolTable symbols(module);
  llvm::DenseSet<StringAttr> seen;
  parts.push_back(Part{});
  for (Operation &op : body) {
    // Parameter reads and constants are there whenever needed: no part.
    if (!isa<UseOp>(op) && !op.hasTrait<OpTrait::ConstantLike>()) {
      for (Value operand : op.getOperands()) {
        auto use = operand.getDefiningOp<UseOp>();
        if (!use)
          continue;
        auto param = symbols.lookup<ParamOp>(use.getParam());
        if (!param || !param.getUnit())
          return use.emitOpError("reads a parameter without a unit: fsdp-remat runs after "
                                 "fsdp-form-units");
        StringAttr unit = StringAttr::get(module.getContext(), *param.getUnit());
        if (seen.insert(unit).second)
          parts.push_back(Part{unit});
      }
      partOf[&op] = parts.size() - 1;
    }
    if (&op == endOfForward)
      break;
  }
  for (auto [op, part] : partOf)
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers())
        if (auto other = partOf.find(user); other != partOf.end() && other->second != part)
          handedOver.insert(result);
  return success();
}

LogicalResult Rematerializer::chooseParts(Operation *endOfForward) {
  unsigned lossPart = partOf.lookup(endOfForward);
  ArrayAttr named = plan.getRematUnits();
  llvm::StringMap<unsigned> partOfUnit;
  for (auto [index, part] : llvm::enumerate(parts))
    if (part.unit)
      partOfUnit[part.unit.getValue()] = index;
  if (named) {
    for (Attribute name : named) {
      StringRef unit = llvm::cast<StringAttr>(name).getValue();
      auto found = partOfUnit.find(unit);
      if (found == partOfUnit.end())
        return module.emitError("remat_units names \"")
               << unit << "\", which is no unit the forward pass reads first";
      if (found->second == lossPart)
        return module.emitError("remat_units names \"")
               << unit << "\", the unit that computes the loss: its backward starts where "
               << "its forward ends, so nothing of it can be recomputed";
      parts[found->second].recompute = true;
    }
    return success();
  }
  int64_t index = 0;
  for (auto [position, part] : llvm::enumerate(parts)) {
    if (!part.unit || position == lossPart)
      continue;
    part.recompute = index++ % plan.getRematEvery() == 0;
  }
  return success();
}

bool Rematerializer::isRecomputed(Value value) const {
  Operation *op = value.getDefiningOp();
  auto part = op ? partOf.find(op) : partOf.end();
  if (part == partOf.end() || !parts[part->second].recompute || handedOver.contains(value))
    return false;
  return !(plan.getRemat() == RematPolicy::Selective && productFlops(op));
}

Value Rematerializer::recompute(Value value, OpBuilder &builder) {
  if (Value copy = copies.lookup(value))
    return copy;
  Operation *op = value.getDefiningOp();
  IRMapping operands;
  for (Value operand : op->getOperands())
    if (isRecomputed(operand))
      operands.map(operand, recompute(operand, builder));
  Operation *copy = builder.clone(*op, operands);
  for (auto [original, copied] : llvm::zip_equal(op->getResults(), copy->getResults()))
    copies[original] = copied;
  ++added.ops;
  if (std::optional<int64_t> flops = productFlops(op)) {
    ++added.products;
    added.productFlops += *flops;
  } else {
    for (Value result : op->getResults())
      added.otherElements += numElements(result);
  }
  if (auto attention = dyn_cast<AttentionOp>(op)) {
    int64_t flops = attentionFlops(attention);
    added.attentionFlops += flops;
    // Soft-capped scores are never fused (fsdp-fuse-attention): their loops.
    added.fusedAttentionFlops += attention.getSoftcap() ? flops : fusedAttentionFlops(attention);
  }
  return copies.lookup(value);
}

LogicalResult Rematerializer::run() {
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Operation *endOfForward = ret.getNumOperands() == 1 ? ret.getOperand(0).getDefiningOp() : nullptr;
  if (!endOfForward)
    return ret.emitError("the step must return the loss it computes");
  if (failed(formParts(endOfForward)) || failed(chooseParts(endOfForward)))
    return failure();

  SmallVector<Operation *> backward;
  for (Operation *op = endOfForward->getNextNode(); op; op = op->getNextNode())
    backward.push_back(op);
  OpBuilder builder(module.getContext());
  for (Operation *op : backward) {
    builder.setInsertionPoint(op);
    for (OpOperand &operand : op->getOpOperands())
      if (isRecomputed(operand.get()))
        operand.set(recompute(operand.get(), builder));
  }
  for (Operation &op : body)
    added.stepProductFlops += productFlops(&op).value_or(0);
  return success();
}

struct FSDPRematPass : public fsdp::impl::FSDPRematPassBase<FSDPRematPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = requireStep(module, StepLevel::Model, getArgument());
    if (!step)
      return signalPassFailure();
    auto plan = module->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName());
    if (!plan) {
      module.emitError("fsdp-remat needs the module's 'fsdp.plan'");
      return signalPassFailure();
    }
    // Without a backward pass nothing is read again.
    if (plan.getRemat() == RematPolicy::None ||
        step->hasAttr(FSDPDialect::getForwardOnlyAttrName()))
      return markAllAnalysesPreserved();
    Rematerializer remat(module, plan, step);
    if (failed(remat.run()))
      return signalPassFailure();
    const RecomputeCost &cost = remat.cost();
    module->setAttr(FSDPDialect::getRecomputeAttrName(),
                    RecomputeAttr::get(module.getContext(), cost.ops, cost.products,
                                       cost.productFlops, cost.otherElements, cost.stepProductFlops,
                                       cost.attentionFlops, cost.fusedAttentionFlops));
  }
};

} // namespace
