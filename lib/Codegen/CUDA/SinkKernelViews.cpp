//===- SinkKernelViews.cpp - fsdp-cuda-sink-kernel-views: static kernel memrefs ===//
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
// gpu-launch-sink-index-computations does for sizes. The constants a kernel
// uses are copied into it first, in one walk over the step.
//
//===----------------------------------------------------------------------===//

#include "fsdp/Codegen/CUDA/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPSINKKERNELVIEWSPASS
#include "fsdp/Codegen/CUDA/Passes.h.inc"
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
  /// Gives each launch its own copy of every constant it uses.
  /// gpu-launch-sink-index-computations would do the same one launch at a
  /// time, replacing the constant's uses in that launch by walking all of
  /// them: the step's constants are shared by thousands of launches, which
  /// made that quadratic (Llama-2-70B: most of that pass's 8 to 20 s).
  void sinkConstants() {
    SmallVector<Operation *> constants;
    getOperation().walk([&](Operation *op) {
      if (op->hasTrait<OpTrait::ConstantLike>() && !op->getParentOfType<gpu::LaunchOp>())
        constants.push_back(op);
    });
    for (Operation *constant : constants) {
      DenseMap<Operation *, Value> copies;
      for (OpOperand &use : llvm::make_early_inc_range(constant->getUses())) {
        auto launch = use.getOwner()->getParentOfType<gpu::LaunchOp>();
        if (!launch)
          continue;
        Value &copy = copies[launch];
        if (!copy)
          copy = OpBuilder::atBlockBegin(&launch.getBody().front()).clone(*constant)->getResult(0);
        use.set(copy);
      }
      if (constant->use_empty())
        constant->erase();
    }
  }

  void runOnOperation() override {
    sinkConstants();
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
