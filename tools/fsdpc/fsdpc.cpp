//===- fsdpc.cpp - the FSDP-MLIR compiler driver --------------------------===//
//
// model.mlir -> training step (MLIR pipeline) -> LLVM IR -> native object ->
// trainer executable linked with the runtime, all in one process except the
// final link, which the system's C++ driver performs.
//
//===----------------------------------------------------------------------===//

#include "CPUTarget.h"
#include "EvalStep.h"
#include "ParallelCodeGen.h"
#include "RuntimeLinkage.h"

#include "fsdp/Conversion/RuntimeABI.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/Support/JSON.h"

#include "fsdp/Conversion/Passes.h"
#include "fsdp/IR/FSDPOps.h"
#include "fsdp/Pipelines/CPUPipeline.h"
#include "fsdp/Pipelines/CUDAPipeline.h"
#include "fsdp/Planning/FitSearch.h"
#include "fsdp/Planning/Pictures.h"
#include "fsdp/Utils/ByteCounts.h"
#include "fsdp/Transforms/Passes.h"
#include "TestPasses.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"

#include <thread>

using namespace mlir;
namespace cl = llvm::cl;

namespace {

enum class Emit { MLIR, LLVM, Object, Executable, PTX };
enum class Target { CPU, CUDA };

cl::OptionCategory fsdpcCategory("fsdpc options");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.mlir>"), cl::Required,
                               cl::cat(fsdpcCategory));
cl::opt<std::string> outputFile("o", cl::desc("Output file (default: trainer)"),
                                cl::value_desc("file"), cl::init("trainer"),
                                cl::cat(fsdpcCategory));
cl::opt<Target> target("target", cl::desc("Where the trainer runs"),
                       cl::values(clEnumValN(Target::CPU, "cpu", "CPUs, MPI between ranks"),
                                  clEnumValN(Target::CUDA, "cuda",
                                             "NVIDIA GPUs, NCCL between ranks")),
                       cl::init(Target::CPU), cl::cat(fsdpcCategory));
cl::opt<Emit> emit("emit", cl::desc("What to write"),
                   cl::values(clEnumValN(Emit::MLIR, "mlir", "the lowered MLIR"),
                              clEnumValN(Emit::LLVM, "llvm", "the optimised LLVM IR"),
                              clEnumValN(Emit::Object, "obj", "the object file"),
                              clEnumValN(Emit::Executable, "exe", "the trainer"),
                              clEnumValN(Emit::PTX, "ptx",
                                         "the kernels' PTX, each architecture's (--target=cuda)")),
                   cl::init(Emit::Executable), cl::cat(fsdpcCategory));
cl::opt<std::string> gridOverride(
    "grid", cl::desc("Compile for this device grid instead of the plan's: N or R,S"),
    cl::value_desc("N|R,S"), cl::cat(fsdpcCategory));
cl::opt<std::string> report(
    "report", cl::desc("Print each rank's memory and traffic (table or json) and stop"),
    cl::value_desc("table|json"), cl::ValueOptional, cl::cat(fsdpcCategory));
cl::opt<std::string> deviceMemory(
    "device-memory",
    cl::desc("Memory of one rank's device (a GPU; for --target=cpu the host memory a rank may "
             "use), e.g. 80GB or 79.5GiB: a plan that needs more is an error listing the "
             "changes that fit (default: the plan's device_memory)"),
    cl::value_desc("size"), cl::cat(fsdpcCategory));
cl::opt<bool> fitPlan("fit",
                      cl::desc("Over the memory budget, compile the best plan that fits "
                               "instead, and say which"),
                      cl::cat(fsdpcCategory));
cl::opt<std::string> deviceProfile(
    "device-profile",
    cl::desc("The device the step time is predicted for: h100-sxm, cpu or a profile file "
             "(default: h100-sxm for --target=cuda, cpu for --target=cpu)"),
    cl::value_desc("name|file"), cl::cat(fsdpcCategory));
cl::opt<std::string> runtimeMemory(
    "runtime-memory",
    cl::desc("Memory the runtime allocates per rank beside the arena (default: the device "
             "profile's: CUDA context, NCCL buffers, cuBLAS workspace)"),
    cl::value_desc("size"), cl::cat(fsdpcCategory));
