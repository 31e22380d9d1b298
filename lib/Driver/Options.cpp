//===- Options.cpp - fsdpc's flags on LLVM's command line ------------------===//
//
// The flags live in one object made by registerCompilerCLOptions (so that a
// program that never parses a command line registers none), each stored in
// the field of a CompilerOptions it sets (cl::location), whose defaults are
// the flags' defaults.
//
//===----------------------------------------------------------------------===//

#include "Driver/Driver.h"

#include "Pipelines/CPU/CPUPipeline.h"
#include "Pipelines/CUDA/CUDAPipeline.h"
#include "TestPasses.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include "llvm/Support/CommandLine.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace {

using mlir::fsdp::Emit;
using mlir::fsdp::Target;

struct CommandLine {
  /// Where the flags are stored: their defaults are CompilerOptions's.
  mlir::fsdp::CompilerOptions values;
  // --help lists these groups, and nothing of LLVM's or MLIR's own options
  // (hidden: --help-hidden still lists them).
  cl::OptionCategory targetCategory{"Target", "Where the trainer runs and how it is built"};
  cl::OptionCategory planCategory{"Plan", "How the model is sharded"};
  cl::OptionCategory memoryCategory{"Memory and fit", "What a rank's device holds"};
  cl::OptionCategory outputCategory{"Outputs", "What fsdpc writes"};
  cl::OptionCategory debugCategory{"Debugging", "Diagnostics and the compiler's own tests"};
  cl::opt<std::string, true> inputFile{cl::Positional, cl::desc("<model.mlir>"), cl::Required,
                                       cl::location(values.inputFile), cl::cat(outputCategory)};
  cl::opt<std::string, true> outputFile{"o", cl::desc("Output file (default: trainer)"),
                                        cl::value_desc("file"), cl::location(values.outputFile),
                                        cl::cat(outputCategory)};
  cl::opt<Target, true> target{
      "target", cl::desc("Where the trainer runs"),
      cl::values(clEnumValN(Target::CPU, "cpu", "CPUs, MPI between ranks"),
                 clEnumValN(Target::CUDA, "cuda", "NVIDIA GPUs, NCCL between ranks")),
      cl::location(values.target), cl::cat(targetCategory)};
  cl::opt<Emit, true> emit{
      "emit", cl::desc("What to write"),
      cl::values(
          clEnumValN(Emit::MLIR, "mlir", "the lowered MLIR"),
          clEnumValN(Emit::LLVM, "llvm", "the optimised LLVM IR"),
          clEnumValN(Emit::Object, "obj", "the object file"),
          clEnumValN(Emit::Executable, "exe", "the trainer"),
          clEnumValN(Emit::PTX, "ptx", "the kernels' PTX, each architecture's (--target=cuda)")),
      cl::location(values.emit), cl::cat(outputCategory)};
  cl::opt<std::string, true> grid{
      "grid", cl::desc("Compile for this device grid instead of the plan's: N or R,S"),
      cl::value_desc("N|R,S"), cl::location(values.grid), cl::cat(planCategory)};
  cl::opt<int64_t, true> tensorParallel{
      "tensor-parallel",
      cl::desc("Compile for T tensor-parallel ranks beside each of the grid's (Megatron's "
               "layout: docs/Sharding.md) instead of the plan's tensor_parallel"),
      cl::value_desc("T"), cl::location(values.tensorParallel), cl::cat(planCategory)};
  cl::opt<bool, true> sequenceParallel{
      "sequence-parallel",
      cl::desc("Split the activations between tensor-parallel regions along the sequence "
               "(sequence_parallel = true: docs/Sharding.md)"),
      cl::location(values.sequenceParallel), cl::cat(planCategory)};
  cl::opt<std::string> report{
      "report", cl::desc("Print each rank's memory and traffic (table or json) and stop"),
      cl::value_desc("table|json"), cl::ValueOptional, cl::cat(outputCategory)};
  cl::opt<std::string, true> deviceMemory{
      "device-memory",
      cl::desc("Memory of one rank's device (a GPU; for --target=cpu the host memory a rank may "
               "use), e.g. 80GB or 79.5GiB: a plan that needs more is an error listing the "
               "changes that fit (default: the plan's device_memory)"),
      cl::value_desc("size"), cl::location(values.deviceMemory), cl::cat(memoryCategory)};
  cl::opt<std::string> fit{
      "fit",
      cl::desc("Over the memory budget, compile the best plan that fits instead, and say which; "
               "=fastest: also when it fits, compile the plan near it that fits with the "
               "shortest predicted step (less recompute, fewer micro-batches, no offload, more "
               "prefetch, bf16 reductions)"),
      cl::value_desc("fastest"), cl::ValueOptional, cl::cat(memoryCategory)};
  cl::opt<std::string, true> deviceProfile{
      "device-profile",
      cl::desc("The device the step time is predicted for: h100-sxm, h200, cpu or a profile file "
               "(default: h100-sxm for --target=cuda, cpu for --target=cpu)"),
      cl::value_desc("name|file"), cl::location(values.deviceProfile), cl::cat(memoryCategory)};
  cl::opt<std::string, true> runtimeMemory{
      "runtime-memory",
      cl::desc("Memory the runtime allocates per rank beside the arena (default: the device "
               "profile's: CUDA context, NCCL buffers, cuBLAS workspace)"),
      cl::value_desc("size"), cl::location(values.runtimeMemory), cl::cat(memoryCategory)};
  cl::opt<std::string, true> timelineFile{
      "timeline",
      cl::desc("Write the predicted step of a rank (its streams, and its memory as counters) as "
               "a Chrome trace: open it in Perfetto or chrome://tracing"),
      cl::value_desc("file.json"), cl::location(values.timelineFile), cl::cat(outputCategory)};
  cl::opt<std::string, true> kernelTableFile{
      "kernels",
      cl::desc("With --target=cuda: write the step's kernels as JSON (their places in the model, "
               "grid, block, bytes, FLOPs, the iterations a thread runs in order) with each one's "
               "roofline and predicted time on the device profile, and a summary by kind"),
      cl::value_desc("file.json"), cl::location(values.kernelTableFile), cl::cat(outputCategory)};
  cl::opt<std::string, true> memorySvgFile{
      "memory-svg",
      cl::desc("Draw a rank's memory over the predicted step (by kind, with the planned arena "
               "and the budget) as an SVG"),
      cl::value_desc("file.svg"), cl::location(values.memorySvgFile), cl::cat(outputCategory)};
  cl::opt<std::string, true> measuredTraceFile{
      "measured-trace",
      cl::desc("With --memory-svg: also draw the planned arena's high-water mark and the marks "
               "the trainer measured at the step's unit boundaries, read from its --trace file "
               "(the same compiled step)"),
      cl::value_desc("file.json"), cl::location(values.measuredTraceFile), cl::cat(outputCategory)};
  cl::list<std::string, std::vector<std::string>> gpuArchs{
      "gpu-arch",
      cl::desc("GPU architectures of --target=cuda (default sm_80,sm_90)"),
      cl::value_desc("sm_XY,..."),
      cl::CommaSeparated,
      cl::location(values.gpuArchs),
      cl::cat(targetCategory)};
  cl::opt<std::string, true> cudaPath{
      "cuda-path",
      cl::desc("The CUDA toolkit (ptxas, fatbinary, libdevice; default: "
               "the one the runtime was built with)"),
      cl::value_desc("dir"), cl::location(values.cudaPath), cl::cat(targetCategory)};
  cl::opt<int64_t, true> gpuBlockSize{
      "gpu-block-size", cl::desc("Threads per block of the generated kernels (1-1024)"), cl::Hidden,
      cl::location(values.gpuBlockSize), cl::cat(targetCategory)};
  cl::opt<bool, true> kernelsOnCPU{
      "test-kernels-on-cpu",
      cl::desc("Test only: compile --target=cuda's kernels as CPU loops and link with the "
               "CPU runtime, to check the kernels without a GPU"),
      cl::Hidden, cl::location(values.kernelsOnCPU), cl::cat(debugCategory)};
  cl::opt<bool, true> launchSummary{
      "test-launch-summary",
      cl::desc("Test only: with --target=cuda, print the step's kernels, its launches and those "
               "on a single thread, and stop"),
      cl::Hidden, cl::location(values.launchSummary), cl::cat(debugCategory)};
  cl::opt<bool, true> outlineKernels{
      "outline-kernels",
      cl::desc("Each compute op of the step in a function of its own, identical ones shared "
               "(default); =false compiles the step as one function, only to compare "
               "(LLVM's time then grows with the square of the model's depth)"),
      cl::Hidden, cl::location(values.outlineKernels), cl::cat(debugCategory)};
  cl::opt<cl::boolOrDefault> fuseAttention{
      "fuse-attention",
      cl::desc("bf16 attention as one runtime call each way: cuDNN's fused kernel on "
               "--target=cuda (the default there), the runtime's loops on --target=cpu (=true; "
               "slower than the key-block loops there); =false keeps the key-block loops"),
      cl::cat(targetCategory),
      cl::callback([this](const cl::boolOrDefault &value) {
        if (value != cl::BOU_UNSET)
          values.fuseAttention = value == cl::BOU_TRUE;
      })};
  cl::opt<cl::boolOrDefault> widenBf16Products{
      "widen-bf16-products",
      cl::desc("--target=cpu: bf16 products as f32 products whose operands the step's loops "
               "widen and whose results they round (the default for a CPU without bf16 "
               "instructions, neither AVX512-BF16 nor AMX); =false keeps them bf16 runtime "
               "products (less memory there: the runtime widens each in passes of its own)"),
      cl::cat(targetCategory), cl::callback([this](const cl::boolOrDefault &value) {
        if (value != cl::BOU_UNSET)
          values.widenBf16Products = value == cl::BOU_TRUE;
      })};
  cl::opt<std::string, true> cpu{
      "cpu",
      cl::desc("The x86-64 CPU the trainer is built for: native (this machine, the default) "
               "or any CPU LLVM knows, e.g. generic, x86-64-v2, x86-64-v3, sapphirerapids"),
      cl::value_desc("name"), cl::location(values.cpu), cl::cat(targetCategory)};
  cl::opt<std::string> linkRuntime{
      "link-runtime",
      cl::desc("How the trainer links the runtime: static (a copy in the trainer, the default) "
               "or shared (its shared library, found beside this build's or on "
               "LD_LIBRARY_PATH: trainers shipped together share one copy)"),
      cl::value_desc("static|shared"), cl::init("static"), cl::cat(targetCategory)};
  cl::opt<std::string, true> cpuFeatures{
      "cpu-features", cl::desc("CPU features added to or removed from --cpu's, e.g. -avx512f"),
      cl::value_desc("+f,-g,..."), cl::location(values.cpuFeatures), cl::cat(targetCategory)};
  cl::opt<unsigned, true> jobs{
      "j",
      cl::desc("Optimise and generate code in N parts at once, on N threads (default: the "
               "machine's hardware threads)"),
      cl::value_desc("N"),
      cl::Prefix,
      cl::location(values.jobs),
      cl::cat(targetCategory)};
  cl::opt<bool, true> printOpOnDiagnostic{
      "print-op-on-diagnostic",
      cl::desc("Print the operation an error is about, in generic form, after the located "
               "message (as mlir-opt does by default)"),
      cl::location(values.printOpOnDiagnostic), cl::cat(debugCategory)};
  cl::opt<unsigned, true> optLevel{"O", cl::desc("LLVM optimisation level (0-3, default 3)"),
                                   cl::Prefix, cl::location(values.optLevel), cl::cat(targetCategory)};
};

