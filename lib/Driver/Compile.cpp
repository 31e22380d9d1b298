//===- Compile.cpp - fsdpc's compilation, stage by stage ------------------===//
//
// model.mlir -> training step (MLIR pipeline) -> LLVM IR -> native object ->
// trainer executable linked with the runtime, all in one process except the
// final link, which the system's C++ driver performs. The stages: the flags
// checked, the model read (and --grid applied), the step as far as its buffer
// plan checked against the budget (--fit: replanned), the report or the
// pictures, the target's passes on the training and the evaluation step, and
// what --emit asks for.
//
//===----------------------------------------------------------------------===//

#include "Budget.h"
#include "CPUTarget.h"
#include "Diagnostics.h"
#include "Driver/Driver.h"
#include "Emission.h"
#include "EvalStep.h"
#include "ParallelCodeGen.h"
#include "Planning/FastestPlan.h"
#include "TargetChoice.h"
#include "Utils/ByteCounts.h"
#include "Utils/RuntimeABI.h"
#include "fsdp/IR/FSDPOps.h"
#include "fsdp/Planning/Passes.h"
#include "fsdp/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// Flags that contradict each other or this build, refused before the model
/// is read.
LogicalResult checkFlags(const CompilerOptions &options, const RuntimeLinkage &runtime) {
  bool cuda = options.target == Target::CUDA;
  // Compiling needs only the toolkit; linking a trainer needs the runtime.
  if (cuda && !runtime.cudaAvailable && !options.kernelsOnCPU && options.emit == Emit::Executable &&
      !options.report)
    return fail("--target=cuda cannot link a trainer: this fsdpc was built without the "
                "runtime's CUDA backend (" + runtime.cudaMissing +
                "); install the CUDA toolkit and NCCL and rebuild, or use --target=cpu "
                "(--emit=obj still compiles for CUDA)");
  if (options.kernelsOnCPU && !cuda)
    return fail("--test-kernels-on-cpu needs --target=cuda");
  if (options.widenBf16Products && cuda)
    return fail("--widen-bf16-products is for --target=cpu: CUDA's bf16 products are cuBLAS's");
  if (options.emit == Emit::PTX && (!cuda || options.kernelsOnCPU))
    return fail("--emit=ptx needs --target=cuda (and no --test-kernels-on-cpu)");
  if (!options.kernelTableFile.empty() &&
      (!cuda || options.kernelsOnCPU || options.launchSummary || options.report))
    return fail("--kernels needs --target=cuda, compiled for the GPU (no --test-kernels-on-cpu), "
                "and no --report");
  if (options.launchSummary && (!cuda || options.emit != Emit::MLIR))
    return fail("--test-launch-summary needs --target=cuda and --emit=mlir");
  if (!options.measuredTraceFile.empty() && options.memorySvgFile.empty())
    return fail("--measured-trace needs --memory-svg: the measured marks are drawn on its "
                "picture");
  if (options.linkRuntime != "static" && options.linkRuntime != "shared")
    return fail("--link-runtime=" + options.linkRuntime + ": expected static or shared");
  if (!options.fitValue.empty() && !options.fitFastest)
    return fail("--fit=" + options.fitValue + ": expected --fit or --fit=fastest");
  if (options.optLevel > 3)
    return fail("-O" + llvm::Twine(options.optLevel) + ": the level must be 0 to 3");
  if (options.jobs < 1)
    return fail("-j " + llvm::Twine(options.jobs) + ": at least one job");
  return success();
}

