//===- BufferLiveness.cpp - when a buffer of the step is live -------------===//

#include "Analysis/BufferLiveness.h"

#include "fsdp/IR/BufferKinds.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::fsdp;

static void number(Block &block, Operation *top, StepPositions &positions) {
  for (Operation &op : block) {
    Operation *topOp = top ? top : &op;
    positions.position[&op] = static_cast<int64_t>(positions.ops.size());
    positions.ops.push_back(&op);
    positions.top.push_back(topOp);
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      number(*loop.getBody(), topOp, positions);
      positions.end[&op] = static_cast<int64_t>(positions.ops.size()) - 1;
    }
  }
}

StepPositions::StepPositions(Block &step) { number(step, nullptr, *this); }

/// The first op after the row prologue `op` that reads what it writes: the
/// reduction whose kernel runs it.
static Operation *reductionAfter(Operation *op) {
  auto writer = dyn_cast<DestinationStyleOpInterface>(op);
  if (!writer)
    return nullptr;
  for (Operation *next = op->getNextNode(); next; next = next->getNextNode())
    for (Value written : writer.getDpsInits())
      if (llvm::is_contained(next->getOperands(), written))
        return next;
  return nullptr;
}

int64_t StepPositions::lastUse(Value root) const {
  Operation *definer = root.getDefiningOp();
  Block *home = definer ? definer->getBlock() : root.getParentBlock();
  // A use in `home`'s own block counts where it is; one nested in a loop of
  // that block, at the loop's end.
  auto at = [&](Operation *user) -> int64_t {
    Operation *ancestor = home->findAncestorOpInBlock(*user);
    if (!ancestor)
      return position.lookup(user);
    if (ancestor != user)
      if (auto it = end.find(ancestor); it != end.end())
        return it->second;
    return position.lookup(ancestor);
  };
  int64_t last = definer ? position.lookup(definer) : 0;
  llvm::SetVector<Value> worklist;
  worklist.insert(root);
  for (size_t i = 0; i < worklist.size(); ++i)
    for (Operation *user : worklist[i].getUsers()) {
      last = std::max(last, at(user));
      if (user->hasAttr(kRowPrologueAttr))
        if (Operation *reduction = reductionAfter(user))
          last = std::max(last, at(reduction));
      worklist.insert(user->result_begin(), user->result_end());
      // A region op's results stand for what its body computes from the
      // value (a loop's results from what it carries).
      if (Operation *ancestor = home->findAncestorOpInBlock(*user); ancestor && ancestor != user)
        worklist.insert(ancestor->result_begin(), ancestor->result_end());
    }
  return last;
}
