//===- FakeCuda.cpp - Host stand-ins for the CUDA runtime and cuBLAS ------===//

#include "FakeCuda.h"

#include "DType.h"

#include <cublas_v2.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <sstream>

namespace fake_cuda {

namespace {

struct Allocation {
  uint8_t *base;
  size_t size;
  int id;
};

struct State {
  std::vector<std::string> log;
  cudaError_t countStatus = cudaSuccess;
  int count = 1;
  std::map<std::string, int> failures;
  // Handles are addresses of tokens; their names say what created them.
  std::deque<char> tokens;
  std::map<const void *, std::string> names;
  std::map<std::string, int> created;
  std::vector<Allocation> allocations;
  int allocated = 0;
  void **lastParams = nullptr;
};

State &state() {
  static State *instance = new State; // never destroyed: calls may come at exit
  return *instance;
}

void *newHandle(const std::string &kind) {
  State &s = state();
  s.tokens.emplace_back();
  void *handle = &s.tokens.back();
  s.names[handle] = kind + std::to_string(++s.created[kind]);
  return handle;
}

std::string name(const void *handle) {
  auto found = state().names.find(handle);
  return found == state().names.end() ? "?" : found->second;
}

/// `device<N>+<offset>` inside an allocation of cudaMalloc, else `host`.
std::string where(const void *pointer) {
  auto *p = static_cast<const uint8_t *>(pointer);
  for (const Allocation &a : state().allocations)
    if (p >= a.base && p <= a.base + a.size)
      return "device" + std::to_string(a.id) + "+" + std::to_string(p - a.base);
  return "host";
}

template <typename... Args> void log(const char *function, const Args &...args) {
  std::ostringstream line;
  line << function << "(";
  [[maybe_unused]] const char *separator = ""; // unused by a call without arguments
  ((line << separator << args, separator = ", "), ...);
  line << ")";
  state().log.push_back(line.str());
}

void logResult(const std::string &result) { state().log.back() += " -> " + result; }

/// The status failNext planned for `function`, or 0.
int plannedFailure(const char *function) {
  auto found = state().failures.find(function);
  if (found == state().failures.end())
    return 0;
  int status = found->second;
  state().failures.erase(found);
  state().log.push_back(std::string(function) + " fails with " + std::to_string(status));
  return status;
}

const char *operation(cublasOperation_t op) { return op == CUBLAS_OP_N ? "N" : "T"; }

/// Element (row, column) of op(X), X column-major with leading dimension ld.
template <typename T> T at(const T *x, cublasOperation_t op, int ld, int64_t row, int64_t column) {
  return op == CUBLAS_OP_N ? x[row + column * ld] : x[column + row * ld];
}

/// cuBLAS's column-major product: C (m x n) = alpha op(A) op(B) + beta C, op(A)
/// m x k, op(B) k x n; C is not read when beta is 0. `load` and `store`
/// convert an element.
template <typename T, typename Load, typename Store>
void columnMajorGemm(cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                     float alpha, const T *a, int lda, const T *b, int ldb, float beta, T *c,
                     int ldc, Load load, Store store) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p)
        sum += load(at(a, transa, lda, i, p)) * load(at(b, transb, ldb, p, j));
      float value = alpha * sum;
      if (beta != 0.0f)
        value += beta * load(c[i + j * ldc]);
      c[i + j * ldc] = store(value);
    }
}

float loadBF16(uint16_t bits) { return static_cast<float>(fsdprt::bf16ToDouble(bits)); }

uint16_t storeBF16(float value) { return fsdprt::roundToBF16(value); }

} // namespace

const std::vector<std::string> &calls() { return state().log; }

std::vector<std::string> callsTo(const std::string &prefix) {
  std::vector<std::string> matching;
  for (const std::string &call : state().log)
    if (call.compare(0, prefix.size(), prefix) == 0)
      matching.push_back(call);
  return matching;
}

std::vector<std::string> results(const std::string &prefix) {
  std::vector<std::string> handles;
  for (const std::string &call : callsTo(prefix)) {
    size_t arrow = call.rfind(" -> ");
    if (arrow != std::string::npos)
      handles.push_back(call.substr(arrow + 4));
  }
  return handles;
}

void reset() {
  State &s = state();
  s.log.clear();
  s.failures.clear();
  s.countStatus = cudaSuccess;
  s.count = 1;
  // Device pointers are named from device1 again once none is left.
  if (s.allocations.empty())
    s.allocated = 0;
}

void setDevices(cudaError_t status, int count) {
  state().countStatus = status;
  state().count = count;
}

void failNext(const std::string &function, int status) { state().failures[function] = status; }

void **lastLaunchParams() { return state().lastParams; }

} // namespace fake_cuda

using namespace fake_cuda;

#define FAIL_IF_PLANNED(type, function)                                                          \
  if (int status = plannedFailure(function))                                                     \
  return static_cast<type>(status)

