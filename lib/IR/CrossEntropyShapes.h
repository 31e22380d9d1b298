//===- CrossEntropyShapes.h - the cross-entropies' shapes -------*- C++ -*-===//
//
// Shared by fsdp.cross_entropy and the tensor ranks' fsdp.tensor_cross_entropy
// and its parts (FSDPTensorParallelOps.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_IR_CROSSENTROPYSHAPES_H
#define FSDP_IR_CROSSENTROPYSHAPES_H

#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"

namespace mlir::fsdp {

/// The scalar loss type of a cross-entropy of `logits` [..., C] against
/// `targets` [...], into `inferred`; an error at `loc` (as `opName`'s) for
/// other shapes.
LogicalResult inferCrossEntropyLoss(std::optional<Location> loc, StringRef opName, Value logits,
                                    Value targets, SmallVectorImpl<Type> &inferred);

} // namespace mlir::fsdp

#endif // FSDP_IR_CROSSENTROPYSHAPES_H
