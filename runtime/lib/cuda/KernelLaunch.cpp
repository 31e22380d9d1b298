//===- KernelLaunch.cpp - What MLIR's GPU lowering calls ------------------===//
//
// mgpuModuleLoad, mgpuModuleGetFunction, mgpuLaunchKernel and the rest of
// what MLIR's gpu.launch_func translation emits calls to (fsdprt.h;
// docs/Runtime.md, section 7), on the CUDA runtime API.
//
// mgpuModuleLoad runs in a global constructor, before main and before the
// trainer has chosen a device (or found there is none): it only records the
// fatbin. The first mgpuModuleGetFunction loads it (cudaLibraryLoadData) into
// the chosen device, and each kernel is looked up once and kept, so that a
// launch does not query the driver. mgpuModuleUnload runs in a global
// destructor, possibly while CUDA tears down or when it never started: it
// only calls CUDA while the device is open (closeDevice has unloaded every
// module by the end of a run).
//
//===----------------------------------------------------------------------===//

#include "abi/Error.h"
#include "cuda/CudaCheck.h"
#include "cuda/CudaDevice.h"
#include "fsdprt/fsdprt.h"

#include <map>
#include <string>

namespace fsdprt {

namespace {

/// A kernel of a loaded module; mgpuModuleGetFunction hands out its address.
struct Kernel {
  std::string name;
  cudaKernel_t handle = nullptr;
  /// The dynamic shared memory the kernel has been allowed so far.
  int32_t allowedSharedBytes = 0;
};

/// What mgpuModuleLoad recorded: the fatbin, and once loaded, its library and
/// the kernels looked up in it.
struct Module {
  const void *fatbin = nullptr;
  cudaLibrary_t library = nullptr;
  std::map<std::string, Kernel> kernels;
  Module *next = nullptr;
};

/// Every recorded module. A plain pointer, not a container: the global
/// destructors that unload modules may run after this file's own.
Module *modules = nullptr;

void unload(Module &module) {
  if (module.library)
    FSDPRT_CUDA_CHECK(cudaLibraryUnload(module.library));
  module.library = nullptr;
  module.kernels.clear();
}

} // namespace

void unloadModules() {
  for (Module *module = modules; module; module = module->next)
    unload(*module);
}

} // namespace fsdprt

using namespace fsdprt;

extern "C" void *mgpuModuleLoad(void *data, size_t) {
  // The fatbin's header gives its size: cudaLibraryLoadData does not need it.
  modules = new Module{data, nullptr, {}, modules};
  return modules;
}

extern "C" void mgpuModuleUnload(void *module) {
  auto *recorded = static_cast<Module *>(module);
  if (deviceOpen())
    unload(*recorded);
  for (Module **link = &modules; *link; link = &(*link)->next)
    if (*link == recorded) {
      *link = recorded->next;
      break;
    }
  delete recorded;
}

extern "C" void *mgpuModuleGetFunction(void *module, const char *name) {
  openedDevice("mgpuModuleGetFunction");
  auto *recorded = static_cast<Module *>(module);
  if (!recorded->library)
    FSDPRT_CUDA_CHECK(cudaLibraryLoadData(&recorded->library, recorded->fatbin, nullptr, nullptr,
                                          0, nullptr, nullptr, 0));
  auto [entry, added] = recorded->kernels.try_emplace(name);
  Kernel &kernel = entry->second;
  if (added) {
    kernel.name = name;
    FSDPRT_CUDA_CHECK(cudaLibraryGetKernel(&kernel.handle, recorded->library, name));
  }
  return &kernel;
}

extern "C" void mgpuLaunchKernel(void *function, intptr_t grid_x, intptr_t grid_y,
                                 intptr_t grid_z, intptr_t block_x, intptr_t block_y,
                                 intptr_t block_z, int32_t smem, void *stream, void **params,
                                 void **extra, size_t) {
  // The parameter count is the kernel's own: cudaLaunchKernel does not need it.
  auto &kernel = *static_cast<Kernel *>(function);
  if (extra)
    fatal("mgpuLaunchKernel: kernel '" + kernel.name +
          "': launch arguments in 'extra' are not supported (pass them in 'params')");
  if (smem > kernel.allowedSharedBytes) {
    int limit = openedDevice("mgpuLaunchKernel").maxDynamicSharedBytes;
    if (smem > limit)
      fatal("mgpuLaunchKernel: kernel '" + kernel.name + "' asks for " + std::to_string(smem) +
            " bytes of dynamic shared memory, more than the " + std::to_string(limit) +
            " bytes a block may have on this device");
    FSDPRT_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void *>(kernel.handle),
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    kernel.allowedSharedBytes = smem;
  }
  dim3 grid(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y),
            static_cast<unsigned>(grid_z));
  dim3 block(static_cast<unsigned>(block_x), static_cast<unsigned>(block_y),
             static_cast<unsigned>(block_z));
  FSDPRT_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void *>(kernel.handle), grid, block,
                                     params, static_cast<size_t>(smem),
                                     static_cast<cudaStream_t>(stream)));
  afterKernel(kernel.name, static_cast<cudaStream_t>(stream));
}

extern "C" void *mgpuStreamCreate(void) {
  cudaStream_t compute = deviceStream("mgpuStreamCreate", FSDPRT_STREAM_COMPUTE);
  cudaStream_t stream = nullptr;
  FSDPRT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // A launch on this stream must see what the step did before it.
  cudaEvent_t before = nullptr;
  FSDPRT_CUDA_CHECK(cudaEventCreateWithFlags(&before, cudaEventDisableTiming));
  FSDPRT_CUDA_CHECK(cudaEventRecord(before, compute));
  FSDPRT_CUDA_CHECK(cudaStreamWaitEvent(stream, before, 0));
  FSDPRT_CUDA_CHECK(cudaEventDestroy(before));
  return stream;
}

extern "C" void mgpuStreamSynchronize(void *stream) {
  FSDPRT_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

extern "C" void mgpuStreamDestroy(void *stream) {
  FSDPRT_CUDA_CHECK(cudaStreamDestroy(static_cast<cudaStream_t>(stream)));
}
