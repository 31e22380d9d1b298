//===- CudaDevice.cpp - This rank's GPU and its streams -------------------===//
//
// The CUDA backend's side of Device.h. Each rank takes a GPU of its node by
// its rank on the node, and the step works on four non-blocking streams:
// compute, all-gather, reduce-scatter and copy (docs/Runtime.md, section 7),
// the collectives' at the device's greatest priority.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaDevice.h"

#include "abi/Device.h"
#include "abi/Error.h"
#include "cuda/CardPeaks.h"
#include "cuda/CudaCheck.h"
#include "fsdprt/fsdprt.h"

#include <cublas_v2.h>
#include <nccl.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>
#include <string>

namespace fsdprt {

std::string backendVersion() {
  // Versions of the libraries linked in, not of a device: no driver needed.
  int runtime = 0, cublasMajor = 0, cublasMinor = 0, cublasPatch = 0, nccl = 0;
  cudaRuntimeGetVersion(&runtime);
  cublasGetProperty(MAJOR_VERSION, &cublasMajor);
  cublasGetProperty(MINOR_VERSION, &cublasMinor);
  cublasGetProperty(PATCH_LEVEL, &cublasPatch);
  ncclGetVersion(&nccl);
  auto dotted = [](int major, int minor, int patch) {
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  };
  return "backend: cuda\ncuda runtime: " + dotted(runtime / 1000, runtime % 1000 / 10, 0) +
         "\ncublas: " + dotted(cublasMajor, cublasMinor, cublasPatch) + "\nnccl: " +
         dotted(nccl / 10000, nccl % 10000 / 100, nccl % 100) + "\n";
}

namespace {

CudaDevice device;
bool opened = false;
bool exiting = false;

std::optional<int> parseRank(const char *text) {
  if (!text || !*text)
    return std::nullopt;
  char *end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (*end || errno || value < 0 || value > INT_MAX)
    return std::nullopt;
  return static_cast<int>(value);
}

/// This process's rank among the ranks of its node: what the launcher says
/// (Open MPI, MPICH and Slurm do), or else MPI's ranks sharing memory with it.
int localRank() {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (std::optional<int> rank = parseRank(std::getenv(name)))
      return *rank;
  if (!mpiRunning())
    return 0;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, worldRank(), MPI_INFO_NULL, &node);
  int rank = 0;
  MPI_Comm_rank(node, &rank);
  MPI_Comm_free(&node);
  return rank;
}

[[noreturn]] void noDevice(const std::string &why) {
  fatal("no usable CUDA device: " + why +
        " (this trainer was compiled with fsdpc --target=cuda; compile with --target=cpu to "
        "train on CPUs)");
}

} // namespace

void openDevice() {
  int count = 0;
  {
    // Every rank of a machine without a GPU finds none: rank 0 says so once.
    SameErrorOnEveryRank same;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess)
      noDevice(std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status));
    if (count == 0)
      noDevice("cudaGetDeviceCount found no device");
  }
  // At exit, handlers run in the reverse order of their installation: this
  // one before any the CUDA runtime installed as it started (just now), and
  // the program's global destructors (mgpuModuleUnload) after all of them.
  // Once it has run CUDA may be tearing down, and nothing may call it.
  [[maybe_unused]] static const int installed = std::atexit([] { exiting = true; });

  device.ordinal = localRank() % count;
  FSDPRT_CUDA_CHECK(cudaSetDevice(device.ordinal));
  FSDPRT_CUDA_CHECK(cudaDeviceGetAttribute(&device.maxDynamicSharedBytes,
                                           cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                           device.ordinal));
  // When kernels of several streams wait for the SMs, the GPU schedules the
  // higher priority's blocks first. NCCL's kernels occupy few SMs but hold
  // the step's communication: behind a large product's blocks they would
  // start late and expose it. The collective streams get the greatest
  // priority, the others (compute; copy, whose copies run on the copy
  // engines) the least.
  int least = 0, greatest = 0;
  FSDPRT_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  for (int32_t i = 0; i < kStreams; ++i) {
    bool collective = i == FSDPRT_STREAM_ALL_GATHER || i == FSDPRT_STREAM_REDUCE_SCATTER ||
                      i == FSDPRT_STREAM_TENSOR;
    FSDPRT_CUDA_CHECK(cudaStreamCreateWithPriority(&device.streams[i], cudaStreamNonBlocking,
                                                   collective ? greatest : least));
  }
  opened = true;
  openCublas(device.streams[FSDPRT_STREAM_COMPUTE]);
}

// cuBLASLt chooses a product's kernel at each call by its own heuristics;
// --version names the library.
std::string productKernels(bool) { return ""; }

PeakRates devicePeak(const Manifest &manifest) {
  cudaDeviceProp properties{};
  FSDPRT_CUDA_CHECK(cudaGetDeviceProperties(&properties, device.ordinal));
  return cardPeak(properties.name, manifest.allowTf32);
}

void connectDevice(const RankPlace &place) {
  connectNccl(place);
  startWatchdog();
}

bool hostTimesStep() { return false; }

void finishStep() { FSDPRT_CUDA_CHECK(cudaDeviceSynchronize()); }

void finishUploads() { FSDPRT_CUDA_CHECK(cudaDeviceSynchronize()); }

void recordEvent(cudaEvent_t &event, cudaStream_t stream) {
  if (!event)
    FSDPRT_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  FSDPRT_CUDA_CHECK(cudaEventRecord(event, stream));
}

void destroyEventTable(cudaEvent_t *table, size_t size) {
  for (size_t i = 0; i < size; ++i)
    if (table[i]) {
      FSDPRT_CUDA_CHECK(cudaEventDestroy(table[i]));
      table[i] = nullptr;
    }
}

void closeDevice() {
  if (!opened)
    return;
  FSDPRT_CUDA_CHECK(cudaDeviceSynchronize());
  stopWatchdog();
  releaseStepGraph();
  releaseLossCopies();
  closeNccl();
  destroyEvents();
  unloadModules();
  closeCudnn();
  closeCublas();
  for (cudaStream_t stream : device.streams)
    FSDPRT_CUDA_CHECK(cudaStreamDestroy(stream));
  device = CudaDevice();
  opened = false;
}

const CudaDevice &openedDevice(const char *what) {
  if (!opened)
    fatal(std::string(what) + ": no CUDA device is open (the trainer chooses one once MPI runs, "
                              "before the first step)");
  return device;
}

cudaStream_t deviceStream(const char *what, int32_t stream) {
  checkStream(what, stream);
  return openedDevice(what).streams[stream];
}

bool deviceOpen() { return opened && !exiting; }

} // namespace fsdprt
