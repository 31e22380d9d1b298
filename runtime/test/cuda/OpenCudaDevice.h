//===- OpenCudaDevice.h - Tests with the CUDA device open -------*- C++ -*-===//
//
// Fixtures for the CUDA backend's tests: the device is open on the fake CUDA
// runtime (FakeCuda.h) for each test and closed after it (and, for a step's
// collectives, connected on one rank), and the log starts empty. Opening allocated cuBLASLt's workspace, device1: the test's first
// allocation is device2.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TEST_CUDA_OPENCUDADEVICE_H
#define FSDPRT_TEST_CUDA_OPENCUDADEVICE_H

#include "abi/Device.h"
#include "cuda/FakeCuda.h"
#include "fsdprt/fsdprt.h"
#include "trainer/Ranks.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

class OpenCudaDevice : public testing::Test {
protected:
  void SetUp() override {
    fake_cuda::reset();
    fsdprt::openDevice();
    streams = fake_cuda::results("cudaStreamCreateWithPriority");
    ASSERT_EQ(streams.size(), 5u);
    fake_cuda::reset();
  }
  void TearDown() override { fsdprt::closeDevice(); }

  /// The fake's names of the streams FSDPRT_STREAM_COMPUTE, _ALL_GATHER,
  /// _REDUCE_SCATTER, _COPY and _TENSOR.
  const std::string &stream(int32_t id) const { return streams[static_cast<size_t>(id)]; }

  std::vector<std::string> streams;
};

/// The device open on one rank with its process groups connected: what a
/// step's collectives need.
class OneRankCudaDevice : public OpenCudaDevice {
protected:
  void SetUp() override {
    fsdprt::startMpi();
    fsdprt::RankPlace place = fsdprt::setUpGroups(1);
    ASSERT_EQ(place.worldSize, 1);
    OpenCudaDevice::SetUp();
    fsdprt::connectDevice(place);
    fake_cuda::reset();
  }
};

#endif // FSDPRT_TEST_CUDA_OPENCUDADEVICE_H
