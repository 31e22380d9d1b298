//===- RecordKernelOrigins.cpp - fsdp-cuda-record-kernel-origins ----------===//
//
// A kernel the device reports a fault in is, to the runtime, a name like
// fsdp_kernel_29. Its ops still carry the model's source locations: this pass
// writes them beside the kernels, in the global fsdp_kernel_origins, so that
// the runtime's error (--debug-sync) points at the model's lines.
//
//===----------------------------------------------------------------------===//

#include "fsdp/ABI/RuntimeABI.h"
#include "fsdp/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPRECORDKERNELORIGINSPASS
#include "fsdp/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// A kernel's line lists at most this many places.
constexpr size_t kMaxOrigins = 4;

/// The file:line:col places inside `location` (fused ones' each, a name's or
/// a call site's callee).
void collectPlaces(Location location, llvm::SetVector<Location> &places) {
  if (isa<FileLineColLoc>(location)) {
    places.insert(location);
  } else if (auto fused = dyn_cast<FusedLoc>(location)) {
    for (Location inner : fused.getLocations())
      collectPlaces(inner, places);
  } else if (auto named = dyn_cast<NameLoc>(location)) {
    collectPlaces(named.getChildLoc(), places);
  } else if (auto call = dyn_cast<CallSiteLoc>(location)) {
    collectPlaces(call.getCallee(), places);
  }
}

/// `<name>\t<place>, <place>, ...\n`: where `kernel`'s ops come from.
std::string originLine(gpu::GPUFuncOp kernel) {
  llvm::SetVector<Location> places;
  kernel.getBody().walk([&](Operation *op) { collectPlaces(op->getLoc(), places); });
  std::string line = kernel.getName().str() + "\t";
  for (size_t i = 0; i < places.size() && i < kMaxOrigins; ++i) {
    auto place = cast<FileLineColLoc>(places[i]);
    line += (i ? ", " : "") + place.getFilename().str() + ":" + std::to_string(place.getLine()) +
            ":" + std::to_string(place.getColumn());
  }
  if (places.size() > kMaxOrigins)
    line += ", ...";
  return line + "\n";
}

struct FSDPRecordKernelOriginsPass
    : public fsdp::impl::FSDPRecordKernelOriginsPassBase<FSDPRecordKernelOriginsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string table;
    for (auto kernels : module.getOps<gpu::GPUModuleOp>())
      for (auto kernel : kernels.getOps<gpu::GPUFuncOp>())
        table += originLine(kernel);
    table.push_back('\0');
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), table.size());
    LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/true,
                           LLVM::Linkage::External, kKernelOriginsGlobal,
                           b.getStringAttr(table));
  }
};

} // namespace
