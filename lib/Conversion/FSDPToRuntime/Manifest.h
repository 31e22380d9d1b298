//===- Manifest.h - the JSON document the runtime reads ---------*- C++ -*-===//

#ifndef FSDP_LIB_CONVERSION_FSDPTORUNTIME_MANIFEST_H
#define FSDP_LIB_CONVERSION_FSDPTORUNTIME_MANIFEST_H

#include "ArenaLayout.h"
#include "InputRoles.h"

#include <string>

namespace mlir::fsdp {

/// The manifest of docs/Runtime.md section 2, version 1.
std::string buildManifest(PlanAttr plan, const ArenaLayout &layout,
                          ArrayRef<RankedTensorType> inputTypes,
                          ArrayRef<InputRole> roles);

} // namespace mlir::fsdp

#endif // FSDP_LIB_CONVERSION_FSDPTORUNTIME_MANIFEST_H