FailureOr<OwningOpRef<ModuleOp>> parseModel(MLIRContext &ctx, llvm::SourceMgr &sources,
                                            StringRef inputFile) {
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

/// One compilation: the model as written (`model`, its plan possibly changed
/// by --fit) and the step compiled from it (`step`), stage by stage.
class Compilation {
public:
  Compilation(const CompilerOptions &options, const RuntimeLinkage &runtime, MLIRContext &ctx,
              TimingScope &timing)
      : options(options), runtime(runtime), ctx(ctx), timing(timing) {}

  LogicalResult run(OwningOpRef<ModuleOp> parsed, llvm::TargetMachine &machine) {
    step = std::move(parsed);
    if (failed(applyGrid()) || failed(chooseTarget(machine)) || failed(planMemory()))
      return failure();
    if (failed(writePictures(options, *planned, *profile, budget)))
      return failure();
    if (options.report)
      return writeReport();
    if (failed(recordDeviceProfile()) || failed(lowerSteps()))
      return failure();
    return emit(machine);
  }

private:
  /// A pass manager that takes --mlir-print-ir-* and the like, timed.
  FailureOr<std::unique_ptr<PassManager>> passManager() {
    auto pm = std::make_unique<PassManager>(&ctx);
    if (failed(applyPassManagerCLOptions(*pm)))
      return failure();
    pm->enableTiming(timing);
    return pm;
  }

  /// --grid, --tensor-parallel and --sequence-parallel: the plan's mesh
  /// replaced.
  LogicalResult applyGrid() {
    if (options.grid.empty() && options.tensorParallel == 0 && !options.sequenceParallel)
      return success();
    if (options.tensorParallel < 0)
      return fail("--tensor-parallel=" + std::to_string(options.tensorParallel) +
                  ": expected a positive number of ranks");
    FailureOr<SmallVector<int64_t>> grid =
        options.grid.empty() ? SmallVector<int64_t>() : parseGrid(options);
    FailureOr<std::unique_ptr<PassManager>> pm = passManager();
    if (failed(grid) || failed(pm))
      return failure();
    fsdp::FSDPSetGridPassOptions setGrid;
    setGrid.grid = *grid;
    setGrid.tensor = options.tensorParallel;
    setGrid.sequence = options.sequenceParallel;
    (*pm)->addPass(fsdp::createFSDPSetGridPass(setGrid));
    return (*pm)->run(*step);
  }

  /// The target's flags, checked before anything is compiled (a report needs
  /// no toolkit), and the device the step time is predicted for.
  LogicalResult chooseTarget(const llvm::TargetMachine &machine) {
    if (options.target == Target::CUDA) {
      // A report needs no toolkit: the default options, with the plan's fields.
      cuda = fsdp::CUDAPipelineOptions();
      if (!options.report) {
        FailureOr<fsdp::CUDAPipelineOptions> checked = cudaOptions(options, runtime);
        if (failed(checked) || failed(checkBF16Archs(*step, checked->chips)))
          return failure();
        cuda = *checked;
      }
      auto plan = (*step)->getAttrOfType<fsdp::PlanAttr>(fsdp::FSDPDialect::getPlanAttrName());
      cuda->approximateMath = plan && plan.getApproximateMath();
      cuda->deterministic = plan && plan.getDeterministic();
      cuda->fuseAttention = options.fusesAttention(Target::CUDA);
    }
    StringRef name = !options.deviceProfile.empty()   ? StringRef(options.deviceProfile)
                     : options.target == Target::CUDA ? "h100-sxm"
                                                      : "cpu";
    llvm::Expected<fsdp::DeviceProfile> loaded = fsdp::DeviceProfile::load(name);
    if (!loaded)
      return fail("--device-profile: " + llvm::toString(loaded.takeError()));
    profile = std::move(*loaded);
    // The evaluation step's lowering writes no kernel table.
    evalTarget = pipelineTarget(options, cuda, hasBf16Products(machine));
    if (cuda && !options.kernelTableFile.empty()) {
      cuda->kernelTable = options.kernelTableFile;
      cuda->kernelTableProfile = name.str();
    }
    target = pipelineTarget(options, cuda, hasBf16Products(machine));
    return success();
  }

  /// The step as far as its buffer plan: the exact memory of a rank, checked
  /// against the budget before anything else is compiled.
  LogicalResult planMemory() {
    model = step->clone();
    FailureOr<std::optional<fsdp::MemoryBudget>> found = memoryBudget(options, *model, *profile);
    FailureOr<std::unique_ptr<PassManager>> pm = passManager();
    if (failed(found) || failed(pm))
      return failure();
    budget = *found;
    planPM = std::move(*pm);
    fsdp::buildBufferPlanPipeline(*planPM, *target);
    if (failed(planPM->run(*step)))
      return failure();
    FailureOr<fsdp::PlanEvaluation> evaluated = fsdp::evaluateBufferPlan(*step, *profile);
    if (failed(evaluated))
      return failure();
    planned = std::move(*evaluated);
    planned->plan = (*model)->getAttrOfType<fsdp::PlanAttr>(fsdp::FSDPDialect::getPlanAttrName());
    if (options.fitFastest && !budget)
      return fail("--fit=fastest needs the device's memory: --device-memory or the plan's "
                  "device_memory");
    if (budget && !budget->fits(*planned) && failed(replanToFit()))
      return failure();
    if (options.fitFastest)
      return replanFastest();
    if (budget && options.fit)
      llvm::errs() << "fsdpc: --fit: the plan fits as it is ("
                   << fsdp::groupedBytes(budget->deviceBytes - budget->needed(*planned))
                   << " B spare)\n";
    return success();
  }

  /// --fit=fastest: the plan that fits, planned again with the changes that
  /// shorten its predicted step most (or kept).
  LogicalResult replanFastest() {
    fsdp::FitOptions search;
    search.budget = *budget;
    search.target = target.get();
    search.profile = &*profile;
    double before = planned->cost.stepSeconds;
    fsdp::PlanFix fastest = fsdp::searchFastest(*model, *planned, search);
    if (fastest.numChanges == 0) {
      llvm::errs() << "fsdpc: --fit=fastest: the plan is the fastest near it that fits (step "
                   << llvm::formatv("{0:F3}", before) << " s predicted on " << profile->name
                   << ")\n";
      return success();
    }
    llvm::errs() << "fsdpc: --fit=fastest: " << fastest.changes << " (step "
                 << llvm::formatv("{0:F3}", fastest.evaluation.cost.stepSeconds) << " s, was "
                 << llvm::formatv("{0:F3}", before) << " s, predicted on " << profile->name
                 << "; needs " << fsdp::groupedBytes(budget->needed(fastest.evaluation)) << " B of "
                 << fsdp::groupedBytes(budget->deviceBytes) << "): " << fastest.evaluation.plan
                 << "\n";
    return adoptPlan(std::move(fastest.evaluation));
  }

  /// Compiles the step again with `evaluation`'s plan, which becomes the model's.
  LogicalResult adoptPlan(fsdp::PlanEvaluation evaluation) {
    (*model)->setAttr(fsdp::FSDPDialect::getPlanAttrName(), evaluation.plan);
    // The plan may compute in bf16, which older GPUs cannot.
    if (cuda && failed(checkBF16Archs(*model, cuda->chips)))
      return failure();
    step = OwningOpRef<ModuleOp>(model->clone());
    if (failed(planPM->run(*step)))
      return failure();
    planned = std::move(evaluation);
    return success();
  }

  /// Over budget: an error, or with --fit the step planned again with the
  /// best change that fits.
  LogicalResult replanToFit() {
    FailureOr<fsdp::PlanFix> fix =
        handleOverBudget(options, *model, *planned, *budget, *profile, *target);
    if (failed(fix))
      return failure();
    llvm::errs() << "fsdpc: --fit: " << fix->changes << " (needs "
                 << fsdp::groupedBytes(budget->needed(fix->evaluation)) << " B of "
                 << fsdp::groupedBytes(budget->deviceBytes) << ", step "
                 << llvm::formatv("{0:F3}", fix->evaluation.cost.stepSeconds) << " s predicted on "
                 << profile->name << "): " << fix->evaluation.plan << "\n";
    return adoptPlan(std::move(fix->evaluation));
  }

  /// The profile the step was planned on, in its manifest: a CPU trainer's
  /// MFU divides by its product rates (a GPU's trainer knows its card).
  LogicalResult recordDeviceProfile() {
    auto manifest =
        (*step)->getAttrOfType<fsdp::ManifestAttr>(fsdp::FSDPDialect::getManifestAttrName());
    if (!manifest)
      return (*step).emitError("the compiled step has no manifest");
    auto rates =
        fsdp::DeviceProfileAttr::get(&ctx, profile->name, llvm::APFloat(profile->matmulFlopsF32),
                                     llvm::APFloat(profile->matmulFlopsBF16));
    (*step)->setAttr(fsdp::FSDPDialect::getManifestAttrName(), manifest.withDeviceProfile(rates));
    return success();
  }

  /// The report describes the plan, with the arena of the step compiled as
  /// far as its buffer plan (its manifest, on the model for fsdp-report);
  /// nothing is emitted.
  LogicalResult writeReport() {
    (*model)->setAttr(fsdp::FSDPDialect::getManifestAttrName(), planned->manifest);
    PassManager reportPM(&ctx);
    reportPM.addPass(fsdp::createFSDPFormUnitsPass());
    reportPM.addPass(fsdp::createFSDPSplitTensorsPass());
    fsdp::FSDPReportPassOptions report;
    report.format = options.report->empty() ? "table" : *options.report;
    report.cost = costJson(*planned, *profile, budget);
    reportPM.addPass(fsdp::createFSDPReportPass(report));
    return reportPM.run(*model);
  }

  /// The target's passes on the training step, and on the held-out
  /// evaluation step from the same plan beside it (its pass manager takes no
  /// command-line options: --mlir-print-ir-* and timings are the training
  /// step's).
  LogicalResult lowerSteps() {
    FailureOr<std::unique_ptr<PassManager>> pm = passManager();
    if (failed(pm))
      return failure();
    fsdp::buildLoweringPipeline(**pm, *target);
    if (failed((*pm)->run(*step)))
      return failure();
    eval = model->clone();
    PassManager evalPM(&ctx);
    fsdp::buildBufferPlanPipeline(evalPM, *evalTarget, /*forwardOnly=*/true);
    fsdp::buildLoweringPipeline(evalPM, *evalTarget);
    return evalPM.run(*eval);
  }

  /// What --emit asks for: PTX, MLIR, LLVM IR, an object or the trainer.
  LogicalResult emit(llvm::TargetMachine &machine) {
    if (options.emit == Emit::PTX)
      return writePtx(options, {*step, *eval}, {"training step", "evaluation step"});
    if (failed(mlir::fsdp::mergeEvalStep(*step, *eval)))
      return failure();
    if (options.emit == Emit::MLIR)
      return writeOutput(options, [&](llvm::raw_ostream &os) { (*step)->print(os); });

    llvm::LLVMContext llvmContext;
    TimingScope translating = timing.nest("Translation to LLVM IR");
    std::unique_ptr<llvm::Module> llvmModule =
        translateModuleToLLVMIR(*step, llvmContext, options.inputFile);
    if (!llvmModule)
      return fail("translation to LLVM IR failed");
    translating.stop();
    if (options.emit == Emit::LLVM || options.emit == Emit::Object)
      return emitOptimised(*llvmModule, machine);
    return emitTrainer(std::move(llvmModule));
  }

  /// The optimised LLVM IR, or its object.
  LogicalResult emitOptimised(llvm::Module &llvmModule, llvm::TargetMachine &machine) {
    TimingScope optimising = timing.nest("LLVM optimisation");
    if (failed(mlir::fsdp::optimise(llvmModule, machine, options.optLevel)))
      return failure();
    optimising.stop();
    if (options.emit == Emit::Object) {
      TimingScope generating = timing.nest("Code generation");
      return mlir::fsdp::writeObject(llvmModule, machine, options.outputFile);
    }
    return writeOutput(options, [&](llvm::raw_ostream &os) { llvmModule.print(os, nullptr); });
  }

  /// The trainer: the module compiled in parts on -j threads, then linked.
  LogicalResult emitTrainer(std::unique_ptr<llvm::Module> llvmModule) {
    TimingScope compiling = timing.nest("LLVM optimisation and code generation");
    FailureOr<SmallVector<std::string>> objects = mlir::fsdp::compileInParts(
        std::move(llvmModule), cpuTarget(options), options.optLevel, options.jobs);
    if (failed(objects))
      return failure();
    compiling.stop();
    llvm::scope_exit removeObjects([&] {
      for (const std::string &object : *objects)
        llvm::sys::fs::remove(object);
    });
    TimingScope linking = timing.nest("Linking");
    return linkTrainer(options, runtime, *objects,
                       options.target == Target::CUDA && !options.kernelsOnCPU);
  }

  const CompilerOptions &options;
  const RuntimeLinkage &runtime;
  MLIRContext &ctx;
  TimingScope &timing;
  OwningOpRef<ModuleOp> model, step, eval;
  std::optional<fsdp::CUDAPipelineOptions> cuda;
  std::unique_ptr<fsdp::PipelineTarget> target, evalTarget;
  std::optional<fsdp::DeviceProfile> profile;
  std::optional<fsdp::MemoryBudget> budget;
  std::optional<fsdp::PlanEvaluation> planned;
  std::unique_ptr<PassManager> planPM;
};

} // namespace

