//===- Outlining.h - the step's code in small, shared functions -*- C++ -*-===//
//
// LLVM's time grows faster than the size of a function: the step's code goes
// into small functions (fsdp-outline-kernels, fsdp-split-step). The kernels of
// a deep model's blocks are the same code on other buffers: outlined, they are
// identical functions, kept once and compiled once.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_UTILS_OUTLINING_H
#define FSDP_UTILS_OUTLINING_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"

#include <functional>

namespace mlir::fsdp {

/// Makes an outlined function internal to the trainer's object and never
/// inlined back into its caller (which would make the step one large function
/// again). `passthrough` is what convert-func-to-llvm carries over.
void keepOutlined(func::FuncOp function);

/// The interface of code about to be moved into a function of its own: the
/// values it takes as arguments, in order of first use, and the ops cloned
/// into the function ahead of the code instead (with what they are computed
/// from, first), as `clone` chooses.
class OutlinedInterface {
public:
  explicit OutlinedInterface(std::function<bool(Operation *)> clone)
      : clone(std::move(clone)) {}

  /// Records how the function gets `value`, defined outside the code.
  void add(Value value);

  ArrayRef<Value> getArguments() const { return arguments; }

  /// Starts the body of `function`, whose inputs are the arguments: its entry
  /// block, with the prelude cloned in; `b` inserts after it. Returns the
  /// mapping of the values outside to the function's.
  IRMapping startBody(func::FuncOp function, OpBuilder &b) const;

private:
  std::function<bool(Operation *)> clone;
  SmallVector<Value> arguments;
  SmallVector<Operation *> prelude;
};

/// Functions indexed by what they compute, to find one identical to another.
class IdenticalFunctions {
public:
  /// A function added before that is identical to `function`: the same type,
  /// argument attributes, attributes other than the name, and body (up to
  /// locations); null if there is none.
  FunctionOpInterface find(FunctionOpInterface function) const;

  void add(FunctionOpInterface function);

  /// How many functions were added.
  size_t size() const { return count; }

private:
  llvm::DenseMap<llvm::hash_code, SmallVector<FunctionOpInterface, 1>> buckets;
  size_t count = 0;
};

} // namespace mlir::fsdp

#endif // FSDP_UTILS_OUTLINING_H