extern "C" {

cudaError_t __wrap_cudaGetDeviceCount(int *count) {
  log("cudaGetDeviceCount");
  *count = state().count;
  return state().countStatus;
}

cudaError_t __wrap_cudaSetDevice(int device) {
  log("cudaSetDevice", device);
  FAIL_IF_PLANNED(cudaError_t, "cudaSetDevice");
  return cudaSuccess;
}

cudaError_t __wrap_cudaDeviceGetAttribute(int *value, cudaDeviceAttr attribute, int device) {
  log("cudaDeviceGetAttribute", static_cast<int>(attribute), device);
  *value = attribute == cudaDevAttrMaxSharedMemoryPerBlockOptin ? kMaxSharedMemoryPerBlockOptin : 0;
  return cudaSuccess;
}

cudaError_t __wrap_cudaDeviceSynchronize() {
  log("cudaDeviceSynchronize");
  return cudaSuccess;
}

cudaError_t __wrap_cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags) {
  log("cudaStreamCreateWithFlags", flags == cudaStreamNonBlocking ? "non-blocking" : "blocking");
  *stream = static_cast<cudaStream_t>(newHandle("stream"));
  logResult(name(*stream));
  return cudaSuccess;
}

cudaError_t __wrap_cudaStreamDestroy(cudaStream_t stream) {
  log("cudaStreamDestroy", name(stream));
  return cudaSuccess;
}

cudaError_t __wrap_cudaStreamSynchronize(cudaStream_t stream) {
  log("cudaStreamSynchronize", name(stream));
  return cudaSuccess;
}

cudaError_t __wrap_cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  log("cudaStreamWaitEvent", name(stream), name(event));
  return cudaSuccess;
}

cudaError_t __wrap_cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags) {
  log("cudaEventCreateWithFlags", flags == cudaEventDisableTiming ? "no timing" : "timing");
  *event = static_cast<cudaEvent_t>(newHandle("event"));
  logResult(name(*event));
  return cudaSuccess;
}

cudaError_t __wrap_cudaEventDestroy(cudaEvent_t event) {
  log("cudaEventDestroy", name(event));
  return cudaSuccess;
}

cudaError_t __wrap_cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  log("cudaEventRecord", name(event), name(stream));
  return cudaSuccess;
}

cudaError_t __wrap_cudaEventSynchronize(cudaEvent_t event) {
  log("cudaEventSynchronize", name(event));
  return cudaSuccess;
}

cudaError_t __wrap_cudaHostAlloc(void **pointer, size_t size, unsigned int flags) {
  log("cudaHostAlloc", size, flags);
  FAIL_IF_PLANNED(cudaError_t, "cudaHostAlloc");
  size_t rounded = (size + 4095) / 4096 * 4096;
  *pointer = std::aligned_alloc(4096, rounded);
  // Page-locked memory is not zeroed: garbage shows a caller that needs zeros
  // and does not write them.
  std::memset(*pointer, 0xA5, rounded);
  logResult("host");
  return cudaSuccess;
}

cudaError_t __wrap_cudaFreeHost(void *pointer) {
  log("cudaFreeHost", "host");
  std::free(pointer);
  return cudaSuccess;
}

cudaError_t __wrap_cudaMalloc(void **pointer, size_t size) {
  log("cudaMalloc", size);
  FAIL_IF_PLANNED(cudaError_t, "cudaMalloc");
  // Device memory is 256-byte aligned.
  size_t rounded = (size + 255) / 256 * 256;
  auto *base = static_cast<uint8_t *>(std::aligned_alloc(256, rounded));
  state().allocations.push_back({base, size, ++state().allocated});
  *pointer = base;
  logResult(where(base));
  return cudaSuccess;
}

cudaError_t __wrap_cudaFree(void *pointer) {
  log("cudaFree", where(pointer));
  std::vector<Allocation> &allocations = state().allocations;
  for (auto a = allocations.begin(); a != allocations.end(); ++a)
    if (a->base == pointer) {
      std::free(a->base);
      allocations.erase(a);
      break;
    }
  return cudaSuccess;
}

cudaError_t __wrap_cudaMemset(void *pointer, int value, size_t count) {
  log("cudaMemset", where(pointer), value, count);
  std::memset(pointer, value, count);
  return cudaSuccess;
}

cudaError_t __wrap_cudaMemcpy(void *to, const void *from, size_t count, cudaMemcpyKind) {
  log("cudaMemcpy", where(to) + " <- " + where(from), count);
  std::memcpy(to, from, count);
  return cudaSuccess;
}

