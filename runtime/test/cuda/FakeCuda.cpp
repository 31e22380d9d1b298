//===- FakeCuda.cpp - Host stand-ins for the CUDA runtime, cuBLAS and cuBLASLt ===//

#include "cuda/FakeCuda.h"

#include "abi/DType.h"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

namespace fake_cuda {

namespace {

struct Allocation {
  uint8_t *base;
  size_t size;
  int id;
};

/// A copy to the device from page-locked memory that may still be reading
/// its source: the bytes it read, to compare with the source's when it
/// completes.
struct InFlight {
  const uint8_t *source;
  std::vector<uint8_t> bytes;
  const void *stream;
  int64_t order; // its place among everything enqueued
};

// cuBLASLt's descriptors, as their attributes set them.
struct LtOperation {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  int32_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bias = nullptr;
};

struct LtLayout {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0; // elements
};

struct LtPreference {
  uint64_t maxWorkspace = 0;
  uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_MASK;
  uint32_t alignment[4] = {256, 256, 256, 256}; // A, B, C, D
};

/// What the heuristic chose an algorithm for, and what the algorithm needs
/// (the bias's alignment is that of the bias pointer the heuristic saw).
struct LtAlgorithm {
  std::string problem;
  uint32_t alignment[4];
  size_t workspace;
  uint64_t biasAlignment;
};

/// A stream capture under way (cudaStreamBeginCapture): the work enqueued on
/// its streams, to run at each launch of the graph it becomes.
struct Capture {
  const void *origin = nullptr;
  /// The origin and the streams that joined it (a wait for an event recorded
  /// in the capture), with the operations captured on each so far (a join
  /// counts as one).
  std::map<const void *, int64_t> operations;
  /// For each joined stream, its operations the origin has waited for.
  std::map<const void *, int64_t> joinedBack;
  /// Events recorded in the capture: the stream and its operations then.
  std::map<const void *, std::pair<const void *, int64_t>> events;
  std::vector<std::function<void()>> work;
  bool invalidated = false;
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
  std::vector<Allocation> pinned;
  int pinnedAllocated = 0;
  void **lastParams = nullptr;
  // Streams in program order: each enqueued copy's place, and where each
  // event was recorded (its stream, and the place it marks).
  int64_t enqueued = 0;
  std::vector<InFlight> inFlight;
  std::map<const void *, std::pair<const void *, int64_t>> recorded;
  std::map<const void *, LtOperation> ltOperations;
  std::map<const void *, LtLayout> ltLayouts;
  std::map<const void *, LtPreference> ltPreferences;
  std::vector<LtAlgorithm> ltAlgorithms;
  int heuristicAlgorithms = 1;
  // cuBLAS handles: the stream their products run on, and whether they have
  // a workspace of the caller's (cublasSetWorkspace).
  std::map<const void *, cudaStream_t> cublasStreams;
  std::set<const void *> cublasWorkspaces;
  std::optional<Capture> capture;
  /// Events whose last recording was inside a capture: CUDA cannot wait for
  /// them.
  std::set<const void *> recordedInCapture;
  std::map<const void *, std::vector<std::function<void()>>> graphs, graphExecs;
  /// Streams whose work never runs from some point on (stallStream), and the
  /// events recorded on them since, which never complete; a stream that
  /// waits for such an event stalls too. A graph launch stalls its stream
  /// when a node of it stalls.
  std::set<const void *> stalledStreams, stalledEvents;
  bool launching = false, launchStalled = false;
  /// faultNextLaunch's error, once planned (pending) and once a launch made
  /// it the device's (sticky).
  cudaError_t pendingFault = cudaSuccess, fault = cudaSuccess;
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

/// `device<N>+<offset>` inside an allocation of cudaMalloc, `pinned<N>+<offset>`
/// inside one of cudaHostAlloc, else `host`.
std::string where(const void *pointer) {
  auto *p = static_cast<const uint8_t *>(pointer);
  for (const Allocation &a : state().allocations)
    if (p >= a.base && p <= a.base + a.size)
      return "device" + std::to_string(a.id) + "+" + std::to_string(p - a.base);
  for (const Allocation &a : state().pinned)
    if (p >= a.base && p <= a.base + a.size)
      return "pinned" + std::to_string(a.id) + "+" + std::to_string(p - a.base);
  return "host";
}

bool isPinned(const void *pointer) { return where(pointer).compare(0, 6, "pinned") == 0; }

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

/// The host synchronises with the copies in flight that `done` selects: they
/// complete, and a source the host changed meanwhile is a race.
template <typename Done> void complete(Done done) {
  std::vector<InFlight> &copies = state().inFlight;
  for (auto copy = copies.begin(); copy != copies.end();) {
    if (!done(*copy)) {
      ++copy;
      continue;
    }
    if (std::memcmp(copy->source, copy->bytes.data(), copy->bytes.size()) != 0)
      state().log.push_back("race: the host wrote " + where(copy->source) + " (" +
                            std::to_string(copy->bytes.size()) +
                            " bytes) while a copy from it was in flight");
    copy = copies.erase(copy);
  }
}

bool stalled(const void *stream) { return state().stalledStreams.count(stream) != 0; }

/// What a host waiting for work that never completes does: wait for ever,
/// letting other threads' calls in (the watchdog's).
[[noreturn]] void waitForever(Serial &serial) {
  serial.unlock();
  for (;;)
    std::this_thread::sleep_for(std::chrono::hours(1));
}

bool captured(const void *stream) {
  return state().capture && state().capture->operations.count(stream);
}

/// Runs `work` now, or, while `stream` is captured, adds it to the capture:
/// each launch of the graph runs it then, on the bytes of that moment.
template <typename Work> void enqueue(const void *stream, Work work) {
  if (!captured(stream)) {
    if (!stalled(stream))
      work();
    return;
  }
  Capture &capture = *state().capture;
  capture.work.emplace_back(std::move(work));
  ++capture.operations[stream];
}

/// A call that CUDA refuses while a capture is under way (it waits for the
/// device, or allocates behind the capture's back), logged as a line
/// `capture: ...`; the capture is invalidated, as CUDA does.
bool refusedInCapture(const std::string &call) {
  State &s = state();
  if (!s.capture)
    return false;
  s.log.push_back("capture: " + call + " while " + name(s.capture->origin) + " is captured");
  s.capture->invalidated = true;
  return true;
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

size_t typeBytes(cudaDataType type) { return type == CUDA_R_32F ? 4 : 2; }

const char *computeName(cublasComputeType_t compute) {
  switch (compute) {
  case CUBLAS_COMPUTE_32F:
    return "fp32";
  case CUBLAS_COMPUTE_32F_FAST_TF32:
    return "fast-tf32";
  default:
    return "other compute";
  }
}

const char *typeName(cudaDataType type) {
  switch (type) {
  case CUDA_R_16BF:
    return "bf16";
  case CUDA_R_32F:
    return "f32";
  default:
    return "other type";
  }
}

/// cuBLASLt's product D = alpha op(A) op(B) + beta C with these descriptors,
/// as text (what an algorithm was chosen for), or why it is invalid: "!"
/// then the reason.
std::string ltProblem(const void *operationDesc, const void *aDesc, const void *bDesc,
                      const void *cDesc, const void *dDesc) {
  State &s = state();
  auto op = s.ltOperations.find(operationDesc);
  const void *layoutDescs[] = {aDesc, bDesc, cDesc, dDesc};
  const LtLayout *layouts[4];
  for (int i = 0; i < 4; ++i) {
    auto found = s.ltLayouts.find(layoutDescs[i]);
    if (found == s.ltLayouts.end())
      return "!unknown layout";
    layouts[i] = &found->second;
  }
  if (op == s.ltOperations.end())
    return "!unknown matmul descriptor";
  const LtLayout &a = *layouts[0], &b = *layouts[1], &c = *layouts[2], &d = *layouts[3];
  // All bf16 with fp32 compute, or all f32 with fp32 or TF32 compute; alpha
  // and beta fp32.
  for (const LtLayout *layout : layouts)
    if (layout->type != a.type || (a.type != CUDA_R_16BF && a.type != CUDA_R_32F))
      return "!not all bf16 or all f32 matrices";
  cublasComputeType_t compute = op->second.compute;
  if (op->second.scale != CUDA_R_32F ||
      (compute != CUBLAS_COMPUTE_32F &&
       (a.type != CUDA_R_32F || compute != CUBLAS_COMPUTE_32F_FAST_TF32)))
    return std::string("!") + computeName(compute) + " compute and " + typeName(op->second.scale) +
           " scale for " + typeName(a.type) + " matrices";
  for (const LtLayout *layout : layouts)
    if (layout->ld < static_cast<int64_t>(layout->rows) || layout->ld < 1)
      return "!ld smaller than the rows";
  // op(A) is m x k, op(B) k x n, C and D m x n.
  bool ta = op->second.transA != CUBLAS_OP_N, tb = op->second.transB != CUBLAS_OP_N;
  uint64_t m = c.rows, n = c.cols;
  uint64_t aRows = ta ? a.cols : a.rows, k = ta ? a.rows : a.cols;
  uint64_t bRows = tb ? b.cols : b.rows, bCols = tb ? b.rows : b.cols;
  if (aRows != m || bRows != k || bCols != n || d.rows != m || d.cols != n)
    return "!dimensions do not match";
  if (a.batch != c.batch || b.batch != c.batch || d.batch != c.batch)
    return "!batch counts differ";
  std::ostringstream text;
  text << operation(cublasOperation_t(op->second.transA))
       << operation(cublasOperation_t(op->second.transB)) << " " << typeName(a.type) << " "
       << computeName(compute) << (op->second.epilogue == CUBLASLT_EPILOGUE_BIAS ? " bias" : "");
  for (const LtLayout *layout : layouts)
    text << " " << layout->rows << "x" << layout->cols << "/" << layout->ld << "*" << layout->batch
         << "/" << layout->stride;
  return text.str();
}

/// The largest power of two dividing `pointer` and, in a batch, `strideBytes`.
uint64_t alignmentOf(const void *pointer, int32_t batch, int64_t strideBytes) {
  uint64_t bits = reinterpret_cast<uintptr_t>(pointer) | (uint64_t(1) << 40);
  if (batch > 1)
    bits |= static_cast<uint64_t>(strideBytes);
  return bits & (~bits + 1);
}

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
  s.heuristicAlgorithms = 1;
  s.capture.reset();
  s.stalledStreams.clear();
  s.stalledEvents.clear();
  s.pendingFault = s.fault = cudaSuccess;
  // Device pointers are named from device1 again once none is left.
  if (s.allocations.empty())
    s.allocated = 0;
  if (s.pinned.empty())
    s.pinnedAllocated = 0;
}

Serial::Serial() : std::unique_lock<std::recursive_mutex>([]() -> std::recursive_mutex & {
                     static auto *lock = new std::recursive_mutex; // calls may come at exit
                     return *lock;
                   }()) {}

void stallStream(const void *stream) {
  Serial serial;
  State &s = state();
  if (s.launching)
    s.launchStalled = true;
  else
    s.stalledStreams.insert(stream);
}

void faultNextLaunch(cudaError_t status) {
  Serial serial;
  state().pendingFault = status;
}

void *makeHandle(const std::string &kind) { return newHandle(kind); }

std::string handleName(const void *handle) { return name(handle); }

std::string placeOf(const void *pointer) { return where(pointer); }

void logLine(const std::string &line) { state().log.push_back(line); }

void logResult(const std::string &result) { state().log.back() += " -> " + result; }

void enqueueOn(const void *stream, std::function<void()> work) { enqueue(stream, std::move(work)); }

void setDevices(cudaError_t status, int count) {
  state().countStatus = status;
  state().count = count;
}

void failNext(const std::string &function, int status) { state().failures[function] = status; }

void **lastLaunchParams() { return state().lastParams; }

void setHeuristicAlgorithms(int count) { state().heuristicAlgorithms = count; }

} // namespace fake_cuda

using namespace fake_cuda;

/// A cuBLAS product on `handle`'s stream. Without a workspace of the
/// caller's, cuBLAS allocates one for the stream at its first product there,
/// which a capture must not contain.
template <typename Work>
static void enqueueProduct(const void *handle, const char *call, Work work) {
  State &s = state();
  auto stream = s.cublasStreams.find(handle);
  const void *on = stream == s.cublasStreams.end() ? nullptr : stream->second;
  if (captured(on) && !s.cublasWorkspaces.count(handle)) {
    s.log.push_back(std::string("capture: ") + call + " on " + name(handle) +
                    ", which has no workspace set (cublasSetWorkspace), allocates one while " +
                    name(s.capture->origin) + " is captured");
    s.capture->invalidated = true;
  }
  enqueue(on, std::move(work));
}

#define FAIL_IF_PLANNED(type, function)                                                          \
  if (int status = plannedFailure(function))                                                     \
  return static_cast<type>(status)

extern "C" {

cudaError_t __wrap_cudaGetDeviceCount(int *count) {
  Serial serial;
  logCall("cudaGetDeviceCount");
  *count = state().count;
  return state().countStatus;
}

cudaError_t __wrap_cudaSetDevice(int device) {
  Serial serial;
  logCall("cudaSetDevice", device);
  FAIL_IF_PLANNED(cudaError_t, "cudaSetDevice");
  return cudaSuccess;
}

cudaError_t __wrap_cudaDeviceGetAttribute(int *value, cudaDeviceAttr attribute, int device) {
  Serial serial;
  logCall("cudaDeviceGetAttribute", static_cast<int>(attribute), device);
  *value = attribute == cudaDevAttrMaxSharedMemoryPerBlockOptin ? kMaxSharedMemoryPerBlockOptin : 0;
  return cudaSuccess;
}

// The card the fake stands for: an H100 SXM, whose datasheet peak the
// trainer's MFU then reads (CardPeaks.cpp).
cudaError_t __wrap_cudaGetDeviceProperties(cudaDeviceProp *properties, int device) {
  Serial serial;
  logCall("cudaGetDeviceProperties", device);
  *properties = cudaDeviceProp{};
  std::snprintf(properties->name, sizeof(properties->name), "%s", "NVIDIA H100 80GB HBM3");
  properties->major = 9;
  properties->minor = 0;
  properties->multiProcessorCount = 132;
  return cudaSuccess;
}

cudaError_t __wrap_cudaDeviceSynchronize() {
  Serial serial;
  logCall("cudaDeviceSynchronize");
  if (refusedInCapture("cudaDeviceSynchronize()"))
    return cudaErrorStreamCaptureUnsupported;
  if (!state().stalledStreams.empty())
    waitForever(serial);
  if (state().fault != cudaSuccess)
    return state().fault;
  complete([](const InFlight &) { return true; });
  return cudaSuccess;
}

cudaError_t __wrap_cudaDeviceGetStreamPriorityRange(int *least, int *greatest) {
  Serial serial;
  logCall("cudaDeviceGetStreamPriorityRange");
  *least = kLeastStreamPriority;
  *greatest = kGreatestStreamPriority;
  return cudaSuccess;
}

cudaError_t __wrap_cudaStreamCreateWithPriority(cudaStream_t *stream, unsigned flags,
                                                int priority) {
  Serial serial;
  logCall("cudaStreamCreateWithPriority", flags == cudaStreamNonBlocking ? "non-blocking" : "blocking",
      priority);
  *stream = static_cast<cudaStream_t>(newHandle("stream"));
  logResult(name(*stream));
  return cudaSuccess;
}

cudaError_t __wrap_cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags) {
  Serial serial;
  logCall("cudaStreamCreateWithFlags", flags == cudaStreamNonBlocking ? "non-blocking" : "blocking");
  *stream = static_cast<cudaStream_t>(newHandle("stream"));
  logResult(name(*stream));
  return cudaSuccess;
}

cudaError_t __wrap_cudaStreamDestroy(cudaStream_t stream) {
  Serial serial;
  logCall("cudaStreamDestroy", name(stream));
  return cudaSuccess;
}

cudaError_t __wrap_cudaStreamSynchronize(cudaStream_t stream) {
  Serial serial;
  logCall("cudaStreamSynchronize", name(stream));
  if (refusedInCapture("cudaStreamSynchronize(" + name(stream) + ")"))
    return cudaErrorStreamCaptureUnsupported;
  if (stalled(stream))
    waitForever(serial);
  if (state().fault != cudaSuccess)
    return state().fault;
  complete([stream](const InFlight &copy) { return copy.stream == stream; });
  return cudaSuccess;
}

/// A wait for an event recorded in a capture takes the stream into it (or,
/// for the origin, joins back the stream the event was recorded on, up to
/// that point); a captured stream cannot wait for an event recorded outside.
cudaError_t __wrap_cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  Serial serial;
  logCall("cudaStreamWaitEvent", name(stream), name(event));
  State &s = state();
  if (s.stalledEvents.count(event))
    s.stalledStreams.insert(stream);
  if (!s.capture)
    return cudaSuccess;
  Capture &capture = *s.capture;
  auto recorded = capture.events.find(event);
  if (recorded == capture.events.end()) {
    if (!captured(stream))
      return cudaSuccess;
    s.log.push_back("capture: " + name(stream) + " waits for " + name(event) +
                    ", recorded outside the capture");
    capture.invalidated = true;
    return cudaErrorStreamCaptureIsolation;
  }
  ++capture.operations[stream];
  auto [from, operations] = recorded->second;
  if (stream == capture.origin)
    capture.joinedBack[from] = std::max(capture.joinedBack[from], operations);
  return cudaSuccess;
}

cudaError_t __wrap_cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags) {
  Serial serial;
  logCall("cudaEventCreateWithFlags", flags == cudaEventDisableTiming ? "no timing" : "timing");
  *event = static_cast<cudaEvent_t>(newHandle("event"));
  logResult(name(*event));
  return cudaSuccess;
}

