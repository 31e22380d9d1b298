//===- Passes.h - planning passes -------------------------------*- C++ -*-===//

#ifndef FSDP_PLANNING_PASSES_H
#define FSDP_PLANNING_PASSES_H

#include "fsdp/IR/FSDPOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::fsdp {

#define GEN_PASS_DECL
#include "fsdp/Planning/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fsdp/Planning/Passes.h.inc"

} // namespace mlir::fsdp

#endif // FSDP_PLANNING_PASSES_H
