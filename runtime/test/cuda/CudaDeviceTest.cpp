//===- CudaDeviceTest.cpp - Device choice, arena and errors of the CUDA backend -===//
//
// On the fake CUDA runtime (FakeCuda.h): which device a rank takes, what
// opening and closing the device creates and releases, the streams'
// priorities, the fp32 products' math mode, the arena's copies (asynchronous,
// from page-locked staging memory), and the one-line errors of a machine
// without a GPU and of a failed call.
//
//===----------------------------------------------------------------------===//

#include "abi/Arena.h"
#include "abi/Device.h"
#include "abi/Manifest.h"
#include "cuda/FakeCuda.h"
#include "cuda/OpenCudaDevice.h"
#include "fsdprt/fsdprt.h"
#include "trainer/BatchSource.h"

#include <cublas_v2.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

using namespace fsdprt;
using testing::ElementsAre;
using testing::ExitedWithCode;
using testing::HasSubstr;
using testing::IsEmpty;

namespace {

const char *const kLocalRankVariables[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                           "SLURM_LOCALID"};

class CudaDevice : public testing::Test {
protected:
  void SetUp() override {
    fake_cuda::reset();
    for (const char *name : kLocalRankVariables)
      unsetenv(name);
  }
  void TearDown() override {
    closeDevice();
    for (const char *name : kLocalRankVariables)
      unsetenv(name);
  }

