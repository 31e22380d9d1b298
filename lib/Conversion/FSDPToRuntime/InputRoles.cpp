//===- InputRoles.cpp - how the model uses each input ---------------------===//

#include "InputRoles.h"

#include "fsdp/IR/FSDPOps.h"

using namespace mlir;
using namespace mlir::fsdp;

/// The role one use gives an input, if it gives one.
static std::optional<InputRole> roleOfUse(OpOperand &use) {
  Operation *user = use.getOwner();
  Value input = use.get();
  if (auto embedding = dyn_cast<EmbeddingOp>(user); embedding && embedding.getIndices() == input)
    return InputRole{"tokens", embedding.getTable().getType().getDimSize(0)};
  if (auto embedding = dyn_cast<TensorEmbeddingOp>(user);
      embedding && embedding.getIndices() == input)
    return InputRole{"tokens", static_cast<int64_t>(embedding.getRows())};
  if (auto loss = dyn_cast<CrossEntropyOp>(user); loss && loss.getTargets() == input)
    return InputRole{"classes", loss.getLogits().getType().getShape().back()};
  if (auto loss = dyn_cast<TensorCrossEntropyOp>(user); loss && loss.getTargets() == input)
    return InputRole{"classes", static_cast<int64_t>(loss.getClasses())};
  if (auto loss = dyn_cast<MSEOp>(user); loss && loss.getTarget() == input)
    return InputRole{"regression_target", 0};
  return std::nullopt;
}

FailureOr<SmallVector<InputRole>> mlir::fsdp::findInputRoles(func::FuncOp step,
                                                             unsigned numInputs) {
  SmallVector<InputRole> roles;
  for (unsigned i = 0; i < numInputs; ++i) {
    BlockArgument input = step.getArgument(i);
    std::optional<InputRole> role;
    for (OpOperand &use : input.getUses()) {
      std::optional<InputRole> found = roleOfUse(use);
      if (!found)
        continue;
      // Integer inputs used two ways must agree on the range of their values.
      if (role && role->bound != found->bound)
        return step.emitError("input #")
               << i << " is used both as " << role->role << " < " << role->bound
               << " and as " << found->role << " < " << found->bound;
      if (!role || role->role == "regression_target")
        role = found;
    }
    bool isInteger = llvm::isa<IntegerType>(getElementTypeOrSelf(input.getType()));
    if (!role && isInteger)
      return step.emitError("integer input #")
             << i << " is neither embedding indices nor cross-entropy targets, so "
                     "the trainer could not check its values";
    roles.push_back(role.value_or(InputRole{"features", 0}));
  }
  return roles;
}