cudaError_t __wrap_cudaEventDestroy(cudaEvent_t event) {
  Serial serial;
  logCall("cudaEventDestroy", name(event));
  state().recordedInCapture.erase(event);
  if (state().capture)
    state().capture->events.erase(event);
  return cudaSuccess;
}

cudaError_t __wrap_cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  Serial serial;
  logCall("cudaEventRecord", name(event), name(stream));
  State &s = state();
  if (captured(stream)) {
    s.capture->events[event] = {stream, s.capture->operations[stream]};
    s.recordedInCapture.insert(event);
    return cudaSuccess;
  }
  if (s.capture)
    s.capture->events.erase(event);
  s.recordedInCapture.erase(event);
  s.recorded[event] = {stream, s.enqueued};
  if (stalled(stream))
    s.stalledEvents.insert(event);
  else
    s.stalledEvents.erase(event);
  return cudaSuccess;
}

/// Not logged: a watchdog polls it from a thread of its own.
cudaError_t __wrap_cudaEventQuery(cudaEvent_t event) {
  Serial serial;
  if (state().fault != cudaSuccess)
    return state().fault;
  return state().stalledEvents.count(event) ? cudaErrorNotReady : cudaSuccess;
}

cudaError_t __wrap_cudaEventSynchronize(cudaEvent_t event) {
  Serial serial;
  logCall("cudaEventSynchronize", name(event));
  if (refusedInCapture("cudaEventSynchronize(" + name(event) + ")"))
    return cudaErrorStreamCaptureUnsupported;
  if (state().recordedInCapture.count(event)) {
    state().log.push_back("capture: cudaEventSynchronize(" + name(event) +
                          ") of an event last recorded in a capture");
    return cudaErrorStreamCaptureUnsupported;
  }
  if (state().stalledEvents.count(event))
    waitForever(serial);
  if (state().fault != cudaSuccess)
    return state().fault;
  auto found = state().recorded.find(event);
  if (found != state().recorded.end()) {
    auto [stream, order] = found->second;
    complete([stream = stream, order = order](const InFlight &copy) {
      return copy.stream == stream && copy.order <= order;
    });
  }
  return cudaSuccess;
}