  /// The device openDevice takes with `devices` devices, then closes.
  std::vector<std::string> chosenWith(int devices) {
    fake_cuda::reset();
    fake_cuda::setDevices(cudaSuccess, devices);
    openDevice();
    closeDevice();
    return fake_cuda::callsTo("cudaSetDevice");
  }
};

TEST_F(CudaDevice, TakesTheDeviceOfItsRankOnTheNode) {
  EXPECT_THAT(chosenWith(2), ElementsAre("cudaSetDevice(0)")) << "no launcher: rank 0";
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
  EXPECT_THAT(chosenWith(2), ElementsAre("cudaSetDevice(1)")) << "modulo the devices";
  EXPECT_THAT(chosenWith(8), ElementsAre("cudaSetDevice(3)"));
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  setenv("MPI_LOCALRANKID", "2", 1);
  EXPECT_THAT(chosenWith(4), ElementsAre("cudaSetDevice(2)"));
  setenv("SLURM_LOCALID", "1", 1);
  EXPECT_THAT(chosenWith(4), ElementsAre("cudaSetDevice(2)")) << "MPICH's before Slurm's";
  setenv("MPI_LOCALRANKID", "not a rank", 1);
  EXPECT_THAT(chosenWith(4), ElementsAre("cudaSetDevice(1)")) << "an unreadable one is skipped";
}

const std::string kExactMath =
    std::to_string(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);

TEST_F(CudaDevice, OpensFiveNonBlockingStreamsAndCublasOnCompute) {
  openDevice();
  std::vector<std::string> streams = fake_cuda::results("cudaStreamCreateWithPriority");
  ASSERT_EQ(streams.size(), 5u);
  EXPECT_EQ(fake_cuda::callsTo("cudaStreamCreateWithPriority(non-blocking").size(), 5u);
  std::vector<std::string> cublas = fake_cuda::results("cublasCreate");
  ASSERT_EQ(cublas.size(), 1u);
  EXPECT_THAT(fake_cuda::callsTo("cublasSetStream"),
              ElementsAre("cublasSetStream(" + cublas[0] + ", " + streams[0] + ")"));
  // Default math (no TF32) and no reduced-precision reductions.
  EXPECT_THAT(fake_cuda::callsTo("cublasSetMathMode"),
              ElementsAre("cublasSetMathMode(" + cublas[0] + ", " + kExactMath + ")"));
  // cuBLASLt for the bf16 products, with its workspace of 32 MiB.
  EXPECT_EQ(fake_cuda::results("cublasLtCreate").size(), 1u);
  EXPECT_THAT(fake_cuda::callsTo("cudaMalloc"), ElementsAre("cudaMalloc(33554432) -> device1+0"));
  // cuBLAS's products share it: cuBLAS would otherwise allocate its own at a
  // first product, inside a CUDA graph's capture. After cublasSetStream,
  // which puts the handle back on cuBLAS's own pool.
  std::vector<std::string> all = fake_cuda::calls();
  auto workspace = std::find(all.begin(), all.end(),
                             "cublasSetWorkspace(" + cublas[0] + ", device1+0, 33554432)");
  ASSERT_NE(workspace, all.end());
  EXPECT_GT(workspace - std::find(all.begin(), all.end(),
                                  "cublasSetStream(" + cublas[0] + ", " + streams[0] + ")"),
            0);
  void *compute = fsdprt_stream(FSDPRT_STREAM_COMPUTE);
  void *allGather = fsdprt_stream(FSDPRT_STREAM_ALL_GATHER);
  void *reduceScatter = fsdprt_stream(FSDPRT_STREAM_REDUCE_SCATTER);
  void *tensor = fsdprt_stream(FSDPRT_STREAM_TENSOR);
  EXPECT_NE(compute, nullptr);
  EXPECT_NE(compute, allGather);
  EXPECT_NE(allGather, reduceScatter);
  EXPECT_NE(compute, reduceScatter);
  EXPECT_NE(tensor, nullptr);
  for (void *other : {compute, allGather, reduceScatter})
    EXPECT_NE(tensor, other);
}

// The collective streams (tensor's too) at the greatest priority, so that
// NCCL's kernels get SMs before the compute stream's when both wait; compute
// and copy at the least.
TEST_F(CudaDevice, CollectiveStreamsHaveTheGreatestPriority) {
  openDevice();
  std::vector<std::string> streams = fake_cuda::results("cudaStreamCreateWithPriority");
  ASSERT_EQ(streams.size(), 5u);
  std::vector<std::string> created = fake_cuda::callsTo("cudaStream");
  std::string least = std::to_string(fake_cuda::kLeastStreamPriority);
  std::string greatest = std::to_string(fake_cuda::kGreatestStreamPriority);
  EXPECT_THAT(
      created,
      ElementsAre("cudaStreamCreateWithPriority(non-blocking, " + least + ") -> " + streams[0],
                  "cudaStreamCreateWithPriority(non-blocking, " + greatest + ") -> " + streams[1],
                  "cudaStreamCreateWithPriority(non-blocking, " + greatest + ") -> " + streams[2],
                  "cudaStreamCreateWithPriority(non-blocking, " + least + ") -> " + streams[3],
                  "cudaStreamCreateWithPriority(non-blocking, " + greatest + ") -> " + streams[4]));
  // The range is asked for before the streams are created.
  std::vector<std::string> all = fake_cuda::calls();
  auto range = std::find(all.begin(), all.end(), "cudaDeviceGetStreamPriorityRange()");
  auto first = std::find_if(all.begin(), all.end(), [](const std::string &call) {
    return call.rfind("cudaStreamCreateWithPriority", 0) == 0;
  });
  EXPECT_LT(range, first);
  // Each stream is the one fsdprt.h's index names.
  EXPECT_NE(fsdprt_stream(FSDPRT_STREAM_ALL_GATHER), nullptr);
  fake_cuda::reset();
  fsdprt_event_record(0, FSDPRT_STREAM_ALL_GATHER);
  fsdprt_event_record(1, FSDPRT_STREAM_REDUCE_SCATTER);
  fsdprt_event_record(2, FSDPRT_STREAM_COMPUTE);
  std::vector<std::string> records = fake_cuda::callsTo("cudaEventRecord");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_THAT(records[0], testing::EndsWith(", " + streams[1] + ")"));
  EXPECT_THAT(records[1], testing::EndsWith(", " + streams[2] + ")"));
  EXPECT_THAT(records[2], testing::EndsWith(", " + streams[0] + ")"));
}

// The manifest's allow_tf32 decides the fp32 products' math mode.
TEST_F(CudaDevice, Tf32OnlyWhenAllowed) {
  openDevice();
  std::string cublas = fake_cuda::results("cublasCreate").at(0);
  fake_cuda::reset();
  setAllowTf32(true);
  setAllowTf32(false);
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cublasSetMathMode(" + cublas + ", " +
                              std::to_string(CUBLAS_TF32_TENSOR_OP_MATH) + ")",
                          "cublasSetMathMode(" + cublas + ", " + kExactMath + ")"));
}