cl::opt<std::string> timelineFile(
    "timeline",
    cl::desc("Write the predicted step of a rank (its streams, and its memory as counters) as "
             "a Chrome trace: open it in Perfetto or chrome://tracing"),
    cl::value_desc("file.json"), cl::cat(fsdpcCategory));
cl::opt<std::string> memorySvgFile(
    "memory-svg",
    cl::desc("Draw a rank's memory over the predicted step (by kind, with the planned arena "
             "and the budget) as an SVG"),
    cl::value_desc("file.svg"), cl::cat(fsdpcCategory));
cl::opt<std::string> measuredTraceFile(
    "measured-trace",
    cl::desc("With --memory-svg: also draw the planned arena's high-water mark and the marks "
             "the trainer measured at the step's unit boundaries, read from its --trace file "
             "(the same compiled step)"),
    cl::value_desc("file.json"), cl::cat(fsdpcCategory));
cl::list<std::string> gpuArchs(
    "gpu-arch", cl::desc("GPU architectures of --target=cuda (default sm_80,sm_90)"),
    cl::value_desc("sm_XY,..."), cl::CommaSeparated, cl::cat(fsdpcCategory));
cl::opt<std::string> cudaPath("cuda-path",
                              cl::desc("The CUDA toolkit (ptxas, fatbinary, libdevice)"),
                              cl::value_desc("dir"), cl::init(FSDP_CUDA_TOOLKIT),
                              cl::cat(fsdpcCategory));
cl::opt<int64_t> gpuBlockSize("gpu-block-size",
                              cl::desc("Threads per block of the generated kernels (1-1024)"),
                              cl::init(256), cl::Hidden, cl::cat(fsdpcCategory));
cl::opt<bool> kernelsOnCPU(
    "test-kernels-on-cpu",
    cl::desc("Test only: compile --target=cuda's kernels as CPU loops and link with the "
             "CPU runtime, to check the kernels without a GPU"),
    cl::Hidden, cl::cat(fsdpcCategory));
cl::opt<bool> launchSummary(
    "test-launch-summary",
    cl::desc("Test only: with --target=cuda, print the step's kernels, its launches and those "
             "on a single thread, and stop"),
    cl::Hidden, cl::cat(fsdpcCategory));
cl::opt<bool> outlineKernels(
    "outline-kernels",
    cl::desc("Each compute op of the step in a function of its own, identical ones shared "
             "(default); =false compiles the step as one function, only to compare "
             "(LLVM's time then grows with the square of the model's depth)"),
    cl::init(true), cl::Hidden, cl::cat(fsdpcCategory));
cl::opt<std::string> cpu(
    "cpu",
    cl::desc("The x86-64 CPU the trainer is built for: native (this machine, the default) "
             "or any CPU LLVM knows, e.g. generic, x86-64-v2, x86-64-v3, sapphirerapids"),
    cl::value_desc("name"), cl::init("native"), cl::cat(fsdpcCategory));
cl::opt<std::string> cpuFeatures(
    "cpu-features", cl::desc("CPU features added to or removed from --cpu's, e.g. -avx512f"),
    cl::value_desc("+f,-g,..."), cl::cat(fsdpcCategory));
cl::opt<unsigned> jobs(
    "j",
    cl::desc("Optimise and generate code in N parts at once, on N threads (default: the "
             "machine's hardware threads)"),
    cl::value_desc("N"), cl::Prefix, cl::init(std::max(1u, std::thread::hardware_concurrency())),
    cl::cat(fsdpcCategory));
cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimisation level (0-3, default 3)"),
                           cl::Prefix, cl::init(3), cl::cat(fsdpcCategory));

/// Prints `fsdpc: error: ...` and returns failure.

LogicalResult fail(const llvm::Twine &message) {
  llvm::errs() << "fsdpc: error: " << message << "\n";
  return failure();
}

FailureOr<OwningOpRef<ModuleOp>> parseModel(MLIRContext &ctx, llvm::SourceMgr &sources) {
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(inputFile, &error);
  if (!file) {
    (void)fail(error);
    return failure();
  }
  sources.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sources, &ctx);
  if (!module)
    return failure();
  // A file without an explicit module parses into an implicit one at line 0;
  // the model's diagnostics (e.g. a missing plan) point at its first line.
  if (auto loc = llvm::dyn_cast<FileLineColLoc>((*module)->getLoc()); loc && loc.getLine() == 0)
    (*module)->setLoc(FileLineColLoc::get(&ctx, loc.getFilename(), 1, 1));
  return module;
}

