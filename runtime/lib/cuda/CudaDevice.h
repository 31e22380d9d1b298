//===- CudaDevice.h - This rank's GPU and its streams -----------*- C++ -*-===//
//
// openDevice (Device.h) chooses the rank's GPU and creates the step's four
// streams; the CUDA backend's other files reach them through this header, and
// set up and release their own part of the device with it.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_CUDA_CUDADEVICE_H
#define FSDPRT_CUDA_CUDADEVICE_H

#include "abi/StreamEvents.h"
#include "trainer/Ranks.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace fsdprt {

struct CudaDevice {
  int ordinal = -1;
  /// FSDPRT_STREAM_COMPUTE, _ALL_GATHER, _REDUCE_SCATTER and _COPY:
  /// non-blocking streams, which do not wait for the legacy default stream;
  /// _ALL_GATHER and _REDUCE_SCATTER at the greatest priority, the others at
  /// the least.
  cudaStream_t streams[kStreams] = {};
  /// The most dynamic shared memory a block may ask for (after opting in).
  int maxDynamicSharedBytes = 0;
};

/// The device openDevice chose; fatal, naming the caller `what`, before
/// openDevice or after closeDevice.
const CudaDevice &openedDevice(const char *what);

/// The stream FSDPRT_STREAM_* `stream` of the opened device; an unknown
/// stream is fatal, as in openedDevice.
cudaStream_t deviceStream(const char *what, int32_t stream);

/// Whether CUDA may still be called: the device is open, and the process is
/// not exiting (CUDA's own teardown may then be under way).
bool deviceOpen();

// The parts of the device the other files own: openDevice, connectDevice and
// closeDevice call these.

/// The cuBLAS handle, working on the compute stream (CublasGemm.cpp).
void openCublas(cudaStream_t compute);
void closeCublas();
/// The cuDNN handle and the fused attention's plans (CudnnAttention.cpp),
/// created at the first attention.
void closeCudnn();

/// NCCL's communicators for the process groups (NcclCollectives.cpp).
void connectNccl(const RankPlace &place);
void closeNccl();
/// The first asynchronous error of a communicator (ncclCommGetAsyncError),
/// as a message naming it, or empty; callable beside the collectives.
std::string ncclAsyncError();
/// Aborts every communicator (ncclCommAbort), ending its kernels: a rank that
/// stops on a timeout.
void abortNccl();

/// The watchdog of the device's work (DeviceWatchdog.cpp; CollectiveTimeout.h):
/// a thread from startWatchdog to stopWatchdog. watchStream has `stream`'s
/// work enqueued so far, named `what`, complete within the current step's
/// limit, or stops every rank; while the step is captured it watches nothing
/// (the replays are watched whole).
void startWatchdog();
void stopWatchdog();
void watchStream(cudaStream_t stream, const std::string &what);

/// The work just enqueued on `stream` (DebugSync.cpp), as a message names it
/// (`kernel 'fsdp_kernel_3'`, `fsdprt_sgemm`, a collective). With
/// --debug-sync the host waits for it and a failure is fatal, naming it;
/// else it is what a later device error names.
void afterDeviceWork(const std::string &what, cudaStream_t stream);
/// The same for a kernel launch: named `kernel 'name'` with its places in the
/// model (beginStepKernels), when a message needs it.
void afterKernel(const std::string &name, cudaStream_t stream);
/// `step S, after kernel 'K' was enqueued (...)`: where an error the device
/// reports later happened at the latest; empty before any work.
std::string lastDeviceWork();

/// Whether the step is being captured as a CUDA graph (StepGraph.cpp).
bool capturingStep();

/// Records the completion event of the pending `handle` (a collective's or a
/// copy's) on `stream`, after its work; fsdprt_wait waits for it. Returns
/// `handle` (NcclCollectives.cpp).
int32_t recordDone(int32_t handle, cudaStream_t stream);

/// The events of fsdprt_event_record (CudaStreams.cpp).
void destroyEvents();

/// Records `event` on `stream`, creating it (without timing) on first use:
/// the events of fsdprt_event_record and of the collectives' handles.
void recordEvent(cudaEvent_t &event, cudaStream_t stream);

/// Destroys the events of `table` created so far, leaving it empty.
void destroyEventTable(cudaEvent_t *table, size_t size);

/// The kernels' modules loaded so far (KernelLaunch.cpp); loaded again on
/// their next use.
void unloadModules();

/// The step's fork and join events and its CUDA graph (StepGraph.cpp): the
/// next run's first replayable step runs eagerly again.
void releaseStepGraph();

/// The page-locked slots and events of the losses' copies (LossCopies.cpp).
void releaseLossCopies();

} // namespace fsdprt

#endif // FSDPRT_CUDA_CUDADEVICE_H