cudaError_t __wrap_cudaHostAlloc(void **pointer, size_t size, unsigned int flags) {
  Serial serial;
  logCall("cudaHostAlloc", size, flags);
  FAIL_IF_PLANNED(cudaError_t, "cudaHostAlloc");
  size_t rounded = (size + 4095) / 4096 * 4096;
  auto *base = static_cast<uint8_t *>(std::aligned_alloc(4096, rounded));
  // Page-locked memory is not zeroed: garbage shows a caller that needs zeros
  // and does not write them.
  std::memset(base, 0xA5, rounded);
  state().pinned.push_back({base, size, ++state().pinnedAllocated});
  *pointer = base;
  logResult(where(base));
  return cudaSuccess;
}

cudaError_t __wrap_cudaFreeHost(void *pointer) {
  Serial serial;
  logCall("cudaFreeHost", where(pointer));
  std::vector<Allocation> &pinned = state().pinned;
  for (auto a = pinned.begin(); a != pinned.end(); ++a)
    if (a->base == pointer) {
      std::vector<InFlight> &copies = state().inFlight;
      for (auto copy = copies.begin(); copy != copies.end();)
        if (copy->source >= a->base && copy->source < a->base + a->size) {
          state().log.push_back("race: " + where(pointer) +
                                " freed while a copy from it was in flight");
          copy = copies.erase(copy);
        } else {
          ++copy;
        }
      std::free(a->base);
      pinned.erase(a);
      break;
    }
  return cudaSuccess;
}

