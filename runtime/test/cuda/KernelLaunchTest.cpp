//===- KernelLaunchTest.cpp - The mgpu* entry points on the fake runtime --===//
//
// mgpuModuleLoad must not touch CUDA (it runs before main, before a device is
// chosen); the module is loaded at the first mgpuModuleGetFunction, once,
// and each kernel is looked up once; launches pass their arguments through.
//
//===----------------------------------------------------------------------===//

#include "abi/CollectiveTimeout.h"
#include "abi/Collectives.h"
#include "abi/Device.h"
#include "cuda/FakeCuda.h"
#include "cuda/OpenCudaDevice.h"
#include "fsdprt/fsdprt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace fsdprt;
using testing::ElementsAre;
using testing::ExitedWithCode;
using testing::HasSubstr;

namespace {

char fatbinA[] = "FATBIN-A";

TEST(KernelLaunch, LoadingAndUnloadingAModuleBeforeTheDeviceTouchesNoCuda) {
  fake_cuda::reset();
  void *module = mgpuModuleLoad(fatbinA, sizeof(fatbinA));
  EXPECT_NE(module, nullptr);
  mgpuModuleUnload(module);
  EXPECT_TRUE(fake_cuda::calls().empty());
}

TEST(KernelLaunchError, AKernelBeforeTheDevice) {
  void *module = mgpuModuleLoad(fatbinA, sizeof(fatbinA));
  EXPECT_EXIT(mgpuModuleGetFunction(module, "k1"), ExitedWithCode(1),
              HasSubstr("trainer: error: mgpuModuleGetFunction: no CUDA device is open (the "
                        "trainer chooses one once MPI runs, before the first step)"));
  mgpuModuleUnload(module);
}

class KernelLaunchOnDevice : public OpenCudaDevice {
protected:
  void SetUp() override {
    module = mgpuModuleLoad(fatbinA, sizeof(fatbinA));
    OpenCudaDevice::SetUp();
  }
  void TearDown() override {
    OpenCudaDevice::TearDown();
    mgpuModuleUnload(module);
  }
  void *module = nullptr;
};

TEST_F(KernelLaunchOnDevice, LoadsTheModuleOnceAndLooksEachKernelUpOnce) {
  void *k1 = mgpuModuleGetFunction(module, "k1");
  EXPECT_EQ(mgpuModuleGetFunction(module, "k1"), k1);
  void *k2 = mgpuModuleGetFunction(module, "k2");
  EXPECT_NE(k2, k1);
  std::vector<std::string> library = fake_cuda::results("cudaLibraryLoadData");
  ASSERT_EQ(library.size(), 1u);
  std::vector<std::string> kernels = fake_cuda::results("cudaLibraryGetKernel");
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cudaLibraryLoadData(FATBIN-A) -> " + library[0],
                          "cudaLibraryGetKernel(" + library[0] + ", k1) -> " + kernels[0],
                          "cudaLibraryGetKernel(" + library[0] + ", k2) -> " + kernels[1]));
}

TEST_F(KernelLaunchOnDevice, LaunchPassesItsArguments) {
  void *k1 = mgpuModuleGetFunction(module, "k1");
  std::string kernel = fake_cuda::results("cudaLibraryGetKernel").at(0);
  fake_cuda::reset();
  float x = 1.0f;
  void *params[] = {&x};
  mgpuLaunchKernel(k1, 2, 3, 4, 32, 1, 1, 0, fsdprt_stream(FSDPRT_STREAM_COMPUTE), params,
                   nullptr, 1);
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cudaLaunchKernel(" + kernel + ", grid 2x3x4, block 32x1x1, smem 0, " +
                          stream(FSDPRT_STREAM_COMPUTE) + ")"));
  EXPECT_EQ(fake_cuda::lastLaunchParams(), params);
}

TEST_F(KernelLaunchOnDevice, DynamicSharedMemoryIsAllowedWhenAKernelFirstNeedsIt) {
  void *k1 = mgpuModuleGetFunction(module, "k1");
  std::string kernel = fake_cuda::results("cudaLibraryGetKernel").at(0);
  void *compute = fsdprt_stream(FSDPRT_STREAM_COMPUTE);
  for (int32_t smem : {65536, 65536, 1024, 70000})
    mgpuLaunchKernel(k1, 1, 1, 1, 1, 1, 1, smem, compute, nullptr, nullptr, 0);
  EXPECT_THAT(fake_cuda::callsTo("cudaFuncSetAttribute"),
              ElementsAre("cudaFuncSetAttribute(" + kernel + ", max dynamic shared memory, 65536)",
                          "cudaFuncSetAttribute(" + kernel + ", max dynamic shared memory, 70000)"));
  EXPECT_EQ(fake_cuda::callsTo("cudaLaunchKernel").size(), 4u);
}

TEST_F(KernelLaunchOnDevice, MoreSharedMemoryThanTheDeviceHas) {
  void *k1 = mgpuModuleGetFunction(module, "k1");
  EXPECT_EXIT(mgpuLaunchKernel(k1, 1, 1, 1, 1, 1, 1, 200000, nullptr, nullptr, nullptr, 0),
              ExitedWithCode(1),
              HasSubstr("trainer: error: mgpuLaunchKernel: kernel 'k1' asks for 200000 bytes of "
                        "dynamic shared memory, more than the 101376 bytes a block may have on "
                        "this device"));
}

TEST_F(KernelLaunchOnDevice, ExtraArgumentsAreRefused) {
  void *k1 = mgpuModuleGetFunction(module, "k1");
  void *extra[] = {nullptr};
  EXPECT_EXIT(mgpuLaunchKernel(k1, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, extra, 0),
              ExitedWithCode(1),
              HasSubstr("trainer: error: mgpuLaunchKernel: kernel 'k1': launch arguments in "
                        "'extra' are not supported (pass them in 'params')"));
}

