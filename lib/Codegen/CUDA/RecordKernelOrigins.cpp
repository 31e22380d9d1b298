//===- RecordKernelOrigins.cpp - fsdp-cuda-record-kernel-origins ----------===//
//
// A kernel the device reports a fault in is, to the runtime, a name like
// fsdp_kernel_29. Its ops still carry the model's source locations: this pass
// writes them beside the kernels, in the global fsdp_kernel_origins, so that
// the runtime's error (--debug-sync) points at the model's lines.
//
//===----------------------------------------------------------------------===//

#include "Utils/RuntimeABI.h"
#include "Utils/RuntimeCalls.h"
#include "fsdp/Codegen/CUDA/Passes.h"

#include "KernelOrigins.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPRECORDKERNELORIGINSPASS
#include "fsdp/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// A kernel's line lists at most this many places.
constexpr size_t kMaxOrigins = 4;

/// `<name>\t<place>, <place>, ...\n`: where `kernel`'s ops come from.
std::string originLine(gpu::GPUFuncOp kernel) {
  SmallVector<FileLineColLoc> places = kernelPlaces(kernel);
  std::string line = kernel.getName().str() + "\t";
  for (size_t i = 0; i < places.size() && i < kMaxOrigins; ++i)
    line += (i ? ", " : "") + placeText(places[i]);
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
    defineCString(module, kKernelOriginsGlobal, table);
  }
};

} // namespace