// MFU's peak is the open card's (the fake is an H100 SXM by its name), its
// f32 rate TF32's where the manifest allows it.
TEST_F(CudaDevice, ThePeakIsTheOpenCardsDatasheetFigure) {
  openDevice();
  Manifest manifest;
  PeakRates exact = devicePeak(manifest);
  EXPECT_EQ(exact.source, "NVIDIA H100 80GB HBM3 (datasheet, dense)");
  EXPECT_DOUBLE_EQ(exact.bf16, 989.4e12);
  EXPECT_DOUBLE_EQ(exact.f32, 66.9e12);
  manifest.allowTf32 = true;
  EXPECT_DOUBLE_EQ(devicePeak(manifest).f32, 494.7e12);
  EXPECT_THAT(fake_cuda::calls(), testing::Contains(HasSubstr("cudaGetDeviceProperties(")));
}

TEST_F(CudaDevice, Tf32NeedsAnOpenDevice) {
  EXPECT_EXIT(setAllowTf32(true), ExitedWithCode(1),
              HasSubstr("trainer: error: setAllowTf32: no CUDA device is open"));
}

TEST_F(CudaDevice, ClosingReleasesWhatOpeningCreated) {
  openDevice();
  std::vector<std::string> streams = fake_cuda::results("cudaStreamCreateWithPriority");
  std::vector<std::string> cublas = fake_cuda::results("cublasCreate");
  std::vector<std::string> lt = fake_cuda::results("cublasLtCreate");
  fsdprt_event_record(9, FSDPRT_STREAM_COMPUTE);
  std::vector<std::string> events = fake_cuda::results("cudaEventCreateWithFlags");
  fake_cuda::reset();
  closeDevice();
  EXPECT_THAT(
      fake_cuda::calls(),
      ElementsAre("cudaDeviceSynchronize()", "cudaEventDestroy(" + events.at(0) + ")",
                  "cublasLtDestroy(" + lt.at(0) + ")", "cublasDestroy(" + cublas.at(0) + ")",
                  "cudaFree(device1+0)", "cudaStreamDestroy(" + streams[0] + ")",
                  "cudaStreamDestroy(" + streams[1] + ")", "cudaStreamDestroy(" + streams[2] + ")",
                  "cudaStreamDestroy(" + streams[3] + ")",
                  "cudaStreamDestroy(" + streams[4] + ")"));
  fake_cuda::reset();
  closeDevice();
  EXPECT_TRUE(fake_cuda::calls().empty()) << "closing twice";
}

TEST_F(CudaDevice, FinishingAStepWaitsForTheDevice) {
  openDevice();
  fake_cuda::reset();
  finishStep();
  EXPECT_THAT(fake_cuda::calls(), ElementsAre("cudaDeviceSynchronize()"));
}

TEST_F(CudaDevice, FinishingTheUploadsWaitsForTheDevice) {
  openDevice();
  fake_cuda::reset();
  finishUploads();
  EXPECT_THAT(fake_cuda::calls(), ElementsAre("cudaDeviceSynchronize()"));
}

const char *const kNoDevice = " (this trainer was compiled with fsdpc --target=cuda; compile with "
                              "--target=cpu to train on CPUs)\n";

TEST_F(CudaDevice, NoDriver) {
  fake_cuda::setDevices(cudaErrorInsufficientDriver, 0);
  EXPECT_EXIT(openDevice(), ExitedWithCode(1),
              testing::EndsWith(std::string("trainer: error: no usable CUDA device: "
                                            "cudaGetDeviceCount: CUDA driver version is "
                                            "insufficient for CUDA runtime version") +
                                kNoDevice));
}

TEST_F(CudaDevice, NoDevice) {
  fake_cuda::setDevices(cudaSuccess, 0);
  EXPECT_EXIT(openDevice(), ExitedWithCode(1),
              testing::EndsWith(std::string("trainer: error: no usable CUDA device: "
                                            "cudaGetDeviceCount found no device") +
                                kNoDevice));
}

TEST_F(CudaDevice, AFailedCallIsOneLineNamingIt) {
  fake_cuda::failNext("cudaSetDevice", cudaErrorInvalidDevice);
  EXPECT_EXIT(openDevice(), ExitedWithCode(1),
              HasSubstr("trainer: error: cudaSetDevice(device.ordinal): invalid device ordinal\n"));
}

