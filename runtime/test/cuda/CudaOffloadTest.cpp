//===- CudaOffloadTest.cpp - offload's copies and host arena on CUDA -------===//
//
// offload = optimizer on the CUDA backend, on the fake runtime (FakeCuda.h):
// a copy between the arena and the page-locked host arena is one
// cudaMemcpyAsync on the copy stream, then its handle's event recorded there
// (lib/cuda/HostCopies.cpp); fsdprt_wait makes the compute stream wait for
// that event and, for a copy to the host only, blocks the host until the
// bytes are there, since the host's update reads them next
// (lib/cuda/NcclCollectives.cpp). The host arena is cudaHostAlloc'd and
// zero-filled (lib/cuda/CudaArena.cpp).
//
//===----------------------------------------------------------------------===//

#include "abi/Arena.h"
#include "abi/Collectives.h"
#include "abi/Device.h"
#include "cuda/FakeCuda.h"
#include "cuda/OpenCudaDevice.h"
#include "fsdprt/fsdprt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

using namespace fsdprt;
using testing::ElementsAre;
using testing::ExitedWithCode;
using testing::HasSubstr;
using testing::IsEmpty;

namespace {

class CudaHostCopies : public OpenCudaDevice {
protected:
  uint8_t *device(Arena &arena, int64_t offset) {
    return static_cast<uint8_t *>(arena.stepData()) + offset;
  }

  /// The event of the one handle created since the log's last reset.
  std::string doneEvent() {
    std::vector<std::string> created = fake_cuda::results("cudaEventCreateWithFlags");
    EXPECT_EQ(created.size(), 1u);
    return created.empty() ? std::string("?") : created[0];
  }
};

TEST_F(CudaHostCopies, ACopyToTheHostIsOneAsyncCopyOnTheCopyStreamThenItsEvent) {
  Arena arena(64);
  HostArena host(64);
  const float values[] = {1, 2, 3, 4};
  std::memcpy(device(arena, 16), values, sizeof(values)); // device memory is host memory here
  fake_cuda::reset();
  int32_t handle = fsdprt_copy_to_host_start(host.data() + 32, device(arena, 16), 16);
  EXPECT_EQ(pendingCollectives(), 1);
  const std::string &copy = stream(FSDPRT_STREAM_COPY);
  std::string done = doneEvent();
  EXPECT_THAT(
      fake_cuda::calls(),
      ElementsAre("cudaMemcpyAsync(pinned1+32 <- device2+16, 16, device to host, " + copy + ")",
                  "cudaEventCreateWithFlags(no timing) -> " + done,
                  "cudaEventRecord(" + done + ", " + copy + ")"));
  EXPECT_EQ(std::memcmp(host.data() + 32, values, sizeof(values)), 0);
  fsdprt_wait(handle);
  EXPECT_EQ(pendingCollectives(), 0);
}

// The host's update reads the gradient the copy brought: the wait must block
// the host on the copy's event, besides ordering the compute stream after it.
TEST_F(CudaHostCopies, WaitingForACopyToTheHostBlocksTheHostOnItsEvent) {
  Arena arena(64);
  HostArena host(64);
  fake_cuda::reset();
  int32_t handle = fsdprt_copy_to_host_start(host.data(), device(arena, 0), 64);
  std::string done = doneEvent();
  fake_cuda::reset();
  fsdprt_wait(handle);
  const std::string &compute = stream(FSDPRT_STREAM_COMPUTE);
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cudaStreamWaitEvent(" + compute + ", " + done + ")",
                          "cudaEventSynchronize(" + done + ")"));
  EXPECT_EQ(pendingCollectives(), 0);
}

TEST_F(CudaHostCopies, ACopyToTheDeviceIsOneAsyncCopyOnTheCopyStreamThenItsEvent) {
  Arena arena(64);
  HostArena host(64);
  const uint16_t values[] = {0x3f80, 0x4000, 0x4040, 0x4080};
  std::memcpy(host.data() + 8, values, sizeof(values));
  fake_cuda::reset();
  int32_t handle = fsdprt_copy_to_device_start(device(arena, 48), host.data() + 8, 8);
  EXPECT_EQ(pendingCollectives(), 1);
  const std::string &copy = stream(FSDPRT_STREAM_COPY);
  std::string done = doneEvent();
  EXPECT_THAT(
      fake_cuda::calls(),
      ElementsAre("cudaMemcpyAsync(device2+48 <- pinned1+8, 8, host to device, " + copy + ")",
                  "cudaEventCreateWithFlags(no timing) -> " + done,
                  "cudaEventRecord(" + done + ", " + copy + ")"));
  EXPECT_EQ(std::memcmp(device(arena, 48), values, sizeof(values)), 0);
  fsdprt_wait(handle);
  EXPECT_EQ(pendingCollectives(), 0);
}

// The device's next gathers read the updated shard: the compute stream waits
// for it, but the host goes on (no cudaEventSynchronize).
TEST_F(CudaHostCopies, WaitingForACopyToTheDeviceDoesNotBlockTheHost) {
  Arena arena(64);
  HostArena host(64);
  fake_cuda::reset();
  int32_t handle = fsdprt_copy_to_device_start(device(arena, 0), host.data(), 64);
  std::string done = doneEvent();
  fake_cuda::reset();
  fsdprt_wait(handle);
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cudaStreamWaitEvent(" + stream(FSDPRT_STREAM_COMPUTE) + ", " + done +
                          ")"));
  EXPECT_EQ(pendingCollectives(), 0);
}

