//===- OffloadCopiesTest.cpp - offload's copies and host arena on the CPU -===//
//
// offload = optimizer on the CPU backend (lib/cpu/HostCopies.cpp,
// lib/cpu/HostArena.cpp): a copy between the arena and the host arena is a
// copy in host memory, done when it returns, yet its handle is pending until
// fsdprt_wait like a collective's, so the step's bookkeeping (every handle
// waited for, pendingCollectives() 0 after the step) is the CUDA target's.
// Copies need no MPI: these tests do not start it.
//
//===----------------------------------------------------------------------===//

#include "abi/Arena.h"
#include "abi/Collectives.h"
#include "fsdprt/fsdprt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace fsdprt;
using testing::ExitedWithCode;
using testing::HasSubstr;

namespace {

TEST(HostCopies, CopyToHostCopiesAtOnceAndWaitReleasesTheHandle) {
  std::vector<float> device = {1, 2, 3, 4}, host(4, 0);
  int before = pendingCollectives();
  int32_t handle = fsdprt_copy_to_host_start(host.data(), device.data(), 16);
  EXPECT_GE(handle, 0);
  EXPECT_LT(handle, kMaxPendingCollectives);
  // Done before the wait: the bytes are there already.
  EXPECT_EQ(host, device);
  EXPECT_EQ(pendingCollectives(), before + 1);
  fsdprt_wait(handle);
  EXPECT_EQ(pendingCollectives(), before);
}

TEST(HostCopies, CopyToDeviceCopiesAtOnceAndWaitReleasesTheHandle) {
  std::vector<uint16_t> host = {0x3f80, 0x4000, 0x4040}, device(3, 0);
  int before = pendingCollectives();
  int32_t handle = fsdprt_copy_to_device_start(device.data(), host.data(), 6);
  EXPECT_EQ(device, host);
  EXPECT_EQ(pendingCollectives(), before + 1);
  fsdprt_wait(handle);
  EXPECT_EQ(pendingCollectives(), before);
}

TEST(HostCopies, CopiesCopyExactlyTheirBytes) {
  std::vector<uint8_t> from = {1, 2, 3, 4, 5, 6, 7, 8}, to(8, 0xEE);
  fsdprt_wait(fsdprt_copy_to_host_start(to.data() + 2, from.data() + 1, 3));
  EXPECT_EQ(to, (std::vector<uint8_t>{0xEE, 0xEE, 2, 3, 4, 0xEE, 0xEE, 0xEE}));
  fsdprt_wait(fsdprt_copy_to_device_start(to.data(), from.data() + 5, 2));
  EXPECT_EQ(to, (std::vector<uint8_t>{6, 7, 2, 3, 4, 0xEE, 0xEE, 0xEE}));
}

// Copies and collectives share one table of handles: a step may have the
// gradient's copy to the host, the update's copy back and a reduction
// pending at once, and wait for them in any order.
TEST(HostCopies, CopiesAndCollectivesShareTheHandleTable) {
  float a = 1, b = 0, c = 0;
  int before = pendingCollectives();
  int32_t toHost = fsdprt_copy_to_host_start(&b, &a, 4);
  int32_t toDevice = fsdprt_copy_to_device_start(&c, &b, 4);
  EXPECT_NE(toHost, toDevice);
  EXPECT_EQ(pendingCollectives(), before + 2);
  fsdprt_wait(toDevice);
  EXPECT_EQ(pendingCollectives(), before + 1);
  fsdprt_wait(toHost);
  EXPECT_EQ(pendingCollectives(), before);
  EXPECT_EQ(c, 1.0f);
  // Waiting frees the slot: a handle is waited for once.
  EXPECT_EXIT(fsdprt_wait(toHost), ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_wait: handle " + std::to_string(toHost) +
                        " is not a pending collective"));
}

TEST(HostCopies, ZeroBytesCopyNothingAndStillGiveAHandle) {
  uint8_t from = 1, to = 2;
  int before = pendingCollectives();
  int32_t toHost = fsdprt_copy_to_host_start(&to, &from, 0);
  int32_t toDevice = fsdprt_copy_to_device_start(&to, &from, 0);
  EXPECT_EQ(to, 2);
  EXPECT_EQ(pendingCollectives(), before + 2);
  fsdprt_wait(toHost);
  fsdprt_wait(toDevice);
  EXPECT_EQ(pendingCollectives(), before);
  // An empty copy reads nothing: no buffer is needed.
  fsdprt_wait(fsdprt_copy_to_host_start(nullptr, nullptr, 0));
  EXPECT_EQ(pendingCollectives(), before);
}

TEST(HostCopies, ANegativeSizeIsAnError) {
  float a = 1, b = 0;
  EXPECT_EXIT(fsdprt_copy_to_host_start(&b, &a, -4), ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_copy_to_host_start: negative size -4\n"));
  EXPECT_EXIT(fsdprt_copy_to_device_start(&b, &a, -1), ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_copy_to_device_start: negative size -1\n"));
}

TEST(HostCopies, TooManyPending) {
  float value = 0;
  EXPECT_EXIT(
      {
        for (int i = 0; i <= kMaxPendingCollectives; ++i)
          fsdprt_copy_to_device_start(&value, &value, 4);
      },
      ExitedWithCode(1),
      HasSubstr("trainer: error: fsdprt_copy_to_device_start: more than 256 collectives pending"));
}

TEST(HostArena, EmptyWithoutOffload) {
  HostArena arena(0);
  EXPECT_EQ(arena.data(), nullptr);
}

TEST(HostArena, ZeroFilledAnd64ByteAligned) {
  // A size that is not a multiple of the alignment; the second arena likely
  // gets the first one's memory back from the allocator, written all over.
  for (int round = 0; round < 2; ++round) {
    HostArena arena(100);
    ASSERT_NE(arena.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(arena.data()) % 64, 0u);
    for (size_t i = 0; i < 100; ++i)
      ASSERT_EQ(arena.data()[i], 0) << "byte " << i << " in round " << round;
    std::memset(arena.data(), 0xA5, 100);
  }
  HostArena large(1 << 20);
  ASSERT_NE(large.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large.data()) % 64, 0u);
  EXPECT_EQ(large.data()[0], 0);
  EXPECT_EQ(large.data()[(1 << 20) - 1], 0);
}

} // namespace
