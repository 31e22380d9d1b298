//===- CudaCheck.cpp - Every CUDA, cuBLAS and NCCL call, checked ----------===//

#include "cuda/CudaCheck.h"

#include "abi/Error.h"
#include "cuda/CudaDevice.h"

#include <string>

namespace fsdprt {

/// Errors of the device's work itself (a kernel's fault), which CUDA reports
/// to whatever call comes next.
static bool isDeviceFault(cudaError_t status) {
  switch (status) {
  case cudaErrorIllegalAddress:
  case cudaErrorMisalignedAddress:
  case cudaErrorIllegalInstruction:
  case cudaErrorInvalidPc:
  case cudaErrorHardwareStackError:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorAssert:
  case cudaErrorLaunchFailure:
  case cudaErrorLaunchTimeout:
  case cudaErrorECCUncorrectable:
    return true;
  default:
    return false;
  }
}

void checkCuda(cudaError_t status, const char *call) {
  if (status == cudaSuccess)
    return;
  // Say where the device had got to: the fault is older than this call.
  std::string where = isDeviceFault(status) ? lastDeviceWork() : "";
  fatal(std::string(call) + ": " + cudaGetErrorString(status) +
        (where.empty() ? "" : " (" + where + ")"));
}

void checkCublas(cublasStatus_t status, const char *call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fatal(std::string(call) + ": " + cublasGetStatusName(status) + " (" +
          cublasGetStatusString(status) + ")");
}

void checkNccl(ncclResult_t status, const char *call) {
  if (status == ncclSuccess)
    return;
  // NCCL's last error says more than the code's string (which peer, which
  // system call), when it has one.
  std::string detail = ncclGetLastError(nullptr);
  fatal(std::string(call) + ": " + ncclGetErrorString(status) +
        (detail.empty() ? "" : " (" + detail + ")"));
}

} // namespace fsdprt