cudaError_t __wrap_cudaMalloc(void **pointer, size_t size) {
  Serial serial;
  logCall("cudaMalloc", size);
  FAIL_IF_PLANNED(cudaError_t, "cudaMalloc");
  if (refusedInCapture("cudaMalloc(" + std::to_string(size) + ")"))
    return cudaErrorStreamCaptureUnsupported;
  // Device memory is 256-byte aligned.
  size_t rounded = (size + 255) / 256 * 256;
  auto *base = static_cast<uint8_t *>(std::aligned_alloc(256, rounded));
  state().allocations.push_back({base, size, ++state().allocated});
  *pointer = base;
  logResult(where(base));
  return cudaSuccess;
}

cudaError_t __wrap_cudaFree(void *pointer) {
  Serial serial;
  logCall("cudaFree", where(pointer));
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
  Serial serial;
  logCall("cudaMemset", where(pointer), value, count);
  std::memset(pointer, value, count);
  return cudaSuccess;
}

cudaError_t __wrap_cudaMemsetAsync(void *pointer, int value, size_t count, cudaStream_t stream) {
  Serial serial;
  logCall("cudaMemsetAsync", where(pointer), value, count, name(stream));
  enqueue(stream, [=] {
    ++state().enqueued;
    std::memset(pointer, value, count);
  });
  return cudaSuccess;
}

cudaError_t __wrap_cudaMemcpy(void *to, const void *from, size_t count, cudaMemcpyKind) {
  Serial serial;
  logCall("cudaMemcpy", where(to) + " <- " + where(from), count);
  if (refusedInCapture("cudaMemcpy(" + where(to) + " <- " + where(from) + ")"))
    return cudaErrorStreamCaptureUnsupported;
  std::memcpy(to, from, count);
  return cudaSuccess;
}

cudaError_t __wrap_cudaMemcpyAsync(void *to, const void *from, size_t count, cudaMemcpyKind kind,
                                   cudaStream_t stream) {
  Serial serial;
  static const char *const kKinds[] = {"host to host", "host to device", "device to host",
                                       "device to device", "default"};
  logCall("cudaMemcpyAsync", where(to) + " <- " + where(from), count,
      kind >= 0 && kind <= 4 ? kKinds[kind] : "?", name(stream));
  enqueue(stream, [=] {
    std::memcpy(to, from, count);
    int64_t order = ++state().enqueued;
    // Only from page-locked memory is a copy asynchronous: CUDA stages one
    // from pageable memory before it returns.
    if (kind == cudaMemcpyHostToDevice && isPinned(from)) {
      auto *source = static_cast<const uint8_t *>(from);
      state().inFlight.push_back(
          {source, std::vector<uint8_t>(source, source + count), stream, order});
    }
  });
  return cudaSuccess;
}