TEST_F(KernelLaunchOnDevice, ClosingTheDeviceUnloadsModulesWhichLoadAgainOnTheNextRun) {
  mgpuModuleGetFunction(module, "k1");
  std::string library = fake_cuda::results("cudaLibraryLoadData").at(0);
  closeDevice();
  EXPECT_THAT(fake_cuda::callsTo("cudaLibraryUnload"),
              ElementsAre("cudaLibraryUnload(" + library + ")"));
  fake_cuda::reset();
  openDevice();
  mgpuModuleGetFunction(module, "k1");
  EXPECT_EQ(fake_cuda::callsTo("cudaLibraryLoadData").size(), 1u);
  EXPECT_EQ(fake_cuda::callsTo("cudaLibraryGetKernel").size(), 1u);
}

TEST_F(KernelLaunchOnDevice, UnloadingAModuleWhileTheDeviceIsOpenReleasesIt) {
  void *other = mgpuModuleLoad(fatbinA, sizeof(fatbinA));
  mgpuModuleGetFunction(other, "k1");
  std::string library = fake_cuda::results("cudaLibraryLoadData").at(0);
  mgpuModuleUnload(other);
  EXPECT_THAT(fake_cuda::callsTo("cudaLibraryUnload"),
              ElementsAre("cudaLibraryUnload(" + library + ")"));
  // The other module is still there, and still loads.
  mgpuModuleGetFunction(module, "k1");
  EXPECT_EQ(fake_cuda::callsTo("cudaLibraryLoadData").size(), 2u);
}

TEST_F(KernelLaunchOnDevice, ALaunchWithoutAStreamSeesTheStepsWorkSoFar) {
  void *launchStream = mgpuStreamCreate();
  std::vector<std::string> created = fake_cuda::results("cudaStreamCreateWithFlags");
  std::vector<std::string> events = fake_cuda::results("cudaEventCreateWithFlags");
  ASSERT_EQ(created.size(), 1u);
  ASSERT_EQ(events.size(), 1u);
  mgpuStreamSynchronize(launchStream);
  mgpuStreamDestroy(launchStream);
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cudaStreamCreateWithFlags(non-blocking) -> " + created[0],
                          "cudaEventCreateWithFlags(no timing) -> " + events[0],
                          "cudaEventRecord(" + events[0] + ", " + stream(FSDPRT_STREAM_COMPUTE) +
                              ")",
                          "cudaStreamWaitEvent(" + created[0] + ", " + events[0] + ")",
                          "cudaEventDestroy(" + events[0] + ")",
                          "cudaStreamSynchronize(" + created[0] + ")",
                          "cudaStreamDestroy(" + created[0] + ")"));
}

// A kernel that faults is reported by whatever waits for the device next:
// without --debug-sync, that call's error says which step and which work the
// device had got to; with it, the launch itself is waited for and named,
// with the last collective started.
class KernelFault : public KernelLaunchOnDevice {
protected:
  void SetUp() override {
    KernelLaunchOnDevice::SetUp();
    setCurrentStep(7, false);
    beginStepCollectives(sequence);
    nextCollectiveUnit("all_gather");
    beginStepKernels(origins);
  }
  void TearDown() override {
    setDebugSync(false);
    KernelLaunchOnDevice::TearDown();
  }
  void launchFaulting(const char *name) {
    void *kernel = mgpuModuleGetFunction(module, name);
    fake_cuda::faultNextLaunch(cudaErrorIllegalAddress);
    mgpuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, fsdprt_stream(FSDPRT_STREAM_COMPUTE), nullptr,
                     nullptr, 0);
  }
  std::vector<CollectiveSpec> sequence = {{"all_gather", "layers.0"}};
  KernelOrigins origins = parseKernelOrigins("k0\tmodel.mlir:1:1\nk1\tmodel.mlir:3:5, model.mlir:4:7\n");
};

TEST_F(KernelFault, IsNamedByTheNextWaitWithItsStep) {
  EXPECT_EXIT(
      {
        launchFaulting("k1");
        mgpuModuleGetFunction(module, "k2"); // host work: nothing waits
        finishStep();
      },
      ExitedWithCode(1),
      "^trainer: error: cudaDeviceSynchronize\\(\\): an illegal memory access was encountered "
      "\\(step 7, after kernel 'k1' \\(model.mlir:3:5, model.mlir:4:7\\) was enqueued "
      "\\(--debug-sync names the work that failed\\)\\)\n$");
}

TEST_F(KernelFault, IsNamedAtItsLaunchWithDebugSync) {
  setDebugSync(true);
  EXPECT_EXIT(launchFaulting("k1"), ExitedWithCode(1),
              "^trainer: error: step 7: kernel 'k1' \\(model.mlir:3:5, model.mlir:4:7\\) failed "
              "on the device: an illegal memory access was encountered \\(--debug-sync; the "
              "last collective started: the all-gather of unit 'layers.0'\\)\n$");
  // Work that does not fail goes on, each launch waited for.
  void *kernel = mgpuModuleGetFunction(module, "k2");
  fake_cuda::reset();
  mgpuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, fsdprt_stream(FSDPRT_STREAM_COMPUTE), nullptr,
                   nullptr, 0);
  EXPECT_THAT(fake_cuda::callsTo("cudaStreamSynchronize"),
              ElementsAre("cudaStreamSynchronize(" + stream(FSDPRT_STREAM_COMPUTE) + ")"));
}

} // namespace