TEST_F(CudaDevice, AFailedCublasCallGivesItsStatusName) {
  fake_cuda::failNext("cublasCreate_v2", CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EXIT(openDevice(), ExitedWithCode(1),
              HasSubstr("trainer: error: cublasCreate(&handle): CUBLAS_STATUS_NOT_INITIALIZED ("));
}

TEST_F(CudaDevice, NothingRunsBeforeTheDeviceIsOpen) {
  EXPECT_EXIT(fsdprt_stream(FSDPRT_STREAM_COMPUTE), ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_stream: no CUDA device is open (the trainer "
                        "chooses one once MPI runs, before the first step)"));
  float x = 0;
  EXPECT_EXIT(fsdprt_sgemm(0, 0, 1, 1, 1, 1.0f, &x, 1, &x, 1, 0.0f, &x, 1), ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_sgemm: no CUDA device is open"));
  EXPECT_EXIT(Arena(64), ExitedWithCode(1),
              HasSubstr("trainer: error: the arena: no CUDA device is open"));
}

using CudaArena = OpenCudaDevice;

// device1 is cuBLASLt's workspace (OpenCudaDevice.h): the arena is device2.
TEST_F(CudaArena, ZeroFilledDeviceMemoryWithAHostCopy) {
  Arena arena(1000);
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cudaMalloc(1000) -> device2+0", "cudaMemset(device2+0, 0, 1000)",
                          "cudaDeviceSynchronize()"));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena.stepData()) % 256, 0u);
  EXPECT_NE(static_cast<void *>(arena.host()), arena.stepData());
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(arena.host()[i], 0) << "host byte " << i;
}

TEST_F(CudaArena, CopiesOnlyTheRangesAskedFor) {
  Arena arena(1000);
  auto *device = static_cast<uint8_t *>(arena.stepData());
  fake_cuda::reset();
  std::memset(arena.host() + 10, 7, 20);
  arena.upload(10, 10);
  EXPECT_EQ(device[10], 7);
  EXPECT_EQ(device[19], 7);
  EXPECT_EQ(device[20], 0) << "beyond the range";
  std::string event = fake_cuda::results("cudaEventCreateWithFlags").at(0);
  arena.fill(500, 500, 0xA5);
  EXPECT_EQ(device[999], 0xA5);
  EXPECT_EQ(arena.host()[999], 0) << "a fill is on the device only";
  arena.download(990, 10);
  EXPECT_EQ(arena.host()[999], 0xA5);
  EXPECT_EQ(arena.host()[989], 0);
  // Uploads and fills on the compute stream, with no wait; a download there
  // too, after them, and the host waits for it.
  const std::string &compute = stream(FSDPRT_STREAM_COMPUTE);
  EXPECT_THAT(
      fake_cuda::calls(),
      ElementsAre("cudaHostAlloc(10, 0) -> pinned1+0",
                  "cudaMemcpyAsync(device2+10 <- pinned1+0, 10, host to device, " + compute + ")",
                  "cudaEventCreateWithFlags(no timing) -> " + event,
                  "cudaEventRecord(" + event + ", " + compute + ")",
                  "cudaMemsetAsync(device2+500, 165, 500, " + compute + ")",
                  "cudaMemcpyAsync(host <- device2+990, 10, device to host, " + compute + ")",
                  "cudaStreamSynchronize(" + compute + ")"));
}

/// Three inputs, one staging buffer each in turn: the third input takes the
/// first input's buffer again.
class CudaUploads : public OpenCudaDevice {
protected:
  /// Writes bytes `step * 10 + input` into each input's slot.
  class Numbered : public BatchSource {
  public:
    Numbered(const Manifest &manifest) : BatchSource(RankRows(1, 1, 0)), manifest(manifest) {}
    void writeBatch(int64_t step, uint8_t *arena) override {
      for (const InputSpec &input : manifest.inputs)
        std::memset(arena + input.offset, static_cast<int>(step * 10 + input.index),
                    static_cast<size_t>(input.bytes));
    }
    int64_t numSamples() const override { return 1; }

  private:
    const Manifest &manifest;
  };

  CudaUploads() {
    const int64_t offsets[] = {0, 256, 512}, bytes[] = {100, 64, 32};
    for (int64_t i = 0; i < 3; ++i) {
      InputSpec input;
      input.index = i;
      input.offset = offsets[i];
      input.bytes = bytes[i];
      manifest.inputs.push_back(input);
    }
  }

  /// Whether the device holds step `step`'s batch.
  bool holdsBatch(const Arena &arena, int64_t step) {
    auto *device = static_cast<const uint8_t *>(arena.stepData());
    for (const InputSpec &input : manifest.inputs)
      for (int64_t i = 0; i < input.bytes; ++i)
        if (device[input.offset + i] != step * 10 + input.index)
          return false;
    return true;
  }

