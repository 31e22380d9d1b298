//===- CudaDeviceTest.cpp - Device choice, arena and errors of the CUDA backend -===//
//
// On the fake CUDA runtime (FakeCuda.h): which device a rank takes, what
// opening and closing the device creates and releases, the arena's copies,
// and the one-line errors of a machine without a GPU and of a failed call.
//
//===----------------------------------------------------------------------===//

#include "Arena.h"
#include "Device.h"
#include "FakeCuda.h"
#include "OpenCudaDevice.h"
#include "fsdprt/fsdprt.h"

#include <cublas_v2.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

using namespace fsdprt;
using testing::ElementsAre;
using testing::ExitedWithCode;
using testing::HasSubstr;

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

TEST_F(CudaDevice, OpensFourNonBlockingStreamsAndCublasOnCompute) {
  openDevice();
  std::vector<std::string> streams = fake_cuda::results("cudaStreamCreateWithFlags");
  ASSERT_EQ(streams.size(), 4u);
  EXPECT_EQ(fake_cuda::callsTo("cudaStreamCreateWithFlags(non-blocking)").size(), 4u);
  std::vector<std::string> cublas = fake_cuda::results("cublasCreate");
  ASSERT_EQ(cublas.size(), 1u);
  EXPECT_THAT(fake_cuda::callsTo("cublasSetStream"),
              ElementsAre("cublasSetStream(" + cublas[0] + ", " + streams[0] + ")"));
  // Default math (no TF32) and no reduced-precision reductions.
  EXPECT_THAT(fake_cuda::callsTo("cublasSetMathMode"),
              ElementsAre("cublasSetMathMode(" + cublas[0] + ", " +
                          std::to_string(CUBLAS_DEFAULT_MATH |
                                         CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) +
                          ")"));
  void *compute = fsdprt_stream(FSDPRT_STREAM_COMPUTE);
  void *allGather = fsdprt_stream(FSDPRT_STREAM_ALL_GATHER);
  void *reduceScatter = fsdprt_stream(FSDPRT_STREAM_REDUCE_SCATTER);
  EXPECT_NE(compute, nullptr);
  EXPECT_NE(compute, allGather);
  EXPECT_NE(allGather, reduceScatter);
  EXPECT_NE(compute, reduceScatter);
}

TEST_F(CudaDevice, ClosingReleasesWhatOpeningCreated) {
  openDevice();
  std::vector<std::string> streams = fake_cuda::results("cudaStreamCreateWithFlags");
  std::vector<std::string> cublas = fake_cuda::results("cublasCreate");
  fsdprt_event_record(9, FSDPRT_STREAM_COMPUTE);
  std::vector<std::string> events = fake_cuda::results("cudaEventCreateWithFlags");
  fake_cuda::reset();
  closeDevice();
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cudaDeviceSynchronize()", "cudaEventDestroy(" + events.at(0) + ")",
                          "cublasDestroy(" + cublas.at(0) + ")",
                          "cudaStreamDestroy(" + streams[0] + ")",
                          "cudaStreamDestroy(" + streams[1] + ")",
                          "cudaStreamDestroy(" + streams[2] + ")",
                          "cudaStreamDestroy(" + streams[3] + ")"));
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

TEST_F(CudaArena, ZeroFilledDeviceMemoryWithAHostCopy) {
  Arena arena(1000);
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cudaMalloc(1000) -> device1+0", "cudaMemset(device1+0, 0, 1000)",
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
  arena.fill(500, 500, 0xA5);
  EXPECT_EQ(device[999], 0xA5);
  EXPECT_EQ(arena.host()[999], 0) << "a fill is on the device only";
  arena.download(990, 10);
  EXPECT_EQ(arena.host()[999], 0xA5);
  EXPECT_EQ(arena.host()[989], 0);
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cudaMemcpy(device1+10 <- host, 10)", "cudaDeviceSynchronize()",
                          "cudaMemset(device1+500, 165, 500)", "cudaDeviceSynchronize()",
                          "cudaMemcpy(host <- device1+990, 10)"));
}

TEST_F(CudaArena, ThatDoesNotFit) {
  fake_cuda::failNext("cudaMalloc", cudaErrorMemoryAllocation);
  EXPECT_EXIT(Arena(1000), ExitedWithCode(1),
              HasSubstr("trainer: error: cannot allocate the arena of 1000 bytes on CUDA device "
                        "0: out of memory\n"));
}

} // namespace
