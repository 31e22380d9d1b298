//===- FakeCuda.h - Host stand-ins for the CUDA runtime, cuBLAS and cuBLASLt -*- C++ -*-===//
//
// There is no GPU here, yet the CUDA backend's logic can run: programs linked
// with FakeCuda.cpp and `-Wl,--wrap=<function>` for each CUDA runtime, cuBLAS
// and cuBLASLt function the backend calls (test/CMakeLists.txt) get these
// instead. Device memory is host memory, streams run in program order (a copy
// or a product happens when it is enqueued, outside a capture), and the
// products follow cuBLAS's and cuBLASLt's documented column-major semantics,
// so that the backend's row-major mapping is checked against a plain
// product. cuBLASLt's products are all-bf16 (fp32 compute) or all-f32 (fp32
// or TF32 compute, computed in fp32 here: a GPU rounds the inputs to TF32),
// and of its epilogues only the bias is modelled (another is refused with
// CUBLAS_STATUS_NOT_SUPPORTED, so that it cannot go unchecked); an algorithm
// needs the alignment of the bias pointer the heuristic saw. NCCL's
// stand-ins, over MPI, are FakeNccl.cpp's.
//
// Every call is logged, one line each (`cudaSetDevice(1)`, `cudaEventRecord(
// event1, stream2)`): handles are named after what created them, device
// pointers as `device<N>+<offset>` and page-locked host memory (cudaHostAlloc)
// as `pinned<N>+<offset>`.
//
// A copy to the device from page-locked memory would still be reading it,
// on a GPU, until the host synchronises with it (an event recorded after it
// on its stream, the stream, or the device): the fake remembers the bytes it
// copied, and when the host synchronises checks that they are still there.
// Bytes the host changed meanwhile (a staging buffer reused too early) are
// logged as a line `race: ...`, as is freeing such memory before then.
//
// A stalled stream (stallStream) models work that never completes: the
// NCCL stand-ins stall a collective's stream when a fault is injected.
// Events are polled with cudaEventQuery, which is not logged (the watchdog
// polls from a thread of its own, at times of its own).
//
// Stream capture (cudaStreamBeginCapture) records instead of doing: while a
// stream is captured, the work enqueued on it (copies, fills, launches,
// cuBLAS and cuBLASLt products), and on every stream that joined the capture
// by waiting for an event recorded in it, is kept in enqueue order, and each
// cudaGraphLaunch of the graph it becomes runs it in that order, on the
// bytes of that moment. cudaStreamEndCapture fails, as CUDA's does, when a
// stream that joined has work the origin stream did not wait for
// (cudaErrorStreamCaptureUnjoined) or when the capture was invalidated. What
// CUDA refuses during a capture is logged as a line `capture: ...`, and
// invalidates it: a synchronising call (cudaDeviceSynchronize,
// cudaStreamSynchronize, cudaEventSynchronize, cudaMemcpy), cudaMalloc, a
// captured stream waiting for an event recorded outside the capture, and a
// cuBLAS product on a handle without a workspace of the caller's
// (cublasSetWorkspace: cuBLAS would allocate one); so is waiting, later, for
// an event last recorded inside a capture.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TEST_CUDA_FAKECUDA_H
#define FSDPRT_TEST_CUDA_FAKECUDA_H

#include <cuda_runtime_api.h>

#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace fake_cuda {

/// The calls logged since the last reset().
const std::vector<std::string> &calls();

/// The logged calls that start with `prefix`.
std::vector<std::string> callsTo(const std::string &prefix);

/// What the logged calls that start with `prefix` returned (the handles
/// after their ` -> `), in order.
std::vector<std::string> results(const std::string &prefix);

/// Forgets the log, any failure still planned and a capture under way; one
/// device from now on.
/// Allocations are numbered from 1 again when none is left.
void reset();

/// What cudaGetDeviceCount answers.
void setDevices(cudaError_t status, int count);

/// Makes the next call of `function` (as linked, e.g. `cublasCreate_v2`)
/// return `status`, a cudaError_t or cublasStatus_t value, and do nothing
/// (cudaStreamEndCapture still ends the capture).
void failNext(const std::string &function, int status);

/// The `params` of the last cudaLaunchKernel.
void **lastLaunchParams();

/// How many algorithms cublasLtMatmulAlgoGetHeuristic finds from now on
/// (1 after reset()); 0: it succeeds with none.
void setHeuristicAlgorithms(int count);

/// cudaDevAttrMaxSharedMemoryPerBlockOptin of the fake device.
constexpr int kMaxSharedMemoryPerBlockOptin = 101376;

/// What cudaDeviceGetStreamPriorityRange answers (as on an H100: lower
/// numbers are greater priorities).
constexpr int kLeastStreamPriority = 0;
constexpr int kGreatestStreamPriority = -5;

/// For the other stand-ins (FakeNccl.cpp), so that their calls are logged
/// and run among the CUDA runtime's: a new handle named `<kind><N>`; the
/// name of a handle, or `?`; where a pointer points (`device<N>+<offset>`,
/// `pinned<N>+<offset>` or `host`); a line appended to the log; the last
/// line's call's result appended as ` -> result`; `work` run in `stream`'s
/// order (now, or at each launch of a graph it is captured in).
void *makeHandle(const std::string &kind);
std::string handleName(const void *handle);
std::string placeOf(const void *pointer);
void logLine(const std::string &line);
void logResult(const std::string &result);
void enqueueOn(const void *stream, std::function<void()> work);

/// Held by every stand-in (FakeNccl.cpp's too) while it runs: the runtime's
/// watchdog thread queries events beside the thread that trains.
class Serial : public std::unique_lock<std::recursive_mutex> {
public:
  Serial();
};

/// From now on the work enqueued on `stream` never runs, and the events
/// recorded on it never complete (cudaEventQuery: cudaErrorNotReady; a host
/// that synchronises with them waits for ever), nor do the streams that wait
/// for them: as when a collective's peers never come. Inside a graph launch
/// the launch's stream stalls, and the rest of the graph does not run.
void stallStream(const void *stream);

/// The next kernel launched faults (`status`, e.g. cudaErrorIllegalAddress):
/// the launch itself succeeds, as on a GPU, and from then on every call that
/// waits for the device (a synchronisation, cudaEventQuery) returns the
/// error, until reset().
void faultNextLaunch(cudaError_t status);

/// A call logged as `function(arg, arg, ...)`.
template <typename... Args> void logCall(const char *function, const Args &...args) {
  std::ostringstream line;
  line << function << "(";
  [[maybe_unused]] const char *separator = ""; // unused by a call without arguments
  ((line << separator << args, separator = ", "), ...);
  line << ")";
  logLine(line.str());
}

} // namespace fake_cuda

#endif // FSDPRT_TEST_CUDA_FAKECUDA_H
