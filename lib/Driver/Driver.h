//===- Driver.h - fsdpc as a library ----------------------------*- C++ -*-===//
//
// What fsdpc does, behind a thin tools/fsdpc (as mlir-opt's MlirOptMain is
// behind mlir-opt.cpp): its options as a struct, read from the command line
// or filled by a program, and one call that compiles a model file into a
// trainer (or the MLIR, LLVM IR, object or PTX on the way, or the report),
// checking the plan's memory against the budget first (--fit: the best plan
// that fits). docs/UserGuide.md describes the flags.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_DRIVER_DRIVER_H
#define FSDP_DRIVER_DRIVER_H

#include "mlir/Support/LLVM.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace mlir::fsdp {

enum class Emit { MLIR, LLVM, Object, Executable, PTX };
enum class Target { CPU, CUDA };

/// fsdpc's flags (docs/UserGuide.md), with their defaults.
struct CompilerOptions {
  std::string inputFile;
  std::string outputFile = "trainer";
  Target target = Target::CPU;
  Emit emit = Emit::Executable;
  /// --grid: N or R,S; empty keeps the plan's.
  std::string grid;
  /// --tensor-parallel: the tensor-parallel degree; 0 keeps the plan's.
  int64_t tensorParallel = 0;
  /// --sequence-parallel: the plan's sequence_parallel turned on.
  bool sequenceParallel = false;
  /// --report[=table|json]: the format, empty for the table; nullopt compiles.
  std::optional<std::string> report;
  std::string deviceMemory;
  bool fit = false;
  /// --fit=fastest: of the plans that fit, the one with the shortest
  /// predicted step near the given one (Planning/FastestPlan.h).
  bool fitFastest = false;
  /// --fit's value as given: empty or `fastest`; anything else is an error.
  std::string fitValue;
  /// --print-op-on-diagnostic: an error also prints its operation, generic form.
  bool printOpOnDiagnostic = false;
  std::string deviceProfile;
  std::string runtimeMemory;
  std::string timelineFile;
  /// --kernels: the CUDA step's kernel table (JSON).
  std::string kernelTableFile;
  std::string memorySvgFile;
  std::string measuredTraceFile;
  std::vector<std::string> gpuArchs;
  /// The CUDA toolkit; empty: the one the runtime was built with.
  std::string cudaPath;
  int64_t gpuBlockSize = 256;
  bool kernelsOnCPU = false;
  /// --link-runtime=shared: the trainer links the runtime's shared library
  /// (found beside this build's, or on LD_LIBRARY_PATH) instead of a copy.
  bool sharedRuntime = false;
  /// --link-runtime's value as given: static or shared; anything else is an error.
  std::string linkRuntime = "static";
  bool launchSummary = false;
  bool outlineKernels = true;
  /// bf16 attention as the runtime's fused calls (cuDNN on --target=cuda, its
  /// loops on --target=cpu) instead of the key-block loops; unset: the
  /// target's default (CUDA fuses, the CPU does not: bench/cpu_attention.py).
  std::optional<bool> fuseAttention;

  /// Whether `target`'s bf16 attention is fused, as chosen.
  bool fusesAttention(Target target) const {
    return fuseAttention.value_or(target == Target::CUDA);
  }
  /// --target=cpu: bf16 products as f32 products whose operands the step's
  /// loops widen and round (fsdp-widen-bf16-products); unset: where the CPU
  /// built for has no bf16 instructions.
  std::optional<bool> widenBf16Products;

  /// Whether the CPU step's bf16 products are widened, as chosen, for a CPU
  /// with (`cpuBf16Products`) or without bf16 product instructions.
  bool widensBf16Products(bool cpuBf16Products) const {
    return widenBf16Products.value_or(!cpuBf16Products);
  }
  std::string cpu = "native";
  std::string cpuFeatures;
  /// Parts compiled at once (-j).
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  unsigned optLevel = 3;
};

/// Where the runtime's archives are and what a trainer links with besides
/// them: the tool's build knows (tools/fsdpc, RuntimeLinkage.h).
struct RuntimeLinkage {
  /// The main archive, the runtime's archive and the same as a shared
  /// library, and the link flags they need; then the CUDA backend's.
  std::string mainLibrary, library, sharedLibrary, linkFlags;
  bool cudaAvailable = false;
  /// Why the CUDA backend was not built, when it was not.
  std::string cudaMissing;
  std::string cudaMainLibrary, cudaLibrary, cudaSharedLibrary, cudaLinkFlags;
  /// The CUDA toolkit the runtime was built with (--cuda-path's default).
  std::string cudaToolkit;
};

/// Registers fsdpc's flags with LLVM's command line, and the passes and
/// pipelines --mlir-print-ir-* may name; before cl::ParseCommandLineOptions.
void registerCompilerCLOptions();

/// The flags as the command line gave them.
CompilerOptions compilerOptionsFromCL();

/// Compiles `options.inputFile` as the options say. Errors are printed
/// (`fsdpc: error: ...`, or located at the model) before failure returns.
mlir::LogicalResult compile(const CompilerOptions &options, const RuntimeLinkage &runtime);

} // namespace mlir::fsdp

#endif // FSDP_DRIVER_DRIVER_H
