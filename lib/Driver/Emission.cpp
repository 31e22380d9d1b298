//===- Emission.cpp - What fsdpc writes -----------------------------------===//

#include "Emission.h"

#include "Diagnostics.h"
#include "Planning/Pictures.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

LogicalResult mlir::fsdp::writePictures(const CompilerOptions &options,
                                        const fsdp::PlanEvaluation &planned,
                                        const fsdp::DeviceProfile &profile,
                                        const std::optional<fsdp::MemoryBudget> &budget) {
  // Read before any output is opened: a bad file leaves the outputs alone.
  std::optional<fsdp::MeasuredHighWater> measured;
  if (!options.measuredTraceFile.empty()) {
    llvm::Expected<fsdp::MeasuredHighWater> read =
        fsdp::readMeasuredHighWater(options.measuredTraceFile, planned);
    if (!read)
      return fail(llvm::toString(read.takeError()));
    measured = std::move(*read);
  }
  for (const std::string *path : {&options.timelineFile, &options.memorySvgFile}) {
    if (path->empty())
      continue;
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> out = openOutputFile(*path, &error);
    if (!out)
      return fail(error);
    if (path == &options.timelineFile) {
      fsdp::writeChromeTrace(out->os(), planned, profile.name);
    } else {
      std::string title;
      llvm::raw_string_ostream os(title);
      os << llvm::sys::path::filename(options.inputFile) << ": " << planned.plan.getWorldSize()
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

LogicalResult mlir::fsdp::writeOutput(const CompilerOptions &options,
                                      llvm::function_ref<void(llvm::raw_ostream &)> write) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> out = openOutputFile(options.outputFile, &error);
  if (!out)
    return fail(error);
  write(out->os());
  out->keep();
  return success();
}

LogicalResult mlir::fsdp::writePtx(const CompilerOptions &options, ArrayRef<ModuleOp> steps,
                                   ArrayRef<StringRef> names) {
  return writeOutput(options, [&](llvm::raw_ostream &os) {
    for (auto [step, name] : llvm::zip(steps, names))
      for (auto binary : ModuleOp(step).getOps<gpu::BinaryOp>())
        for (Attribute attr : binary.getObjects()) {
          auto object = cast<gpu::ObjectAttr>(attr);
          auto chip = cast<NVVM::NVVMTargetAttr>(object.getTarget()).getChip();
          os << "// " << name << ": " << binary.getSymName() << ", " << chip << "\n"
             << object.getObject().getValue() << "\n";
        }
  });
}

LogicalResult mlir::fsdp::linkTrainer(const CompilerOptions &options, const RuntimeLinkage &runtime,
                                      ArrayRef<std::string> objects, bool cudaRuntime) {
  llvm::ErrorOr<std::string> driver = llvm::sys::findProgramByName("c++");
  if (!driver)
    return fail("no C++ compiler driver (c++) on PATH to link the trainer");
  SmallVector<StringRef> args = {*driver};
  args.append(objects.begin(), objects.end());
  StringRef flags, library;
  if (cudaRuntime) {
    library = options.sharedRuntime ? runtime.cudaSharedLibrary : runtime.cudaLibrary;
    args.append({runtime.cudaMainLibrary, library});
    flags = runtime.cudaLinkFlags;
  } else {
    library = options.sharedRuntime ? runtime.sharedLibrary : runtime.library;
    args.append({runtime.mainLibrary, library});
    flags = runtime.linkFlags;
  }
  // A shared runtime is found where this build has it, unless LD_LIBRARY_PATH
  // names another (a RUNPATH: the GPU check kit's lib/).
  std::string runpath;
  if (options.sharedRuntime) {
    runpath = "-Wl,--enable-new-dtags,-rpath," + llvm::sys::path::parent_path(library).str();
    args.push_back(runpath);
  }
  for (StringRef flag : llvm::split(flags, ' '))
    if (!flag.empty())
      args.push_back(flag);
  args.append({"-o", options.outputFile});
  std::string error;
  int status = llvm::sys::ExecuteAndWait(*driver, args, std::nullopt, {}, 0, 0, &error);
  if (status != 0)
    return fail("linking " + options.outputFile + " failed" + (error.empty() ? "" : ": " + error));
  return success();
}