/// The machine --cpu, --cpu-features and -O describe.
fsdpc::CPUTarget cpuTarget() {
  fsdpc::CPUTarget machine;
  machine.cpu = cpu;
  machine.features = cpuFeatures;
  machine.optLevel = optLevel == 0   ? llvm::CodeGenOptLevel::None
                     : optLevel == 1 ? llvm::CodeGenOptLevel::Less
                     : optLevel == 2 ? llvm::CodeGenOptLevel::Default
                                     : llvm::CodeGenOptLevel::Aggressive;
  return machine;
}

/// Links the trainer with the system's C++ driver, which knows the C++
/// runtime and start files the trainer's `main` needs.
LogicalResult linkTrainer(ArrayRef<std::string> objects, bool cudaRuntime) {
  llvm::ErrorOr<std::string> driver = llvm::sys::findProgramByName("c++");
  if (!driver)
    return fail("no C++ compiler driver (c++) on PATH to link the trainer");
  SmallVector<StringRef> args = {*driver};
  args.append(objects.begin(), objects.end());
  StringRef flags;
  if (cudaRuntime) {
    args.append({FSDP_RUNTIME_CUDA_MAIN_LIBRARY, FSDP_RUNTIME_CUDA_LIBRARY});
    flags = FSDP_RUNTIME_CUDA_LINK_FLAGS;
  } else {
    args.append({FSDP_RUNTIME_MAIN_LIBRARY, FSDP_RUNTIME_LIBRARY});
    flags = FSDP_RUNTIME_LINK_FLAGS;
  }
  for (StringRef flag : llvm::split(flags, ' '))
    if (!flag.empty())
      args.push_back(flag);
  args.append({"-o", outputFile});
  std::string error;
  int status = llvm::sys::ExecuteAndWait(*driver, args, std::nullopt, {}, 0, 0, &error);
  if (status != 0)
    return fail("linking " + outputFile + " failed" + (error.empty() ? "" : ": " + error));
  return success();
}

/// The sizes of --grid=N or --grid=R,S.
FailureOr<SmallVector<int64_t>> parseGrid() {
  SmallVector<int64_t> grid;
  for (StringRef size : llvm::split(gridOverride, ',')) {
    int64_t value;
    if (size.trim().getAsInteger(10, value) || value < 1) {
      (void)fail("--grid=" + gridOverride + ": expected N or R,S with positive sizes");
      return failure();
    }
    grid.push_back(value);
  }
  return grid;
}

/// The CUDA pipeline's options from the flags, checked.
FailureOr<fsdp::CUDAPipelineOptions> cudaOptions() {
  fsdp::CUDAPipelineOptions options;
  if (!gpuArchs.empty())
    options.chips.assign(gpuArchs.begin(), gpuArchs.end());
  for (const std::string &chip : options.chips) {
    StringRef version = StringRef(chip);
    if (!version.consume_front("sm_") || version.empty() ||
        !llvm::all_of(version.rtrim("af"), llvm::isDigit) || !llvm::isDigit(version.front())) {
      (void)fail("--gpu-arch=" + chip + ": expected an NVIDIA architecture such as sm_80 or "
                 "sm_90a");
      return failure();
    }
  }
  if (gpuBlockSize < 1 || gpuBlockSize > 1024) {
    (void)fail("--gpu-block-size=" + llvm::Twine(gpuBlockSize) +
               ": a CUDA block has 1 to 1024 threads");
    return failure();
  }
  options.blockSize = gpuBlockSize;
  options.outlineKernels = outlineKernels;
  options.toolkit = cudaPath;
  options.ptx = emit == Emit::PTX;
  // Neither runs the toolkit.
  if (kernelsOnCPU || launchSummary)
    return options;
  for (const char *tool : {"ptxas", "fatbinary"}) {
    SmallString<128> path(cudaPath.getValue());
    llvm::sys::path::append(path, "bin", tool);
    if (!llvm::sys::fs::can_execute(path)) {
      (void)fail("--target=cuda needs the CUDA toolkit's " + llvm::Twine(tool) + ", not found at " +
                 path + " (set --cuda-path)");
      return failure();
    }
  }
  return options;
}