CommandLine *commandLine = nullptr;

/// Hides every option outside `categories` and LLVM's generic ones (--help,
/// --version): LLVM's and MLIR's hundreds stay usable and --help-hidden lists
/// them, as clang and mlir-opt's drivers do (cl::HideUnrelatedOptions would
/// hide them from --help-hidden too).
void hideOtherOptions(llvm::ArrayRef<const cl::OptionCategory *> categories) {
  for (auto &[name, option] : cl::getRegisteredOptions()) {
    bool ours = llvm::any_of(option->Categories, [&](const cl::OptionCategory *category) {
      return llvm::is_contained(categories, category);
    });
    bool generic = name == "help" || name == "help-list" || name == "version";
    if (!ours && !generic && option->getOptionHiddenFlag() == cl::NotHidden)
      option->setHiddenFlag(cl::Hidden);
  }
}

} // namespace

void mlir::fsdp::registerCompilerCLOptions() {
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
  static CommandLine flags;
  commandLine = &flags;
  hideOtherOptions({&flags.targetCategory, &flags.planCategory, &flags.memoryCategory,
                    &flags.outputCategory, &flags.debugCategory});
}

mlir::fsdp::CompilerOptions mlir::fsdp::compilerOptionsFromCL() {
  CompilerOptions options = commandLine->values;
  if (commandLine->report.getNumOccurrences())
    options.report = commandLine->report.getValue();
  options.linkRuntime = commandLine->linkRuntime.getValue();
  options.sharedRuntime = options.linkRuntime == "shared";
  if (commandLine->fit.getNumOccurrences()) {
    options.fitValue = commandLine->fit.getValue();
    options.fit = true;
    options.fitFastest = options.fitValue == "fastest";
  }
  return options;
}
