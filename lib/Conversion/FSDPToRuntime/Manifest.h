//===- Manifest.h - the lowered step's facts, as #fsdp.manifest -*- C++ -*-===//

#ifndef FSDP_CONVERSION_FSDPTORUNTIME_MANIFEST_H
#define FSDP_CONVERSION_FSDPTORUNTIME_MANIFEST_H

#include "ArenaLayout.h"

#include "InputRoles.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::fsdp {

/// The manifest of docs/Runtime.md section 2, typed, as the lowering leaves
/// it: its arena is the persistent part until fsdp-assign-buffers plans the
/// rest. `recompute` is what fsdp-remat recorded (for fsdp-report; the
/// runtime ignores it), or null. `hostGradTypes`: the element type each
/// offloaded unit's gradient shard reaches the host in. `step`, lowered to
/// runtime calls, gives the collectives it starts, in order, with their
/// units: what a rank that waits too long for one names.
ManifestAttr buildManifest(PlanAttr plan, const ArenaLayout &layout,
                           ArrayRef<RankedTensorType> inputTypes, ArrayRef<InputRole> roles,
                           RecomputeAttr recompute, const llvm::StringMap<Type> &hostGradTypes,
                           func::FuncOp step);

} // namespace mlir::fsdp

#endif // FSDP_CONVERSION_FSDPTORUNTIME_MANIFEST_H
