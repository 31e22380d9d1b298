//===- Manifest.h - the JSON document the runtime reads ---------*- C++ -*-===//

#ifndef FSDP_CONVERSION_FSDPTORUNTIME_MANIFEST_H
#define FSDP_CONVERSION_FSDPTORUNTIME_MANIFEST_H

#include "ArenaLayout.h"

#include "InputRoles.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

#include <string>

namespace mlir::fsdp {

/// The manifest of docs/Runtime.md section 2; `recompute` is what
/// fsdp-remat recorded (its integer fields go to "recompute", for fsdp-report;
/// the runtime ignores them), or null. `hostGradTypes`: the element type each
/// offloaded unit's gradient shard reaches the host in. `step`, lowered to
/// runtime calls, gives the collectives it starts, in order, with their
/// units: what a rank that waits too long for one names.
std::string buildManifest(PlanAttr plan, const ArenaLayout &layout,
                          ArrayRef<RankedTensorType> inputTypes, ArrayRef<InputRole> roles,
                          DictionaryAttr recompute, const llvm::StringMap<Type> &hostGradTypes,
                          func::FuncOp step);

} // namespace mlir::fsdp

#endif // FSDP_CONVERSION_FSDPTORUNTIME_MANIFEST_H
