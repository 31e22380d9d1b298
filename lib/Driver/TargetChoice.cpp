//===- TargetChoice.cpp - What the flags say of the target ----------------===//

#include "TargetChoice.h"

#include "Diagnostics.h"
#include "TestPasses.h"
#include "fsdp/Codegen/Common/Passes.h"
#include "fsdp/IR/FSDPOps.h"

#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;

namespace {

/// Whether the model computes, stores or reduces anything in bf16.
bool usesBF16(ModuleOp module) {
  auto plan = module->getAttrOfType<fsdp::PlanAttr>(fsdp::FSDPDialect::getPlanAttrName());
  if (plan &&
      (plan.getParamDtype() == fsdp::DType::BF16 || plan.getReduceDtype() == fsdp::DType::BF16))
    return true;
  return llvm::any_of(module.getOps<fsdp::ParamOp>(), [](fsdp::ParamOp param) {
    return param.getTensorType().getElementType().isBF16();
  });
}

/// Whether `chip` reads as an NVIDIA architecture: sm_ and a number, with
/// an `a` or `f` suffix allowed.
bool isArchitecture(StringRef chip) {
  StringRef version = chip;
  return version.consume_front("sm_") && !version.empty() &&
         llvm::all_of(version.rtrim("af"), llvm::isDigit) && llvm::isDigit(version.front());
}

/// --test-launch-summary: the step's kernels and launches printed, with sizes
/// folded to constants, instead of the device code.
class LaunchSummaryTarget : public fsdp::CUDAPipelineTarget {
public:
  using CUDAPipelineTarget::CUDAPipelineTarget;
  void addDeviceCode(OpPassManager &pm) const override {
    pm.addPass(mlir::createCanonicalizerPass());
    pm.addPass(fsdp::test::createTestLaunchSummaryPass());
  }
};

/// --test-kernels-on-cpu: each launch run as loops over its blocks and
/// threads, on the host, to check the kernels without a GPU.
class KernelsOnCPUTarget : public fsdp::CUDAPipelineTarget {
public:
  using CUDAPipelineTarget::CUDAPipelineTarget;
  void addDeviceCode(OpPassManager &pm) const override {
    pm.addPass(fsdp::test::createTestLaunchToLoopsPass());
    // Each launch's loops a function of its own, as the CPU target's kernels:
    // LLVM's time then grows with the distinct kernels, not with the square of
    // the step (a GPT with recompute and micro-batches: 23 s to compile as one
    // function, 4.2 s outlined).
    if (options.outlineKernels) {
      pm.addPass(fsdp::createFSDPOutlineKernelsPass());
      pm.addPass(fsdp::createFSDPSplitStepPass());
    }
    fsdp::buildHostLLVMPipeline(pm);
  }
};

} // namespace

FailureOr<SmallVector<int64_t>> mlir::fsdp::parseGrid(const CompilerOptions &options) {
  SmallVector<int64_t> grid;
  for (StringRef size : llvm::split(options.grid, ',')) {
    int64_t value;
    if (size.trim().getAsInteger(10, value) || value < 1) {
      (void)fail("--grid=" + options.grid + ": expected N or R,S with positive sizes");
      return failure();
    }
    grid.push_back(value);
  }
  return grid;
}

mlir::fsdp::CPUTarget mlir::fsdp::cpuTarget(const CompilerOptions &options) {
  CPUTarget machine;
  machine.cpu = options.cpu;
  machine.features = options.cpuFeatures;
  machine.optLevel = options.optLevel == 0   ? llvm::CodeGenOptLevel::None
                     : options.optLevel == 1 ? llvm::CodeGenOptLevel::Less
                     : options.optLevel == 2 ? llvm::CodeGenOptLevel::Default
                                             : llvm::CodeGenOptLevel::Aggressive;
  return machine;
}

FailureOr<fsdp::CUDAPipelineOptions> mlir::fsdp::cudaOptions(const CompilerOptions &options,
                                                             const RuntimeLinkage &runtime) {
  fsdp::CUDAPipelineOptions cuda;
  if (!options.gpuArchs.empty())
    cuda.chips.assign(options.gpuArchs.begin(), options.gpuArchs.end());
  for (const std::string &chip : cuda.chips)
    if (!isArchitecture(chip)) {
      (void)fail("--gpu-arch=" + chip +
                 ": expected an NVIDIA architecture such as sm_80 or "
                 "sm_90a");
      return failure();
    }
  if (options.gpuBlockSize < 1 || options.gpuBlockSize > 1024) {
    (void)fail("--gpu-block-size=" + llvm::Twine(options.gpuBlockSize) +
               ": a CUDA block has 1 to 1024 threads");
    return failure();
  }
  cuda.blockSize = options.gpuBlockSize;
  cuda.outlineKernels = options.outlineKernels;
  cuda.toolkit = options.cudaPath.empty() ? runtime.cudaToolkit : options.cudaPath;
  cuda.ptx = options.emit == Emit::PTX;
  // Neither runs the toolkit.
  if (options.kernelsOnCPU || options.launchSummary)
    return cuda;
  for (const char *tool : {"ptxas", "fatbinary"}) {
    SmallString<128> path(cuda.toolkit);
    llvm::sys::path::append(path, "bin", tool);
    if (!llvm::sys::fs::can_execute(path)) {
      (void)fail("--target=cuda needs the CUDA toolkit's " + llvm::Twine(tool) + ", not found at " +
                 path + " (set --cuda-path)");
      return failure();
    }
  }
  return cuda;
}

LogicalResult mlir::fsdp::checkBF16Archs(ModuleOp module, ArrayRef<std::string> chips) {
  if (!usesBF16(module))
    return success();
  for (StringRef chip : chips) {
    unsigned version = 0;
    if (!chip.drop_front(3).take_while(llvm::isDigit).getAsInteger(10, version) && version < 80)
      return mlir::emitError(module.getLoc(),
                             "the plan computes in bf16, which --target=cuda supports on "
                             "sm_80 or newer; --gpu-arch lists ")
             << chip;
  }
  return success();
}

std::unique_ptr<fsdp::PipelineTarget>
mlir::fsdp::pipelineTarget(const CompilerOptions &options,
                           const std::optional<fsdp::CUDAPipelineOptions> &cuda,
                           bool cpuBf16Products) {
  if (options.target == Target::CPU)
    return std::make_unique<fsdp::CPUPipelineTarget>(options.outlineKernels,
                                                     options.fusesAttention(Target::CPU),
                                                     options.widensBf16Products(cpuBf16Products));
  fsdp::CUDAPipelineOptions chosen = cuda.value_or(fsdp::CUDAPipelineOptions());
  if (options.launchSummary)
    return std::make_unique<LaunchSummaryTarget>(chosen);
  if (options.kernelsOnCPU)
    return std::make_unique<KernelsOnCPUTarget>(chosen);
  return std::make_unique<fsdp::CUDAPipelineTarget>(chosen);
}
