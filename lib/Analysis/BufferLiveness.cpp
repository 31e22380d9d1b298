//===- BufferLiveness.cpp - when a buffer of the step is live -------------===//

#include "fsdp/Analysis/BufferLiveness.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

int64_t mlir::fsdp::lastUse(Value root, Block &block,
                            const llvm::DenseMap<Operation *, int64_t> &position) {
  int64_t last = position.lookup(block.findAncestorOpInBlock(*root.getDefiningOp()));
  llvm::SetVector<Value> worklist;
  worklist.insert(root);
  for (size_t i = 0; i < worklist.size(); ++i)
    for (Operation *user : worklist[i].getUsers()) {
      Operation *top = block.findAncestorOpInBlock(*user);
      last = std::max(last, position.lookup(top));
      worklist.insert(user->result_begin(), user->result_end());
      if (top != user)
        worklist.insert(top->result_begin(), top->result_end());
    }
  return last;
}
