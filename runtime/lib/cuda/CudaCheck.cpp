//===- CudaCheck.cpp - Every CUDA, cuBLAS and NCCL call, checked ----------===//

#include "cuda/CudaCheck.h"

#include "abi/Error.h"

#include <string>

namespace fsdprt {

void checkCuda(cudaError_t status, const char *call) {
  if (status != cudaSuccess)
    fatal(std::string(call) + ": " + cudaGetErrorString(status));
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
