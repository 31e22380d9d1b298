//===- AnnotateKernelArguments.cpp - fsdp-cuda-annotate-kernel-arguments -------===//
//
// The buffer plan puts every buffer at a static byte offset of the arena,
// which is 64-byte aligned: what each pointer a kernel takes points at is
// known at compile time, so how far it is aligned is, and whether it shares
// a byte with another pointer the kernel takes. Behind a kernel's signature
// LLVM sees neither: a pointer parameter is aligned to 1 byte and may alias
// every other one. This pass writes both on the kernel's parameters as
// `llvm.align` and `llvm.noalias`, which the NVPTX backend uses: a buffer a
// kernel only reads, through a parameter no other one overlaps, is loaded
// through the read-only data cache (ld.global.nc), and accesses to adjacent
// elements merge into vector ones as far as the alignment allows.
//
// A kernel may be launched from several places (identical kernels of
// identical blocks are one, fsdp-cuda-bundle-kernels): what it is told holds at
// every launch. Two parameters over the same bytes (an update in place, read
// through one view and written through another) are not noalias.
//
//===----------------------------------------------------------------------===//

#include "KernelFormation/FormKernels.h"
#include "KernelLaunches.h"

#include "Utils/RuntimeABI.h"
#include "fsdp/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPANNOTATEKERNELARGUMENTSPASS
#include "fsdp/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// The largest power of two up to the arena's alignment dividing `offset`:
/// the arena, and so every buffer of the plan, is kArenaAlignment-aligned
/// (the runtime allocates it so, fsdp-assign-buffers places buffers so), the
/// most a pointer into it is known to be.
int64_t alignmentOf(int64_t offset) {
  return offset == 0 ? kArenaAlignment : std::min(offset & -offset, kArenaAlignment);
}

/// The arena a launch in `op` sees: the step's first argument.
Value arenaOf(Operation *op) {
  auto func = op->getParentOfType<func::FuncOp>();
  if (!func || func.getSymName() != kStepFunction || func.getNumArguments() == 0 ||
      !isa<MemRefType>(func.getArgument(0).getType()))
    return nullptr;
  return func.getArgument(0);
}

struct FSDPAnnotateKernelArgumentsPass
    : public fsdp::impl::FSDPAnnotateKernelArgumentsPassBase<FSDPAnnotateKernelArgumentsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::MapVector<gpu::GPUFuncOp, SmallVector<gpu::LaunchFuncOp>> launches =
        launchesByKernel(module);

    Builder b(&getContext());
    for (auto &[kernel, sites] : launches) {
      unsigned count = kernel.getNumArguments();
      // Unknown alignment is 0; a parameter is noalias until a launch
      // passes it bytes another parameter also gets.
      SmallVector<int64_t> alignment(count, kArenaAlignment);
      SmallVector<bool> noalias(count, true);
      for (gpu::LaunchFuncOp launch : sites) {
        Value arena = arenaOf(launch);
        auto operands = launch.getKernelOperands();
        SmallVector<std::optional<ArenaSpan>> spans;
        for (Value operand : operands) {
          if (arena && isa<MemRefType>(operand.getType()))
            spans.push_back(
                arenaSpanOf(operand, arena, cast<MemRefType>(arena.getType()).getNumElements()));
          else
            spans.push_back(std::nullopt);
        }
        for (unsigned i = 0; i < count; ++i) {
          if (!isa<MemRefType>(operands[i].getType()))
            continue;
          alignment[i] = spans[i] ? std::min(alignment[i], alignmentOf(spans[i]->pointer)) : 0;
          std::optional<ArenaAccess> bytes = spans[i] ? spans[i]->bytes : std::nullopt;
          for (unsigned j = 0; j < count; ++j) {
            if (j == i || !isa<MemRefType>(operands[j].getType()))
              continue;
            std::optional<ArenaAccess> other = spans[j] ? spans[j]->bytes : std::nullopt;
            if (operands[i] == operands[j] || overlap(bytes, other))
              noalias[i] = false;
          }
        }
      }
      for (unsigned i = 0; i < count; ++i) {
        if (!isa<MemRefType>(kernel.getArgument(i).getType()))
          continue;
        if (alignment[i] > 0)
          kernel.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                            b.getI64IntegerAttr(alignment[i]));
        if (noalias[i])
          kernel.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(), b.getUnitAttr());
      }
    }
  }
};

} // namespace
