//===- CPUTarget.h - The CPU a trainer is built for -------------*- C++ -*-===//
//
// fsdpc builds a trainer for the machine it runs on by default (LLVM's host
// CPU and its features, as clang's -march=native). --cpu=NAME builds for
// another x86-64 (any CPU LLVM knows: generic, x86-64-v2, x86-64-v3,
// sapphirerapids, znver4, ...) and --cpu-features=+a,-b adds or removes
// features on top, so that a trainer can run on, or be tested as on, an older
// or different machine.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_DRIVER_CPUTARGET_H
#define FSDP_DRIVER_CPUTARGET_H

#include "mlir/Support/LLVM.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>

namespace mlir::fsdp {

struct CPUTarget {
  /// A CPU name LLVM knows, or "native" for the host CPU and its features.
  std::string cpu = "native";
  /// Comma-separated `+feature` / `-feature`, applied after the CPU's own.
  std::string features;
  llvm::CodeGenOptLevel optLevel = llvm::CodeGenOptLevel::Aggressive;
};

/// Whether `machine` (a CPUTarget's) has bf16 product instructions:
/// AVX512-BF16 or AMX-BF16, with which the runtime multiplies bf16 matrices
/// on oneDNN's bf16 kernels (Runtime.md, section 1). Without them the CPU
/// pipeline computes bf16 products as f32 products of widened operands
/// (fsdp-widen-bf16-products).
bool hasBf16Products(const llvm::TargetMachine &machine);

/// The target machine for `target`, or a failure after printing
/// `fsdpc: error: --cpu...: ...` for a CPU or feature LLVM does not know.
mlir::FailureOr<std::unique_ptr<llvm::TargetMachine>>
createCPUTargetMachine(const CPUTarget &target);

} // namespace mlir::fsdp

#endif // FSDP_DRIVER_CPUTARGET_H
