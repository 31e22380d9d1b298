//===- CPUTarget.cpp - The CPU a trainer is built for ---------------------===//

#include "CPUTarget.h"

#include "Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;

namespace mlir::fsdp {

FailureOr<std::unique_ptr<llvm::TargetMachine>> createCPUTargetMachine(const CPUTarget &target) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *llvmTarget = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!llvmTarget) {
    (void)fail("no LLVM target for " + triple.str() + ": " + error);
    return failure();
  }

  bool native = target.cpu == "native";
  std::string cpu = native ? llvm::sys::getHostCPUName().str() : target.cpu;
  llvm::SubtargetFeatures features;
  if (native)
    for (const auto &[feature, enabled] : llvm::sys::getHostCPUFeatures())
      features.AddFeature(feature, enabled);

  // LLVM only warns about an unknown CPU or feature and builds for a generic
  // one: check both against the target's own tables first.
  // (Built for "generic": an unknown CPU would print LLVM's warning first.)
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      llvmTarget->createMCSubtargetInfo(triple, "generic", ""));
  if (!native && !info->isCPUStringValid(cpu)) {
    (void)fail("--cpu=" + cpu + ": not a CPU LLVM knows for " + triple.getArchName() +
               " (e.g. native, generic, x86-64-v2, x86-64-v3, sapphirerapids, znver4)");
    return failure();
  }
  for (StringRef entry : llvm::split(target.features, ',')) {
    entry = entry.trim();
    if (entry.empty())
      continue;
    StringRef name = entry.drop_front();
    bool known = llvm::any_of(info->getAllProcessorFeatures(),
                              [&](const llvm::SubtargetFeatureKV &kv) { return name == kv.Key; });
    if ((entry.front() != '+' && entry.front() != '-') || !known) {
      (void)fail("--cpu-features=" + target.features + ": '" + entry +
                 "' is not +FEATURE or -FEATURE of a feature LLVM knows for " +
                 triple.getArchName() + " (e.g. +avx2, -avx512f)");
      return failure();
    }
    features.AddFeature(entry);
  }

  std::unique_ptr<llvm::TargetMachine> machine(
      llvmTarget->createTargetMachine(triple, cpu, features.getString(), llvm::TargetOptions(),
                                      llvm::Reloc::PIC_, std::nullopt, target.optLevel));
  return machine;
}

bool hasBf16Products(const llvm::TargetMachine &machine) {
  const llvm::MCSubtargetInfo *info = machine.getMCSubtargetInfo();
  return info->checkFeatures("+avx512bf16") || info->checkFeatures("+amx-bf16");
}

} // namespace mlir::fsdp