cudaError_t __wrap_cudaMemcpyAsync(void *to, const void *from, size_t count, cudaMemcpyKind kind,
                                   cudaStream_t stream) {
  static const char *const kKinds[] = {"host to host", "host to device", "device to host",
                                       "device to device", "default"};
  log("cudaMemcpyAsync", where(to) + " <- " + where(from), count,
      kind >= 0 && kind <= 4 ? kKinds[kind] : "?", name(stream));
  std::memcpy(to, from, count);
  return cudaSuccess;
}

cudaError_t __wrap_cudaLibraryLoadData(cudaLibrary_t *library, const void *code, cudaJitOption *,
                                       void **, unsigned, cudaLibraryOption *, void **, unsigned) {
  log("cudaLibraryLoadData", static_cast<const char *>(code));
  *library = static_cast<cudaLibrary_t>(newHandle("library"));
  logResult(name(*library));
  return cudaSuccess;
}

cudaError_t __wrap_cudaLibraryGetKernel(cudaKernel_t *kernel, cudaLibrary_t library,
                                        const char *kernelName) {
  log("cudaLibraryGetKernel", name(library), kernelName);
  *kernel = static_cast<cudaKernel_t>(newHandle("kernel"));
  logResult(name(*kernel));
  return cudaSuccess;
}

cudaError_t __wrap_cudaLibraryUnload(cudaLibrary_t library) {
  log("cudaLibraryUnload", name(library));
  return cudaSuccess;
}

cudaError_t __wrap_cudaFuncSetAttribute(const void *function, cudaFuncAttribute attribute,
                                        int value) {
  log("cudaFuncSetAttribute", name(function),
      attribute == cudaFuncAttributeMaxDynamicSharedMemorySize ? "max dynamic shared memory"
                                                               : "other",
      value);
  return cudaSuccess;
}

cudaError_t __wrap_cudaLaunchKernel(const void *function, dim3 grid, dim3 block, void **params,
                                    size_t smem, cudaStream_t stream) {
  auto dims = [](dim3 d) {
    return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
  };
  log("cudaLaunchKernel", name(function), "grid " + dims(grid), "block " + dims(block),
      "smem " + std::to_string(smem), name(stream));
  state().lastParams = params;
  return cudaSuccess;
}

cublasStatus_t __wrap_cublasCreate_v2(cublasHandle_t *handle) {
  log("cublasCreate");
  FAIL_IF_PLANNED(cublasStatus_t, "cublasCreate_v2");
  *handle = static_cast<cublasHandle_t>(newHandle("cublas"));
  logResult(name(*handle));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasDestroy_v2(cublasHandle_t handle) {
  log("cublasDestroy", name(handle));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  log("cublasSetStream", name(handle), name(stream));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  log("cublasSetMathMode", name(handle), static_cast<int>(mode));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                     cublasOperation_t transb, int m, int n, int k,
                                     const float *alpha, const float *a, int lda, const float *b,
                                     int ldb, const float *beta, float *c, int ldc) {
  log("cublasSgemm", name(handle), operation(transa), operation(transb), m, n, k, lda, ldb, ldc);
  auto same = [](float x) { return x; };
  columnMajorGemm(transa, transb, m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc, same, same);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                cublasOperation_t transb, int m, int n, int k,
                                                const float *alpha, const float *a, int lda,
                                                long long strideA, const float *b, int ldb,
                                                long long strideB, const float *beta, float *c,
                                                int ldc, long long strideC, int batch) {
  log("cublasSgemmStridedBatched", name(handle), operation(transa), operation(transb), m, n, k,
      lda, strideA, ldb, strideB, ldc, strideC, batch);
  auto same = [](float x) { return x; };
  for (int i = 0; i < batch; ++i)
    columnMajorGemm(transa, transb, m, n, k, *alpha, a + i * strideA, lda, b + i * strideB, ldb,
                    *beta, c + i * strideC, ldc, same, same);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                   cublasOperation_t transb, int m, int n, int k,
                                   const void *alpha, const void *a, cudaDataType aType, int lda,
                                   const void *b, cudaDataType bType, int ldb, const void *beta,
                                   void *c, cudaDataType cType, int ldc,
                                   cublasComputeType_t compute, cublasGemmAlgo_t) {
  bool bf16 = aType == CUDA_R_16BF && bType == CUDA_R_16BF && cType == CUDA_R_16BF;
  log("cublasGemmEx", name(handle), operation(transa), operation(transb), m, n, k, lda, ldb, ldc,
      bf16 ? "bf16" : "other types", compute == CUBLAS_COMPUTE_32F ? "fp32" : "other compute");
  if (!bf16 || compute != CUBLAS_COMPUTE_32F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  columnMajorGemm(transa, transb, m, n, k, *static_cast<const float *>(alpha),
                  static_cast<const uint16_t *>(a), lda, static_cast<const uint16_t *>(b), ldb,
                  *static_cast<const float *>(beta), static_cast<uint16_t *>(c), ldc, loadBF16,
                  storeBF16);
  return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"