/// The passes from the model to the LLVM dialect, for the target.
/// Whether the model computes, stores or reduces anything in bf16.
bool usesBF16(ModuleOp module) {
  auto plan = module->getAttrOfType<fsdp::PlanAttr>(fsdp::FSDPDialect::getPlanAttrName());
  if (plan && (plan.getParamDtype() == fsdp::DType::BF16 ||
               plan.getReduceDtype() == fsdp::DType::BF16))
    return true;
  return llvm::any_of(module.getOps<fsdp::ParamOp>(), [](fsdp::ParamOp param) {
    return param.getTensorType().getElementType().isBF16();
  });
}

/// bf16 arithmetic (conversions, cuBLAS products) needs sm_80 or newer: an
/// older architecture is refused here rather than by ptxas.
LogicalResult checkBF16Archs(ModuleOp module, ArrayRef<std::string> chips) {
  if (!usesBF16(module))
    return success();
  for (StringRef chip : chips) {
    unsigned version = 0;
    if (!chip.drop_front(3).take_while(llvm::isDigit).getAsInteger(10, version) &&
        version < 80)
      return mlir::emitError(module.getLoc(), "the plan computes in bf16, which --target=cuda supports "
                              "on sm_80 or newer; --gpu-arch lists ")
             << chip;
  }
  return success();
}

/// The passes after the buffer plan, from the step on buffers to the LLVM
/// dialect, for the target (`cuda`: its checked options).
void addTargetPipeline(PassManager &pm, const std::optional<fsdp::CUDAPipelineOptions> &cuda) {
  if (!cuda) {
    fsdp::buildCPULoweringPipeline(pm, outlineKernels);
    return;
  }
  fsdp::buildCUDAKernelLoweringPipeline(pm, *cuda);
  if (launchSummary) {
    // Sizes folded to constants.
    pm.addPass(mlir::createCanonicalizerPass());
    pm.addPass(fsdp::test::createTestLaunchSummaryPass());
    return;
  }
  if (!kernelsOnCPU) {
    fsdp::buildCUDADevicePipeline(pm, *cuda);
    return;
  }
  pm.addPass(fsdp::test::createTestLaunchToLoopsPass());
  fsdp::buildHostLLVMPipeline(pm);
}

/// Each step's PTX, per GPU module and architecture, into the output file.
LogicalResult writePtx(ArrayRef<ModuleOp> steps, ArrayRef<StringRef> names) {
  std::string error;
  auto out = openOutputFile(outputFile, &error);
  if (!out)
    return fail(error);
  for (auto [step, name] : llvm::zip(steps, names))
    for (auto binary : ModuleOp(step).getOps<gpu::BinaryOp>())
      for (Attribute attr : binary.getObjects()) {
        auto object = cast<gpu::ObjectAttr>(attr);
        auto chip = cast<NVVM::NVVMTargetAttr>(object.getTarget()).getChip();
        out->os() << "// " << name << ": " << binary.getSymName() << ", " << chip << "\n"
                  << object.getObject().getValue() << "\n";
      }
  out->keep();
  return success();
}

fsdp::ArenaMemory arenaMemory() {
  return target == Target::CUDA ? fsdp::ArenaMemory::Device : fsdp::ArenaMemory::Host;
}