cudaError_t __wrap_cudaLibraryLoadData(cudaLibrary_t *library, const void *code, cudaJitOption *,
                                       void **, unsigned, cudaLibraryOption *, void **, unsigned) {
  Serial serial;
  logCall("cudaLibraryLoadData", static_cast<const char *>(code));
  *library = static_cast<cudaLibrary_t>(newHandle("library"));
  logResult(name(*library));
  return cudaSuccess;
}

cudaError_t __wrap_cudaLibraryGetKernel(cudaKernel_t *kernel, cudaLibrary_t library,
                                        const char *kernelName) {
  Serial serial;
  logCall("cudaLibraryGetKernel", name(library), kernelName);
  *kernel = static_cast<cudaKernel_t>(newHandle("kernel"));
  logResult(name(*kernel));
  return cudaSuccess;
}

cudaError_t __wrap_cudaLibraryUnload(cudaLibrary_t library) {
  Serial serial;
  logCall("cudaLibraryUnload", name(library));
  return cudaSuccess;
}

cudaError_t __wrap_cudaFuncSetAttribute(const void *function, cudaFuncAttribute attribute,
                                        int value) {
  Serial serial;
  logCall("cudaFuncSetAttribute", name(function),
      attribute == cudaFuncAttributeMaxDynamicSharedMemorySize ? "max dynamic shared memory"
                                                               : "other",
      value);
  return cudaSuccess;
}

cudaError_t __wrap_cudaLaunchKernel(const void *function, dim3 grid, dim3 block, void **params,
                                    size_t smem, cudaStream_t stream) {
  Serial serial;
  auto dims = [](dim3 d) {
    return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
  };
  logCall("cudaLaunchKernel", name(function), "grid " + dims(grid), "block " + dims(block),
      "smem " + std::to_string(smem), name(stream));
  state().lastParams = params;
  // A launch does nothing here (but fault, when planned); in a capture it is
  // still one of the stream's operations.
  enqueue(stream, [] {
    State &s = state();
    if (s.pendingFault != cudaSuccess)
      s.fault = std::exchange(s.pendingFault, cudaSuccess);
  });
  return cudaSuccess;
}

cudaError_t __wrap_cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  Serial serial;
  logCall("cudaStreamBeginCapture", name(stream),
      mode == cudaStreamCaptureModeThreadLocal ? "thread-local"
      : mode == cudaStreamCaptureModeGlobal    ? "global"
                                               : "relaxed");
  FAIL_IF_PLANNED(cudaError_t, "cudaStreamBeginCapture");
  State &s = state();
  if (s.capture) {
    s.log.push_back("capture: a capture began while " + name(s.capture->origin) + " is captured");
    return cudaErrorIllegalState;
  }
  s.capture.emplace();
  s.capture->origin = stream;
  s.capture->operations[stream] = 0;
  return cudaSuccess;
}

/// The captured work as a graph, once every stream that joined the capture
/// has joined back into its origin.
cudaError_t __wrap_cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
  Serial serial;
  logCall("cudaStreamEndCapture", name(stream));
  State &s = state();
  if (int status = plannedFailure("cudaStreamEndCapture")) {
    s.capture.reset();
    return static_cast<cudaError_t>(status);
  }
  if (!s.capture || s.capture->origin != stream) {
    s.log.push_back("capture: " + name(stream) + " is not the origin of a capture");
    return cudaErrorIllegalState;
  }
  Capture capture = std::move(*s.capture);
  s.capture.reset();
  *graph = nullptr;
  cudaError_t status = capture.invalidated ? cudaErrorStreamCaptureInvalidated : cudaSuccess;
  for (auto [joined, operations] : capture.operations)
    if (joined != stream && capture.joinedBack[joined] != operations) {
      s.log.push_back("capture: " + name(joined) + " was not joined back into " + name(stream) +
                      " when the capture ended");
      status = cudaErrorStreamCaptureUnjoined;
    }
  if (status != cudaSuccess)
    return status;
  *graph = static_cast<cudaGraph_t>(newHandle("graph"));
  s.graphs[*graph] = std::move(capture.work);
  logResult(name(*graph));
  return cudaSuccess;
}

cudaError_t __wrap_cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                        unsigned long long flags) {
  Serial serial;
  logCall("cudaGraphInstantiate", name(graph),
      flags == cudaGraphInstantiateFlagUseNodePriority ? "use-node-priority"
                                                       : std::to_string(flags));
  FAIL_IF_PLANNED(cudaError_t, "cudaGraphInstantiate");
  State &s = state();
  auto found = s.graphs.find(graph);
  if (found == s.graphs.end())
    return cudaErrorInvalidValue;
  *exec = static_cast<cudaGraphExec_t>(newHandle("graphExec"));
  s.graphExecs[*exec] = found->second;
  logResult(name(*exec));
  return cudaSuccess;
}

/// The graph's work, in the order it was captured, on the bytes of now.
cudaError_t __wrap_cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  Serial serial;
  logCall("cudaGraphLaunch", name(exec), name(stream));
  FAIL_IF_PLANNED(cudaError_t, "cudaGraphLaunch");
  auto found = state().graphExecs.find(exec);
  if (found == state().graphExecs.end())
    return cudaErrorInvalidValue;
  if (stalled(stream))
    return cudaSuccess;
  // A copy: the work may log, and a launch inside a capture is not modelled.
  std::vector<std::function<void()>> work = found->second;
  State &s = state();
  s.launching = true;
  s.launchStalled = false;
  for (const std::function<void()> &item : work) {
    item();
    if (s.launchStalled)
      break;
  }
  s.launching = false;
  if (s.launchStalled)
    s.stalledStreams.insert(stream);
  return cudaSuccess;
}

