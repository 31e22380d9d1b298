//===- SplitStep.cpp - fsdp-split-step: the step in parts of bounded size ---===//
//
// Once its kernels are outlined, the step is one basic block of calls whose
// length grows with the model's depth (Llama-2-70B: 14,000 LLVM instructions).
// LLVM's greedy register allocator is superlinear on such a block (5 of the
// 70B model's 11 seconds of compilation). Cut into parts of a bounded number
// of ops, each a function of its own called in order, the step costs LLVM the
// same per part, whatever the depth.
//
//===----------------------------------------------------------------------===//

#include "Utils/Outlining.h"
#include "Utils/StepFunction.h"
#include "fsdp/Codegen/Common/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPSPLITSTEPPASS
#include "fsdp/Codegen/Common/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// Whether `op` is cheaply recomputed by every part that needs its value: a
/// constant, a view of the arena, an address, scalar arithmetic on the step's
/// arguments. Such ops are cloned into each part, not passed between parts.
bool isRecomputable(Operation *op) {
  return isPure(op) && op->getNumRegions() == 0 && op->getNumResults() > 0 &&
         llvm::all_of(op->getOperands(), [](Value operand) {
           Operation *def = operand.getDefiningOp();
           return !def || isRecomputable(def);
         });
}

/// One part of the step: its ops, in order, before they move into its
/// function.
class StepPart {
public:
  explicit StepPart(ArrayRef<Operation *> ops)
      : ops(ops.begin(), ops.end()), interface(isRecomputable) {
    members.insert(ops.begin(), ops.end());
  }

  /// Moves the part's ops into a new function `name` in `module`, which takes
  /// the values the part uses from before it and returns those used after it,
  /// and calls it where the ops were.
  void outline(ModuleOp module, SymbolTable &symbols, StringRef name) {
    MLIRContext *ctx = module.getContext();
    // Values of the part's own ops are its own; recomputed ones are
    // computed from values from before the part only.
    auto add = [&](Value value) {
      Operation *def = value.getDefiningOp();
      if (!def || !members.contains(def))
        interface.add(value);
    };
    for (Operation *op : ops) {
      llvm::for_each(op->getOperands(), add);
      llvm::SetVector<Value> captured;
      getUsedValuesDefinedAbove(op->getRegions(), captured);
      llvm::for_each(captured, add);
    }
    ArrayRef<Value> arguments = interface.getArguments();
    SmallVector<Value> results;
    for (Operation *op : ops)
      for (Value result : op->getResults())
        if (llvm::any_of(result.getUsers(),
                         [&](Operation *user) { return !members.contains(user); }))
          results.push_back(result);

    Location loc = ops.front()->getLoc();
    OpBuilder b(ctx);
    auto type = FunctionType::get(ctx, ValueRange(arguments).getTypes(),
                                  ValueRange(results).getTypes());
    auto function = func::FuncOp::create(b, loc, name, type);
    keepOutlined(function);
    symbols.insert(function);

    // The call takes the ops' place, then the ops move into the function.
    b.setInsertionPoint(ops.front());
    auto call = func::CallOp::create(b, loc, function, arguments);
    IRMapping mapping = interface.startBody(function, b);
    Block *body = &function.getBody().front();
    for (Operation *op : ops) {
      op->moveBefore(body, body->end());
      op->walk([&](Operation *nested) {
        for (OpOperand &operand : nested->getOpOperands())
          if (Value inside = mapping.lookupOrNull(operand.get()))
            operand.set(inside);
      });
    }
    b.setInsertionPointToEnd(body);
    func::ReturnOp::create(b, loc, results);
    for (auto [result, value] : llvm::zip(call.getResults(), results))
      value.replaceUsesWithIf(result, [&](OpOperand &use) {
        return !function->isAncestor(use.getOwner());
      });
  }

private:
  SmallVector<Operation *> ops;
  llvm::SmallPtrSet<Operation *, 32> members;
  OutlinedInterface interface;
};

struct FSDPSplitStepPass : public fsdp::impl::FSDPSplitStepPassBase<FSDPSplitStepPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = requireStep(module, StepLevel::Runtime, getArgument());
    if (!step)
      return signalPassFailure();
    if (maxOpsPerPart < 1) {
      module.emitError("fsdp-split-step: max-ops-per-part must be at least 1");
      return signalPassFailure();
    }
    Block &body = step.getBody().front();

    // Parts of consecutive ops that do work (everything but what is
    // recomputed where it is needed); a step no longer than one part stays.
    SmallVector<SmallVector<Operation *>> parts(1);
    for (Operation &op : body.without_terminator()) {
      if (isRecomputable(&op))
        continue;
      if (static_cast<int64_t>(parts.back().size()) == maxOpsPerPart)
        parts.emplace_back();
      parts.back().push_back(&op);
    }
    if (parts.size() < 2)
      return;

    SymbolTable symbols(module);
    for (auto [index, ops] : llvm::enumerate(parts))
      StepPart(ops).outline(module, symbols, ("fsdp_step_part_" + llvm::Twine(index)).str());

    // What only the parts used is now dead in the step.
    SmallVector<Operation *> left =
        llvm::map_to_vector(body.without_terminator(), [](Operation &op) { return &op; });
    for (Operation *op : llvm::reverse(left))
      if (isRecomputable(op) && op->use_empty())
        op->erase();
  }
};

} // namespace