/// The memory budget from --device-memory or the plan's device_memory, with
/// the runtime's own memory from the profile or --runtime-memory.
FailureOr<std::optional<fsdp::MemoryBudget>> memoryBudget(ModuleOp model,
                                                          const fsdp::DeviceProfile &profile) {
  fsdp::MemoryBudget budget;
  budget.runtime = profile.runtime;
  if (!runtimeMemory.empty()) {
    std::optional<int64_t> bytes =
        runtimeMemory == "0" ? std::optional<int64_t>(0) : fsdp::parseByteSize(runtimeMemory);
    if (!bytes) {
      (void)fail("--runtime-memory=" + runtimeMemory + ": expected a size such as 2GiB or 0");
      return failure();
    }
    budget.runtime = {0, 0, 0};
    budget.runtime.context = *bytes;
  }
  auto plan = model->getAttrOfType<fsdp::PlanAttr>(fsdp::FSDPDialect::getPlanAttrName());
  if (!deviceMemory.empty()) {
    std::optional<int64_t> bytes = fsdp::parseByteSize(deviceMemory);
    if (!bytes) {
      (void)fail("--device-memory=" + deviceMemory + ": expected a size such as 80GB or 79.5GiB");
      return failure();
    }
    budget.deviceBytes = *bytes;
    budget.origin = "--device-memory=" + deviceMemory;
  } else if (std::optional<int64_t> bytes = plan ? plan.getDeviceMemoryBytes() : std::nullopt) {
    budget.deviceBytes = *bytes;
    budget.origin = "device_memory = \"" + plan.getDeviceMemory().str() + "\"";
  } else {
    return std::optional<fsdp::MemoryBudget>();
  }
  return std::optional<fsdp::MemoryBudget>(budget);
}

/// --timeline and --memory-svg (with --measured-trace's marks), of the plan
/// compiled.
LogicalResult writePictures(const fsdp::PlanEvaluation &planned,
                            const fsdp::DeviceProfile &profile,
                            const std::optional<fsdp::MemoryBudget> &budget) {
  // Read before any output is opened: a bad file leaves the outputs alone.
  std::optional<fsdp::MeasuredHighWater> measured;
  if (!measuredTraceFile.empty()) {
    llvm::Expected<fsdp::MeasuredHighWater> read =
        fsdp::readMeasuredHighWater(measuredTraceFile, planned);
    if (!read)
      return fail(llvm::toString(read.takeError()));
    measured = std::move(*read);
  }
  for (const std::string *path : {&timelineFile.getValue(), &memorySvgFile.getValue()}) {
    if (path->empty())
      continue;
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> out = openOutputFile(*path, &error);
    if (!out)
      return fail(error);
    if (path == &timelineFile.getValue()) {
      fsdp::writeChromeTrace(out->os(), planned, profile.name);
    } else {
      std::string title;
      llvm::raw_string_ostream os(title);
      os << llvm::sys::path::filename(inputFile) << ": " << planned.plan.getWorldSize()
         << " ranks, " << fsdp::stringifyStrategy(planned.plan.getStrategy())
         << ", one rank's memory over the step predicted on " << profile.name;
      // Without a budget, the runtime's memory only when asked for.
      int64_t runtimeBytes = budget ? budget->runtime.total() : 0;
      fsdp::writeMemorySvg(out->os(), planned, runtimeBytes, budget ? budget->deviceBytes : 0,
                           title, measured ? &*measured : nullptr);
    }
    out->keep();
  }
  return success();
}

/// The predicted step and the budget, for fsdp-report's `cost`.
std::string costJson(const fsdp::PlanEvaluation &planned, const fsdp::DeviceProfile &profile,
                     const std::optional<fsdp::MemoryBudget> &budget) {
  const fsdp::StepCost &cost = planned.cost;
  llvm::json::Object object{{"profile", profile.name},
                            {"step_seconds", cost.stepSeconds},
                            {"matmul_seconds", cost.matmulSeconds},
                            {"matmul_flops", cost.matmulFlops},
                            {"other_compute_seconds", cost.otherComputeSeconds},
                            {"communication_seconds", cost.communicationSeconds},
                            {"exposed_communication_seconds", cost.exposedCommunicationSeconds},
                            {"copy_seconds", cost.copySeconds},
                            {"exposed_copy_seconds", cost.exposedCopySeconds},
                            {"host_seconds", cost.hostSeconds}};
  if (budget)
    object["budget"] = llvm::json::Object{{"device_bytes", budget->deviceBytes},
                                          {"runtime_bytes", budget->runtime.total()},
                                          {"needed_bytes", budget->needed(planned)},
                                          {"origin", budget->origin}};
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(object));
  return text;
}