cudaError_t __wrap_cudaGraphExecDestroy(cudaGraphExec_t exec) {
  Serial serial;
  logCall("cudaGraphExecDestroy", name(exec));
  return state().graphExecs.erase(exec) ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t __wrap_cudaGraphDestroy(cudaGraph_t graph) {
  Serial serial;
  logCall("cudaGraphDestroy", name(graph));
  return state().graphs.erase(graph) ? cudaSuccess : cudaErrorInvalidValue;
}

cublasStatus_t __wrap_cublasCreate_v2(cublasHandle_t *handle) {
  Serial serial;
  logCall("cublasCreate");
  FAIL_IF_PLANNED(cublasStatus_t, "cublasCreate_v2");
  *handle = static_cast<cublasHandle_t>(newHandle("cublas"));
  logResult(name(*handle));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasDestroy_v2(cublasHandle_t handle) {
  Serial serial;
  logCall("cublasDestroy", name(handle));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  Serial serial;
  logCall("cublasSetStream", name(handle), name(stream));
  state().cublasStreams[handle] = stream;
  // As cuBLAS does: back to its own workspace pool.
  state().cublasWorkspaces.erase(handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace, size_t bytes) {
  Serial serial;
  logCall("cublasSetWorkspace", name(handle), where(workspace), bytes);
  if (workspace && bytes > 0)
    state().cublasWorkspaces.insert(handle);
  else
    state().cublasWorkspaces.erase(handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  Serial serial;
  logCall("cublasSetMathMode", name(handle), static_cast<int>(mode));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                     cublasOperation_t transb, int m, int n, int k,
                                     const float *alpha, const float *a, int lda, const float *b,
                                     int ldb, const float *beta, float *c, int ldc) {
  Serial serial;
  logCall("cublasSgemm", name(handle), operation(transa), operation(transb), m, n, k, lda, ldb, ldc);
  enqueueProduct(handle, "cublasSgemm", [=, alpha = *alpha, beta = *beta] {
    auto same = [](float x) { return x; };
    columnMajorGemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, same, same);
  });
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                cublasOperation_t transb, int m, int n, int k,
                                                const float *alpha, const float *a, int lda,
                                                long long strideA, const float *b, int ldb,
                                                long long strideB, const float *beta, float *c,
                                                int ldc, long long strideC, int batch) {
  Serial serial;
  logCall("cublasSgemmStridedBatched", name(handle), operation(transa), operation(transb), m, n, k,
      lda, strideA, ldb, strideB, ldc, strideC, batch);
  enqueueProduct(handle, "cublasSgemmStridedBatched", [=, alpha = *alpha, beta = *beta] {
    auto same = [](float x) { return x; };
    for (int i = 0; i < batch; ++i)
      columnMajorGemm(transa, transb, m, n, k, alpha, a + i * strideA, lda, b + i * strideB, ldb,
                      beta, c + i * strideC, ldc, same, same);
  });
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                   cublasOperation_t transb, int m, int n, int k,
                                   const void *alpha, const void *a, cudaDataType aType, int lda,
                                   const void *b, cudaDataType bType, int ldb, const void *beta,
                                   void *c, cudaDataType cType, int ldc,
                                   cublasComputeType_t compute, cublasGemmAlgo_t) {
  Serial serial;
  bool bf16 = aType == CUDA_R_16BF && bType == CUDA_R_16BF && cType == CUDA_R_16BF;
  logCall("cublasGemmEx", name(handle), operation(transa), operation(transb), m, n, k, lda, ldb, ldc,
      bf16 ? "bf16" : "other types", compute == CUBLAS_COMPUTE_32F ? "fp32" : "other compute");
  if (!bf16 || compute != CUBLAS_COMPUTE_32F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  float alphaValue = *static_cast<const float *>(alpha);
  float betaValue = *static_cast<const float *>(beta);
  enqueueProduct(handle, "cublasGemmEx", [=] {
    columnMajorGemm(transa, transb, m, n, k, alphaValue, static_cast<const uint16_t *>(a), lda,
                    static_cast<const uint16_t *>(b), ldb, betaValue, static_cast<uint16_t *>(c),
                    ldc, loadBF16, storeBF16);
  });
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasLtCreate(cublasLtHandle_t *handle) {
  Serial serial;
  logCall("cublasLtCreate");
  FAIL_IF_PLANNED(cublasStatus_t, "cublasLtCreate");
  *handle = static_cast<cublasLtHandle_t>(newHandle("cublasLt"));
  logResult(name(*handle));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasLtDestroy(cublasLtHandle_t handle) {
  Serial serial;
  logCall("cublasLtDestroy", name(handle));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                                               cublasComputeType_t compute, cudaDataType_t scale) {
  Serial serial;
  logCall("cublasLtMatmulDescCreate", computeName(compute), typeName(scale));
  *desc = static_cast<cublasLtMatmulDesc_t>(newHandle("matmul"));
  state().ltOperations[*desc] = {compute, scale};
  logResult(name(*desc));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                                     cublasLtMatmulDescAttributes_t attribute,
                                                     const void *value, size_t size) {
  Serial serial;
  auto found = state().ltOperations.find(desc);
  if (attribute == CUBLASLT_MATMUL_DESC_EPILOGUE && size == sizeof(uint32_t)) {
    uint32_t epilogue;
    std::memcpy(&epilogue, value, size);
    // Only the bias epilogue is modelled: another would go unchecked.
    bool modelled = epilogue == CUBLASLT_EPILOGUE_DEFAULT || epilogue == CUBLASLT_EPILOGUE_BIAS;
    logCall("cublasLtMatmulDescSetAttribute", name(desc), "epilogue",
        epilogue == CUBLASLT_EPILOGUE_DEFAULT ? std::string("default")
        : epilogue == CUBLASLT_EPILOGUE_BIAS  ? std::string("bias")
                                              : std::to_string(epilogue));
    if (!modelled)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    if (found == state().ltOperations.end())
      return CUBLAS_STATUS_INVALID_VALUE;
    found->second.epilogue = epilogue;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (attribute == CUBLASLT_MATMUL_DESC_BIAS_POINTER && size == sizeof(const void *)) {
    const void *bias;
    std::memcpy(&bias, value, size);
    logCall("cublasLtMatmulDescSetAttribute", name(desc), "bias pointer", bias ? where(bias) : "null");
    if (found == state().ltOperations.end())
      return CUBLAS_STATUS_INVALID_VALUE;
    found->second.bias = bias;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (attribute != CUBLASLT_MATMUL_DESC_TRANSA && attribute != CUBLASLT_MATMUL_DESC_TRANSB) {
    // What the fake does not model would go unchecked.
    logCall("cublasLtMatmulDescSetAttribute", name(desc), static_cast<int>(attribute));
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  int32_t trans = 0;
  if (size == sizeof(trans))
    std::memcpy(&trans, value, sizeof(trans));
  logCall("cublasLtMatmulDescSetAttribute", name(desc),
      attribute == CUBLASLT_MATMUL_DESC_TRANSA ? "transa" : "transb",
      operation(cublasOperation_t(trans)));
  if (found == state().ltOperations.end() || size != sizeof(trans))
    return CUBLAS_STATUS_INVALID_VALUE;
  (attribute == CUBLASLT_MATMUL_DESC_TRANSA ? found->second.transA : found->second.transB) = trans;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  Serial serial;
  logCall("cublasLtMatmulDescDestroy", name(desc));
  return state().ltOperations.erase(desc) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t __wrap_cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type,
                                                 uint64_t rows, uint64_t cols, int64_t ld) {
  Serial serial;
  logCall("cublasLtMatrixLayoutCreate", typeName(type), rows, cols, ld);
  *layout = static_cast<cublasLtMatrixLayout_t>(newHandle("layout"));
  state().ltLayouts[*layout] = {type, rows, cols, ld};
  logResult(name(*layout));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t __wrap_cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                       cublasLtMatrixLayoutAttribute_t attribute,
                                                       const void *value, size_t size) {
  Serial serial;
  auto found = state().ltLayouts.find(layout);
  if (attribute == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && size == sizeof(int32_t)) {
    int32_t count;
    std::memcpy(&count, value, size);
    logCall("cublasLtMatrixLayoutSetAttribute", name(layout), "batch count", count);
    if (found == state().ltLayouts.end() || count < 1)
      return CUBLAS_STATUS_INVALID_VALUE;
    found->second.batch = count;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (attribute == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET && size == sizeof(int64_t)) {
    int64_t stride;
    std::memcpy(&stride, value, size);
    logCall("cublasLtMatrixLayoutSetAttribute", name(layout), "batch stride", stride);
    if (found == state().ltLayouts.end())
      return CUBLAS_STATUS_INVALID_VALUE;
    found->second.stride = stride;
    return CUBLAS_STATUS_SUCCESS;
  }
  logCall("cublasLtMatrixLayoutSetAttribute", name(layout), static_cast<int>(attribute), size);
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t __wrap_cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  Serial serial;
  logCall("cublasLtMatrixLayoutDestroy", name(layout));
  return state().ltLayouts.erase(layout) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t __wrap_cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *preference) {
  Serial serial;
  logCall("cublasLtMatmulPreferenceCreate");
  *preference = static_cast<cublasLtMatmulPreference_t>(newHandle("preference"));
  state().ltPreferences[*preference] = {};
  logResult(name(*preference));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
__wrap_cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t preference,
                                            cublasLtMatmulPreferenceAttributes_t attribute,
                                            const void *value, size_t size) {
  auto found = state().ltPreferences.find(preference);
  if (found == state().ltPreferences.end())
    return CUBLAS_STATUS_INVALID_VALUE;
  LtPreference &p = found->second;
  if (attribute == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES && size == sizeof(uint64_t)) {
    std::memcpy(&p.maxWorkspace, value, size);
    logCall("cublasLtMatmulPreferenceSetAttribute", name(preference), "max workspace", p.maxWorkspace);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (attribute == CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK && size == sizeof(uint32_t)) {
    std::memcpy(&p.reductions, value, size);
    logCall("cublasLtMatmulPreferenceSetAttribute", name(preference), "reduction schemes",
        p.reductions);
    return CUBLAS_STATUS_SUCCESS;
  }
  static const cublasLtMatmulPreferenceAttributes_t kAlignments[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    if (attribute == kAlignments[i] && size == sizeof(uint32_t)) {
      std::memcpy(&p.alignment[i], value, size);
      logCall("cublasLtMatmulPreferenceSetAttribute", name(preference),
          std::string("alignment ") + "ABCD"[i], p.alignment[i]);
      return CUBLAS_STATUS_SUCCESS;
    }
  logCall("cublasLtMatmulPreferenceSetAttribute", name(preference), static_cast<int>(attribute), size);
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t __wrap_cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t preference) {
  Serial serial;
  logCall("cublasLtMatmulPreferenceDestroy", name(preference));
  return state().ltPreferences.erase(preference) ? CUBLAS_STATUS_SUCCESS
                                                 : CUBLAS_STATUS_INVALID_VALUE;
}

/// One algorithm, when the problem is valid: algo.data[0] is its number
/// (from 1), and it needs the workspace the preference allows at most.
cublasStatus_t
__wrap_cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t operationDesc,
                                      cublasLtMatrixLayout_t aDesc, cublasLtMatrixLayout_t bDesc,
                                      cublasLtMatrixLayout_t cDesc, cublasLtMatrixLayout_t dDesc,
                                      cublasLtMatmulPreference_t preference, int requested,
                                      cublasLtMatmulHeuristicResult_t results[], int *returned) {
  logCall("cublasLtMatmulAlgoGetHeuristic", name(handle), name(operationDesc), name(aDesc), name(bDesc),
      name(cDesc), name(dDesc), name(preference), requested);
  FAIL_IF_PLANNED(cublasStatus_t, "cublasLtMatmulAlgoGetHeuristic");
  State &s = state();
  std::string problem = ltProblem(operationDesc, aDesc, bDesc, cDesc, dDesc);
  auto found = s.ltPreferences.find(preference);
  if (requested < 1 || problem[0] == '!' || found == s.ltPreferences.end()) {
    s.log.push_back("cublasLtMatmulAlgoGetHeuristic: " +
                    (problem[0] == '!' ? problem.substr(1) : std::string("invalid arguments")));
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  *returned = 0;
  if (s.heuristicAlgorithms < 1) {
    logResult("no algorithm");
    return CUBLAS_STATUS_SUCCESS;
  }
  const LtPreference &p = found->second;
  // cuBLASLt reads the bias pointer (not its data) for the alignment it may
  // assume, up to what it assumes of the matrices by default.
  const void *bias = s.ltOperations[operationDesc].bias;
  LtAlgorithm algorithm{
      problem, {}, p.maxWorkspace, bias ? std::min<uint64_t>(256, alignmentOf(bias, 1, 0)) : 0};
  std::copy(std::begin(p.alignment), std::end(p.alignment), std::begin(algorithm.alignment));
  s.ltAlgorithms.push_back(algorithm);
  results[0] = {};
  results[0].algo.data[0] = s.ltAlgorithms.size();
  results[0].workspaceSize = algorithm.workspace;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  logResult("algorithm" + std::to_string(s.ltAlgorithms.size()));
  return CUBLAS_STATUS_SUCCESS;
}

/// D = alpha op(A) op(B) + beta C (+ bias, one element per row of D, with
/// the bias epilogue), column-major, each batch at its stride: bf16 or f32
/// in, fp32 sums (TF32 compute is not rounded to TF32 here), and for bf16 one
/// rounding (to nearest even) of alpha sum + beta C + bias; C is not read
/// when beta is 0.
cublasStatus_t __wrap_cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t operationDesc,
                                     const void *alpha, const void *a, cublasLtMatrixLayout_t aDesc,
                                     const void *b, cublasLtMatrixLayout_t bDesc, const void *beta,
                                     const void *c, cublasLtMatrixLayout_t cDesc, void *d,
                                     cublasLtMatrixLayout_t dDesc, const cublasLtMatmulAlgo_t *algo,
                                     void *workspace, size_t workspaceBytes, cudaStream_t stream) {
  Serial serial;
  State &s = state();
  size_t number = algo ? algo->data[0] : 0;
  logCall("cublasLtMatmul", name(handle), name(operationDesc), name(aDesc), name(bDesc), name(cDesc),
      name(dDesc), "algorithm" + std::to_string(number), where(workspace), workspaceBytes,
      name(stream));
  FAIL_IF_PLANNED(cublasStatus_t, "cublasLtMatmul");
  auto invalid = [&](const std::string &why) {
    s.log.push_back("cublasLtMatmul: " + why);
    return CUBLAS_STATUS_INVALID_VALUE;
  };
  std::string problem = ltProblem(operationDesc, aDesc, bDesc, cDesc, dDesc);
  if (problem[0] == '!')
    return invalid(problem.substr(1));
  if (number < 1 || number > s.ltAlgorithms.size())
    return invalid("unknown algorithm");
  const LtAlgorithm &algorithm = s.ltAlgorithms[number - 1];
  if (algorithm.problem != problem)
    return invalid("the algorithm was chosen for " + algorithm.problem + ", not " + problem);
  if (workspaceBytes < algorithm.workspace || (algorithm.workspace > 0 && !workspace))
    return invalid("the algorithm needs a workspace of " + std::to_string(algorithm.workspace) +
                   " bytes");
  const LtOperation &op = s.ltOperations[operationDesc];
  const LtLayout &la = s.ltLayouts[aDesc], &lb = s.ltLayouts[bDesc], &lc = s.ltLayouts[cDesc],
                 &ld = s.ltLayouts[dDesc];
  const void *pointers[] = {a, b, c, d};
  const LtLayout *layouts[] = {&la, &lb, &lc, &ld};
  size_t bytes = typeBytes(lc.type);
  for (int i = 0; i < 4; ++i)
    if (alignmentOf(pointers[i], layouts[i]->batch, layouts[i]->stride * int64_t(bytes)) <
        algorithm.alignment[i])
      return invalid(std::string("matrix ") + "ABCD"[i] + " is less aligned than the " +
                     std::to_string(algorithm.alignment[i]) + " bytes the algorithm needs");
  const void *bias = op.epilogue == CUBLASLT_EPILOGUE_BIAS ? op.bias : nullptr;
  if (op.epilogue == CUBLASLT_EPILOGUE_BIAS && !bias)
    return invalid("the bias epilogue has no bias pointer");
  if (bias && alignmentOf(bias, 1, 0) < algorithm.biasAlignment)
    return invalid("the bias is less aligned than the " + std::to_string(algorithm.biasAlignment) +
                   " bytes the algorithm needs");
  auto transA = cublasOperation_t(op.transA), transB = cublasOperation_t(op.transB);
  int m = int(lc.rows), n = int(lc.cols), k = int(transA == CUBLAS_OP_N ? la.cols : la.rows);
  float alphaValue = *static_cast<const float *>(alpha);
  float betaValue = *static_cast<const float *>(beta);
  // The bias's batch stride is 0 (the default): one bias for the batch.
  auto product = [=, la = la, lb = lb, lc = lc, ld = ld](auto element, auto load, auto store) {
    using T = decltype(element);
    for (int32_t i = 0; i < lc.batch; ++i) {
      auto *ai = static_cast<const T *>(a) + i * la.stride;
      auto *bi = static_cast<const T *>(b) + i * lb.stride;
      auto *ci = static_cast<const T *>(c) + i * lc.stride;
      auto *di = static_cast<T *>(d) + i * ld.stride;
      for (int64_t col = 0; col < n; ++col)
        for (int64_t row = 0; row < m; ++row) {
          float sum = 0.0f;
          for (int64_t p = 0; p < k; ++p)
            sum +=
                load(at(ai, transA, int(la.ld), row, p)) * load(at(bi, transB, int(lb.ld), p, col));
          float value = alphaValue * sum;
          if (betaValue != 0.0f)
            value += betaValue * load(ci[row + col * lc.ld]);
          if (bias)
            value += load(static_cast<const T *>(bias)[row]);
          di[row + col * ld.ld] = store(value);
        }
    }
    ++state().enqueued;
  };
  if (lc.type == CUDA_R_32F) {
    auto same = [](float x) { return x; };
    enqueue(stream, [=] { product(0.0f, same, same); });
  } else {
    enqueue(stream, [=] { product(uint16_t(0), loadBF16, storeBF16); });
  }
  return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"