LogicalResult mlir::fsdp::compile(const CompilerOptions &options, const RuntimeLinkage &runtime) {
  if (failed(checkFlags(options, runtime)))
    return failure();
  // A bad --cpu or --cpu-features is reported before the model is compiled.
  FailureOr<std::unique_ptr<llvm::TargetMachine>> machine =
      mlir::fsdp::createCPUTargetMachine(cpuTarget(options));
  if (failed(machine))
    return failure();

  DialectRegistry registry;
  registry.insert<fsdp::FSDPDialect, func::FuncDialect, arith::ArithDialect>();
  fsdp::registerCUDAPipelineDependencies(registry);
  MLIRContext ctx(registry);
  // A model's author reads the located message; the operation in generic
  // form (a whole module, for a plan error) is for those who ask.
  ctx.printOpOnDiagnostic(options.printOpOnDiagnostic);
  llvm::SourceMgr sources;
  SourceMgrDiagnosticHandler diagnostics(sources, &ctx);
  FailureOr<OwningOpRef<ModuleOp>> module = parseModel(ctx, sources, options.inputFile);
  if (failed(module))
    return failure();

  // --mlir-timing: the passes, then translation, LLVM's optimisation, code
  // generation and linking, each timed.
  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope timing = timingManager.getRootScope();
  return Compilation(options, runtime, ctx, timing).run(std::move(*module), **machine);
}