/// Over budget: the located error with the figures by category and the
/// changes that fit; with --fit, the best of them (its evaluation returned).
FailureOr<fsdp::PlanFix> handleOverBudget(ModuleOp model, const fsdp::PlanEvaluation &planned,
                                          const fsdp::MemoryBudget &budget,
                                          const fsdp::DeviceProfile &profile) {
  fsdp::FitOptions options;
  options.budget = budget;
  options.memory = arenaMemory();
  options.profile = &profile;
  fsdp::FitSearchResult search = fsdp::searchFits(model, planned, options);
  if (fitPlan && !search.fits.empty())
    return search.fits.front();

  std::string text;
  llvm::raw_string_ostream os(text);
  int64_t needed = budget.needed(planned);
  int64_t over = needed - budget.deviceBytes;
  os << "the plan needs " << fsdp::groupedBytes(needed) << " B per rank, "
     << fsdp::groupedBytes(over) << " B (" << fsdp::gibText(over) << ") more than "
     << budget.origin << "\n";
  fsdp::printMemoryBreakdown(os, planned, budget);
  double baseSeconds = planned.cost.stepSeconds;
  if (search.fits.empty()) {
    os << "no plan within 3 changes of recompute, micro-batches, prefetch, ranks, sharding"
       << (target == Target::CUDA ? ", precision and offload" : " and precision") << " fits ("
       << search.evaluated << " compiled, " << search.skipped << " skipped)";
  } else {
    os << "changes that fit, best first (predicted on " << profile.name
       << "; fsdpc --fit compiles the first):\n";
    for (auto [index, fix] : llvm::enumerate(search.fits)) {
      int64_t spare = budget.deviceBytes - budget.needed(fix.evaluation);
      double seconds = fix.evaluation.cost.stepSeconds;
      double change = 100.0 * (seconds / baseSeconds - 1.0);
      os << llvm::formatv("  {0}. {1}: needs {2} B ({3} B spare); step {4} s predicted "
                          "({5}{6:F1}%), {7} ranks\n",
                          index + 1, fix.changes, fsdp::groupedBytes(budget.needed(fix.evaluation)),
                          fsdp::groupedBytes(spare), llvm::formatv("{0:F4}", seconds), change < 0 ? "" : "+",
                          change, fix.evaluation.worldSize());
    }
    os << "(" << search.evaluated << " plans compiled, " << search.skipped << " skipped)";
  }
  for (const auto &[change, reason] : search.impossible)
    os << "\n  not possible for this model: " << change << ": " << reason;
  mlir::emitError(model.getLoc()) << text;
  return failure();
}

