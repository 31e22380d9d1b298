//===- SinkKernelViews.cpp - fsdp-sink-kernel-views: static kernel memrefs ===//
//
// The kernels take each memref as a bare pointer (one 8-byte parameter
// instead of a descriptor of two pointers, the offset, the sizes and the
// strides: convert-gpu-to-nvvm's use-bare-ptr-memref-call-conv and
// gpu-to-llvm's use-bare-pointers-for-kernels), which passes nothing but the
// pointer: the kernel knows the rest from the memref's type, so the type must
// be static. Every buffer is a static view of the arena; what is not static
// is a view made from one in a host loop (the attention's key blocks: a
// subview at the block's offset). Such a view is made in the kernel instead,
// from its static source and the loop's index, as
// gpu-launch-sink-index-computations does for sizes.
//
//===----------------------------------------------------------------------===//

#include "fsdp/Transforms/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPSINKKERNELVIEWSPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// Whether `value` is a memref a kernel cannot take as a bare pointer.
bool needsDescriptor(Value value) {
  auto type = dyn_cast<BaseMemRefType>(value.getType());
  return type && !LLVMTypeConverter::canConvertToBarePtr(type);
}

/// Whether `value` is a view `launch` can make itself: a side-effect-free
/// view-like op above it (a subview, a reshape, a cast).
bool isSinkableView(Value value) {
  Operation *def = value.getDefiningOp();
  return def && isa<ViewLikeOpInterface>(def) && isMemoryEffectFree(def) &&
         def->getNumRegions() == 0;
}

struct FSDPSinkKernelViewsPass
    : public fsdp::impl::FSDPSinkKernelViewsPassBase<FSDPSinkKernelViewsPass> {
  void runOnOperation() override {
    WalkResult result = getOperation().walk([&](gpu::LaunchOp launch) {
      Region &body = launch.getBody();
      // One view a round, cloned first in the kernel: its source (a view
      // too, or a static buffer) is then what the kernel takes.
      while (true) {
        llvm::SetVector<Value> taken;
        getUsedValuesDefinedAbove(body, taken);
        auto view = llvm::find_if(
            taken, [](Value value) { return needsDescriptor(value) && isSinkableView(value); });
        if (view == taken.end())
          break;
        Operation *def = view->getDefiningOp();
        OpBuilder b = OpBuilder::atBlockBegin(&body.front());
        Operation *clone = b.clone(*def);
        replaceAllUsesInRegionWith(*view, clone->getResult(cast<OpResult>(*view).getResultNumber()),
                                   body);
        if (def->use_empty())
          def->erase();
      }
      llvm::SetVector<Value> taken;
      getUsedValuesDefinedAbove(body, taken);
      for (Value value : taken) {
        if (needsDescriptor(value)) {
          launch.emitOpError("takes ")
              << value.getType()
              << ", which a kernel cannot take as a bare pointer (not a static view)";
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
