//===- IdenticalFunctions.h - one function for identical bodies -*- C++ -*-===//
//
// The kernels of a deep model's blocks are the same code on other buffers:
// outlined, they are identical functions. Kept once, each is compiled once.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_UTILS_IDENTICALFUNCTIONS_H
#define FSDP_UTILS_IDENTICALFUNCTIONS_H

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::fsdp {

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

#endif // FSDP_UTILS_IDENTICALFUNCTIONS_H