LogicalResult compile() {
  // Compiling needs only the toolkit; linking a trainer needs the runtime.
  if (target == Target::CUDA && !FSDP_CUDA_AVAILABLE && !kernelsOnCPU &&
      emit == Emit::Executable && !report.getNumOccurrences())
    return fail("--target=cuda cannot link a trainer: this fsdpc was built without the "
                "runtime's CUDA backend (" FSDP_CUDA_MISSING "); install the CUDA toolkit and "
                "NCCL and rebuild, or use --target=cpu (--emit=obj still compiles for CUDA)");
  if (kernelsOnCPU && target != Target::CUDA)
    return fail("--test-kernels-on-cpu needs --target=cuda");
  if (emit == Emit::PTX && (target != Target::CUDA || kernelsOnCPU))
    return fail("--emit=ptx needs --target=cuda (and no --test-kernels-on-cpu)");
  if (launchSummary && (target != Target::CUDA || emit != Emit::MLIR))
    return fail("--test-launch-summary needs --target=cuda and --emit=mlir");
  if (!measuredTraceFile.empty() && memorySvgFile.empty())
    return fail("--measured-trace needs --memory-svg: the measured marks are drawn on its "
                "picture");
  if (optLevel > 3)
    return fail("-O" + llvm::Twine(optLevel) + ": the level must be 0 to 3");
  // A bad --cpu or --cpu-features is reported before the model is compiled.
  if (jobs < 1)
    return fail("-j " + llvm::Twine(jobs) + ": at least one job");
  FailureOr<std::unique_ptr<llvm::TargetMachine>> machine =
      fsdpc::createCPUTargetMachine(cpuTarget());
  if (failed(machine))
    return failure();

  DialectRegistry registry;
  registry.insert<fsdp::FSDPDialect, func::FuncDialect, arith::ArithDialect>();
  fsdp::registerCUDAPipelineDependencies(registry);
  MLIRContext ctx(registry);
  llvm::SourceMgr sources;
  SourceMgrDiagnosticHandler diagnostics(sources, &ctx);
  FailureOr<OwningOpRef<ModuleOp>> module = parseModel(ctx, sources);
  if (failed(module))
    return failure();

  // --mlir-timing: the passes, then translation, LLVM's optimisation, code
  // generation and linking, each timed.
  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope timing = timingManager.getRootScope();

  // Every pass manager takes --mlir-print-ir-* and the like, and is timed.
  auto passManager = [&]() -> FailureOr<std::unique_ptr<PassManager>> {
    auto pm = std::make_unique<PassManager>(&ctx);
    if (failed(applyPassManagerCLOptions(*pm)))
      return failure();
    pm->enableTiming(timing);
    return pm;
  };
  if (!gridOverride.empty()) {
    FailureOr<SmallVector<int64_t>> grid = parseGrid();
    FailureOr<std::unique_ptr<PassManager>> pm = passManager();
    if (failed(grid) || failed(pm))
      return failure();
    fsdp::FSDPSetGridPassOptions options;
    options.grid = *grid;
    (*pm)->addPass(fsdp::createFSDPSetGridPass(options));
    if (failed((*pm)->run(**module)))
      return failure();
  }

  // The target's flags are checked before anything is compiled (a report
  // needs no toolkit).
  std::optional<fsdp::CUDAPipelineOptions> cuda;
  if (target == Target::CUDA && !report.getNumOccurrences()) {
    FailureOr<fsdp::CUDAPipelineOptions> options = cudaOptions();
    if (failed(options) || failed(checkBF16Archs(**module, options->chips)))
      return failure();
    cuda = *options;
    auto plan = (**module)->getAttrOfType<fsdp::PlanAttr>(fsdp::FSDPDialect::getPlanAttrName());
    cuda->approximateMath = plan && plan.getApproximateMath();
  }

  // The step as far as its buffer plan: the exact memory of a rank, checked
  // against the budget before anything else is compiled.
  llvm::Expected<fsdp::DeviceProfile> profile = fsdp::DeviceProfile::load(
      !deviceProfile.empty() ? StringRef(deviceProfile)
                             : StringRef(target == Target::CUDA ? "h100-sxm" : "cpu"));
  if (!profile)
    return fail("--device-profile: " + llvm::toString(profile.takeError()));
  OwningOpRef<ModuleOp> model = (*module)->clone();
  FailureOr<std::optional<fsdp::MemoryBudget>> budget = memoryBudget(*model, *profile);
  FailureOr<std::unique_ptr<PassManager>> planPM = passManager();
  if (failed(budget) || failed(planPM))
    return failure();
  fsdp::buildBufferPlanPipeline(**planPM, arenaMemory());
  if (failed((*planPM)->run(**module)))
    return failure();
  FailureOr<fsdp::PlanEvaluation> planned = fsdp::evaluateBufferPlan(**module, *profile);
  if (failed(planned))
    return failure();
  planned->plan = (*model)->getAttrOfType<fsdp::PlanAttr>(fsdp::FSDPDialect::getPlanAttrName());
  if (*budget && !(*budget)->fits(*planned)) {
    FailureOr<fsdp::PlanFix> fix = handleOverBudget(*model, *planned, **budget, *profile);
    if (failed(fix))
      return failure();
    llvm::errs() << "fsdpc: --fit: " << fix->changes << " (needs "
                 << fsdp::groupedBytes((*budget)->needed(fix->evaluation)) << " B of "
                 << fsdp::groupedBytes((*budget)->deviceBytes) << ", step "
                 << llvm::formatv("{0:F3}", fix->evaluation.cost.stepSeconds)
                 << " s predicted on " << profile->name << "): " << fix->evaluation.plan << "\n";
    (*model)->setAttr(fsdp::FSDPDialect::getPlanAttrName(), fix->evaluation.plan);
    // The fix may compute in bf16, which older GPUs cannot.
    if (cuda && failed(checkBF16Archs(*model, cuda->chips)))
      return failure();
    *module = OwningOpRef<ModuleOp>(model->clone());
    if (failed((*planPM)->run(**module)))
      return failure();
    planned = std::move(fix->evaluation);
  } else if (*budget && fitPlan) {
    llvm::errs() << "fsdpc: --fit: the plan fits as it is ("
                 << fsdp::groupedBytes((*budget)->deviceBytes - (*budget)->needed(*planned))
                 << " B spare)\n";
  }

  if (failed(writePictures(*planned, *profile, *budget)))
    return failure();

  if (report.getNumOccurrences()) {
    // The report describes the plan, with the arena of the step compiled as
    // far as its buffer plan; nothing is emitted.
    PassManager reportPM(&ctx);
    reportPM.addPass(fsdp::createFSDPFormUnitsPass());
    fsdp::FSDPReportPassOptions options;
    options.format = report.empty() ? "table" : report.getValue();
    options.arena = planned->manifest;
    options.cost = costJson(*planned, *profile, *budget);
    reportPM.addPass(fsdp::createFSDPReportPass(options));
    return reportPM.run(*model);
  }
  FailureOr<std::unique_ptr<PassManager>> pm = passManager();
  if (failed(pm))
    return failure();
  addTargetPipeline(**pm, cuda);
  if (failed((*pm)->run(**module)))
    return failure();
  // The held-out evaluation step, from the same plan, beside it. Its pass
  // manager takes no command-line options: --mlir-print-ir-* and timings are
  // the training step's.
  OwningOpRef<ModuleOp> eval = model->clone();
  PassManager evalPM(&ctx);
  fsdp::buildBufferPlanPipeline(evalPM, arenaMemory(), /*forwardOnly=*/true);
  addTargetPipeline(evalPM, cuda);
  if (failed(evalPM.run(*eval)))
    return failure();
  if (emit == Emit::PTX)
    return writePtx({**module, *eval}, {"training step", "evaluation step"});
  if (failed(fsdpc::mergeEvalStep(**module, *eval)))
    return failure();

  if (emit == Emit::MLIR) {
    std::string error;
    auto out = openOutputFile(outputFile, &error);
    if (!out)
      return fail(error);
    (*module)->print(out->os());
    out->keep();
    return success();
  }

  llvm::LLVMContext llvmContext;
  TimingScope translating = timing.nest("Translation to LLVM IR");
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(**module, llvmContext, inputFile);
  if (!llvmModule)
    return fail("translation to LLVM IR failed");
  translating.stop();

  if (emit == Emit::LLVM || emit == Emit::Object) {
    TimingScope optimising = timing.nest("LLVM optimisation");
    if (failed(fsdpc::optimise(*llvmModule, **machine, optLevel)))
      return failure();
    optimising.stop();
    if (emit == Emit::Object) {
      TimingScope generating = timing.nest("Code generation");
      return fsdpc::writeObject(*llvmModule, **machine, outputFile);
    }
    std::string error;
    auto out = openOutputFile(outputFile, &error);
    if (!out)
      return fail(error);
    llvmModule->print(out->os(), nullptr);
    out->keep();
    return success();
  }

  TimingScope compiling = timing.nest("LLVM optimisation and code generation");
  FailureOr<SmallVector<std::string>> objects =
      fsdpc::compileInParts(std::move(llvmModule), cpuTarget(), optLevel, jobs);
  if (failed(objects))
    return failure();
  compiling.stop();
  llvm::scope_exit removeObjects([&] {
    for (const std::string &object : *objects)
      llvm::sys::fs::remove(object);
  });
  TimingScope linking = timing.nest("Linking");
  return linkTrainer(*objects, target == Target::CUDA && !kernelsOnCPU);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // --mlir-print-ir-after=<pass> and friends show any stage of the pipeline;
  // the passes must be registered before the options that name them.
  fsdp::registerCPUPipeline();
  fsdp::registerCUDAPipeline();
  fsdp::test::registerTestLaunchToLoopsPass();
  fsdp::test::registerTestLaunchSummaryPass();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  cl::ParseCommandLineOptions(
      argc, argv,
      "fsdpc: compiles an FSDP-MLIR model file into a native trainer\n\n"
      "  fsdpc model.mlir --target=cpu -o trainer\n"
      "  fsdpc model.mlir --target=cuda --gpu-arch=sm_80,sm_90 -o trainer\n"
      "  mpirun -np 2 ./trainer --steps 100\n");
  return succeeded(compile()) ? 0 : 1;
}