  Manifest manifest;
};

// A step's inputs go through one staging buffer, the two buffers taking
// turns step by step: the host refills one only after the copies of the
// step before the previous one, which are long done (a step's inputs split
// over both would make its last upload wait for the previous step's copies,
// which come after the previous step's work on the stream).
TEST_F(CudaUploads, EachStepsInputsAreAsyncCopiesFromOneStagingBuffer) {
  Arena arena(1024);
  Numbered source(manifest);
  fake_cuda::reset();
  for (int64_t step = 1; step <= 3; ++step) {
    loadBatch(source, step, manifest, arena);
    EXPECT_TRUE(holdsBatch(arena, step));
  }
  std::vector<std::string> events = fake_cuda::results("cudaEventCreateWithFlags");
  ASSERT_EQ(events.size(), 2u) << "one event per staging buffer";
  const std::string &compute = stream(FSDPRT_STREAM_COMPUTE);
  auto copy = [&](const std::string &to, const std::string &from, int bytes) {
    return "cudaMemcpyAsync(" + to + " <- " + from + ", " + std::to_string(bytes) +
           ", host to device, " + compute + ")";
  };
  auto record = [&](const std::string &event) {
    return "cudaEventRecord(" + event + ", " + compute + ")";
  };
  auto inputs = [&](const std::string &pinned) {
    return std::vector<std::string>{copy("device2+0", pinned + "+0", 100),
                                    copy("device2+256", pinned + "+100", 64),
                                    copy("device2+512", pinned + "+164", 32)};
  };
  std::vector<std::string> expected = {"cudaHostAlloc(196, 0) -> pinned1+0"};
  for (const std::string &call : inputs("pinned1"))
    expected.push_back(call);
  expected.push_back("cudaEventCreateWithFlags(no timing) -> " + events[0]);
  expected.push_back(record(events[0]));
  expected.push_back("cudaHostAlloc(196, 0) -> pinned2+0");
  for (const std::string &call : inputs("pinned2"))
    expected.push_back(call);
  expected.push_back("cudaEventCreateWithFlags(no timing) -> " + events[1]);
  expected.push_back(record(events[1]));
  // Step 3 takes the first buffer again, once step 1's copies from it are done.
  expected.push_back("cudaEventSynchronize(" + events[0] + ")");
  for (const std::string &call : inputs("pinned1"))
    expected.push_back(call);
  expected.push_back(record(events[0]));
  EXPECT_THAT(fake_cuda::calls(), testing::ElementsAreArray(expected));
  finishStep();
  EXPECT_THAT(fake_cuda::callsTo("race"), IsEmpty());
}

// With device_scalars, the step's lr and step (and a NaN where it leaves its
// loss) go with its inputs, in the same buffer; ranges adjacent in the arena
// are one copy.
TEST_F(CudaUploads, TheDeviceScalarsGoWithTheInputs) {
  manifest.deviceScalars = DeviceScalarsSpec{544}; // right after the third input
  Arena arena(1024);
  Numbered source(manifest);
  fake_cuda::reset();
  loadBatch(source, 1, manifest, arena, {0.25f, 7});
  EXPECT_TRUE(holdsBatch(arena, 1));
  const std::string &compute = stream(FSDPRT_STREAM_COMPUTE);
  EXPECT_THAT(
      fake_cuda::callsTo("cudaMemcpyAsync"),
      ElementsAre(
          "cudaMemcpyAsync(device2+0 <- pinned1+0, 100, host to device, " + compute + ")",
          "cudaMemcpyAsync(device2+256 <- pinned1+100, 64, host to device, " + compute + ")",
          "cudaMemcpyAsync(device2+512 <- pinned1+164, 48, host to device, " + compute + ")"));
  const uint8_t *scalars = static_cast<const uint8_t *>(arena.stepData()) + 544;
  float lr, loss;
  int64_t step;
  std::memcpy(&lr, scalars + DeviceScalarsSpec::kLr, sizeof(lr));
  std::memcpy(&loss, scalars + DeviceScalarsSpec::kLoss, sizeof(loss));
  std::memcpy(&step, scalars + DeviceScalarsSpec::kStep, sizeof(step));
  EXPECT_EQ(lr, 0.25f);
  EXPECT_TRUE(std::isnan(loss)) << "a step that leaves no loss stops the run";
  EXPECT_EQ(step, 7);
  EXPECT_EQ(deviceLoss(manifest, arena), scalars + 4);
  finishStep();
  EXPECT_THAT(fake_cuda::callsTo("race"), IsEmpty());
}