// A handle's slot is reused, and its event with it: the kind is the latest
// start's, so a copy to the device in the slot of an earlier copy to the host
// does not block the host.
TEST_F(CudaHostCopies, AReusedHandleTakesTheKindOfItsLatestStart) {
  Arena arena(64);
  HostArena host(64);
  int32_t toHost = fsdprt_copy_to_host_start(host.data(), device(arena, 0), 4);
  fsdprt_wait(toHost);
  int32_t toDevice = fsdprt_copy_to_device_start(device(arena, 0), host.data(), 4);
  ASSERT_EQ(toDevice, toHost);
  fake_cuda::reset();
  fsdprt_wait(toDevice);
  EXPECT_THAT(fake_cuda::callsTo("cudaEventSynchronize"), IsEmpty());
  int32_t again = fsdprt_copy_to_host_start(host.data(), device(arena, 0), 4);
  ASSERT_EQ(again, toHost);
  fake_cuda::reset();
  fsdprt_wait(again);
  EXPECT_EQ(fake_cuda::callsTo("cudaEventSynchronize").size(), 1u);
}

TEST_F(CudaHostCopies, BothDirectionsInFlightAtOnce) {
  Arena arena(64);
  HostArena host(64);
  fake_cuda::reset();
  int32_t toHost = fsdprt_copy_to_host_start(host.data(), device(arena, 0), 16);
  int32_t toDevice = fsdprt_copy_to_device_start(device(arena, 32), host.data() + 32, 16);
  EXPECT_NE(toHost, toDevice);
  EXPECT_EQ(pendingCollectives(), 2);
  std::vector<std::string> events = fake_cuda::results("cudaEventCreateWithFlags");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_NE(events[0], events[1]);
  fake_cuda::reset();
  fsdprt_wait(toDevice);
  fsdprt_wait(toHost);
  const std::string &compute = stream(FSDPRT_STREAM_COMPUTE);
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cudaStreamWaitEvent(" + compute + ", " + events[1] + ")",
                          "cudaStreamWaitEvent(" + compute + ", " + events[0] + ")",
                          "cudaEventSynchronize(" + events[0] + ")"));
  EXPECT_EQ(pendingCollectives(), 0);
}

// An empty copy enqueues nothing, but its handle still completes through its
// event on the copy stream.
TEST_F(CudaHostCopies, ZeroBytesRecordOnlyTheEvent) {
  Arena arena(64);
  HostArena host(64);
  fake_cuda::reset();
  int32_t handle = fsdprt_copy_to_device_start(device(arena, 0), host.data(), 0);
  std::string done = doneEvent();
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cudaEventCreateWithFlags(no timing) -> " + done,
                          "cudaEventRecord(" + done + ", " + stream(FSDPRT_STREAM_COPY) + ")"));
  fsdprt_wait(handle);
  fsdprt_wait(fsdprt_copy_to_host_start(host.data(), device(arena, 0), 0));
  EXPECT_THAT(fake_cuda::callsTo("cudaMemcpyAsync"), IsEmpty());
  EXPECT_EQ(pendingCollectives(), 0);
}

TEST_F(CudaHostCopies, ANegativeSizeIsAnError) {
  Arena arena(64);
  HostArena host(64);
  EXPECT_EXIT(fsdprt_copy_to_host_start(host.data(), device(arena, 0), -8), ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_copy_to_host_start: negative size -8\n"));
  EXPECT_EXIT(fsdprt_copy_to_device_start(device(arena, 0), host.data(), -1), ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_copy_to_device_start: negative size -1\n"));
}

using CudaHostArena = OpenCudaDevice;

TEST_F(CudaHostArena, NothingWithoutOffload) {
  {
    HostArena arena(0);
    EXPECT_EQ(arena.data(), nullptr);
  }
  // Neither cudaHostAlloc nor cudaFreeHost.
  EXPECT_THAT(fake_cuda::calls(), IsEmpty());
}

TEST_F(CudaHostArena, PageLockedZeroFilledAndFreed) {
  {
    HostArena arena(100);
    EXPECT_THAT(fake_cuda::calls(), ElementsAre("cudaHostAlloc(100, 0) -> pinned1+0"));
    ASSERT_NE(arena.data(), nullptr);
    // cudaHostAlloc does not zero its memory (nor does the fake's).
    for (size_t i = 0; i < 100; ++i)
      ASSERT_EQ(arena.data()[i], 0) << "byte " << i;
  }
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cudaHostAlloc(100, 0) -> pinned1+0", "cudaFreeHost(pinned1+0)"));
}

TEST_F(CudaHostArena, ThatDoesNotFit) {
  fake_cuda::failNext("cudaHostAlloc", cudaErrorMemoryAllocation);
  EXPECT_EXIT(HostArena(1000), ExitedWithCode(1),
              HasSubstr("trainer: error: cannot allocate the page-locked host arena of 1000 "
                        "bytes (offload = optimizer): out of memory\n"));
}

TEST_F(CudaHostArena, NeedsAnOpenDevice) {
  EXPECT_EXIT(
      {
        closeDevice();
        HostArena arena(64);
      },
      ExitedWithCode(1), HasSubstr("trainer: error: the host arena: no CUDA device is open"));
}

} // namespace
