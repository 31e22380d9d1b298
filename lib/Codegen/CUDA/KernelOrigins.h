//===- KernelOrigins.h - where in the model a kernel's ops come from -*- C++ -*-===//
//
// Shared by the passes that name a kernel to people: the runtime's table
// of origins (fsdp-cuda-record-kernel-origins) and the kernel table
// (fsdp-cuda-write-kernel-table).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_CODEGEN_CUDA_KERNELORIGINS_H
#define FSDP_CODEGEN_CUDA_KERNELORIGINS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::fsdp {

/// The distinct file:line:col places of `kernel`'s ops, in the order its
/// body first uses them (fused locations' each, a name's or a call site's
/// callee).
SmallVector<FileLineColLoc> kernelPlaces(gpu::GPUFuncOp kernel);

/// `place` as `file:line:col`.
std::string placeText(FileLineColLoc place);

} // namespace mlir::fsdp

#endif // FSDP_CODEGEN_CUDA_KERNELORIGINS_H
