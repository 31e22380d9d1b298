//===- CudaCheck.h - Every CUDA, cuBLAS and NCCL call, checked --*- C++ -*-===//
//
// One macro per library wraps each call the CUDA backend makes. A failure is
// a fatal error through the runtime's one error path (Error.h): the line
// `trainer: error: rank R: <the call as written>: <what the library says>`,
// and MPI_Abort of every rank, which may be waiting for this one in a
// collective.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_CUDA_CUDACHECK_H
#define FSDPRT_CUDA_CUDACHECK_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#define FSDPRT_CUDA_CHECK(call) ::fsdprt::checkCuda((call), #call)
#define FSDPRT_CUBLAS_CHECK(call) ::fsdprt::checkCublas((call), #call)
#define FSDPRT_NCCL_CHECK(call) ::fsdprt::checkNccl((call), #call)

namespace fsdprt {

/// Fatal unless `status` is success; `call` is the call's text.
void checkCuda(cudaError_t status, const char *call);
void checkCublas(cublasStatus_t status, const char *call);
void checkNccl(ncclResult_t status, const char *call);

} // namespace fsdprt

#endif // FSDPRT_CUDA_CUDACHECK_H