// A staging buffer the host wrote while a copy still read it would show as
// a race in the fake: checked here over many uploads, the buffers' events
// being synchronised in between only when the ring comes round.
TEST_F(CudaUploads, NoStagingBufferIsWrittenWhileACopyReadsIt) {
  Arena arena(1024);
  Numbered source(manifest);
  for (int64_t step = 1; step <= 5; ++step) {
    loadBatch(source, step, manifest, arena);
    EXPECT_TRUE(holdsBatch(arena, step));
  }
  finishStep();
  EXPECT_THAT(fake_cuda::callsTo("race"), IsEmpty());
}

// A parameter shard larger than a staging buffer goes in chunks of 16 MiB,
// the two buffers in turn: the third chunk waits for the first's copy.
TEST_F(CudaUploads, ALargeUploadGoesInChunks) {
  const int64_t chunk = int64_t(16) << 20, bytes = 2 * chunk + 1000;
  Arena arena(static_cast<size_t>(bytes + 64));
  for (int64_t i = 0; i < bytes; ++i)
    arena.host()[64 + i] = static_cast<uint8_t>(i * 7 + i / 4099); // no period of a chunk
  fake_cuda::reset();
  arena.upload(64, bytes);
  finishUploads();
  EXPECT_EQ(std::memcmp(static_cast<uint8_t *>(arena.stepData()) + 64, arena.host() + 64,
                        static_cast<size_t>(bytes)),
            0);
  std::vector<std::string> events = fake_cuda::results("cudaEventCreateWithFlags");
  ASSERT_EQ(events.size(), 2u);
  const std::string &compute = stream(FSDPRT_STREAM_COMPUTE);
  EXPECT_THAT(
      fake_cuda::callsTo("cuda"),
      ElementsAre(
          "cudaHostAlloc(16777216, 0) -> pinned1+0",
          "cudaMemcpyAsync(device2+64 <- pinned1+0, 16777216, host to device, " + compute + ")",
          "cudaEventCreateWithFlags(no timing) -> " + events[0],
          "cudaEventRecord(" + events[0] + ", " + compute + ")",
          "cudaHostAlloc(16777216, 0) -> pinned2+0",
          "cudaMemcpyAsync(device2+16777280 <- pinned2+0, 16777216, host to "
          "device, " +
              compute + ")",
          "cudaEventCreateWithFlags(no timing) -> " + events[1],
          "cudaEventRecord(" + events[1] + ", " + compute + ")",
          "cudaEventSynchronize(" + events[0] + ")",
          "cudaMemcpyAsync(device2+33554496 <- pinned1+0, 1000, host to device, " + compute + ")",
          "cudaEventRecord(" + events[0] + ", " + compute + ")", "cudaDeviceSynchronize()"));
  EXPECT_THAT(fake_cuda::callsTo("race"), IsEmpty());
}

TEST_F(CudaUploads, TheStagingBuffersGoWithTheArena) {
  {
    Arena arena(1024);
    Numbered source(manifest);
    loadBatch(source, 1, manifest, arena);
    loadBatch(source, 2, manifest, arena);
    fake_cuda::reset();
  }
  std::vector<std::string> freed = fake_cuda::callsTo("cudaFreeHost");
  EXPECT_THAT(freed, ElementsAre("cudaFreeHost(pinned1+0)", "cudaFreeHost(pinned2+0)"));
  EXPECT_EQ(fake_cuda::callsTo("cudaEventSynchronize").size(), 2u)
      << "each buffer's last copy is waited for before it is freed";
  EXPECT_EQ(fake_cuda::callsTo("cudaEventDestroy").size(), 2u);
  EXPECT_THAT(fake_cuda::callsTo("race"), IsEmpty());
}

TEST_F(CudaArena, ThatDoesNotFit) {
  fake_cuda::failNext("cudaMalloc", cudaErrorMemoryAllocation);
  EXPECT_EXIT(Arena(1000), ExitedWithCode(1),
              HasSubstr("trainer: error: cannot allocate the arena of 1000 bytes on CUDA device "
                        "0: out of memory\n"));
}

} // namespace
