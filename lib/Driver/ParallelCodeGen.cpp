//===- ParallelCodeGen.cpp - LLVM's work on several cores -----------------===//

#include "ParallelCodeGen.h"

#include "Bf16Selects.h"
#include "Diagnostics.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/SplitModule.h"

#include <thread>

using namespace mlir;

namespace mlir::fsdp {

LogicalResult writeObject(llvm::Module &module, llvm::TargetMachine &machine,
                          llvm::StringRef path) {
  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fail("cannot write " + path + ": " + ec.message());
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, out.os(), nullptr, llvm::CodeGenFileType::ObjectFile))
    return fail("the target cannot emit object files");
  codegen.run(module);
  out.keep();
  return success();
}

LogicalResult optimise(llvm::Module &module, llvm::TargetMachine &machine, unsigned optLevel) {
  module.setDataLayout(machine.createDataLayout());
  module.setTargetTriple(machine.getTargetTriple());
  if (llvm::Error error = makeOptimizingTransformer(optLevel, /*sizeLevel=*/0, &machine)(&module))
    return fail("LLVM optimisation failed: " + llvm::toString(std::move(error)));
  selectBf16AsIntegers(module);
  return success();
}

namespace {
/// One part of the module on its way to an object file.
struct Part {
  llvm::SmallVector<char, 0> bitcode;
  std::unique_ptr<llvm::TargetMachine> machine;
  std::string object;
  bool failed = false;
};
} // namespace

/// Runs on a thread of its own: everything it touches is its own.
static void compilePart(Part &part, unsigned optLevel) {
  llvm::LLVMContext context;
  llvm::Expected<std::unique_ptr<llvm::Module>> module = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(llvm::StringRef(part.bitcode.data(), part.bitcode.size()), "part"),
      context);
  if (!module) {
    part.failed =
        failed(fail("reading a part of the module back: " + llvm::toString(module.takeError())));
    return;
  }
  part.failed = failed(optimise(**module, *part.machine, optLevel)) ||
                failed(writeObject(**module, *part.machine, part.object));
}

FailureOr<llvm::SmallVector<std::string>> compileInParts(std::unique_ptr<llvm::Module> module,
                                                         const CPUTarget &target, unsigned optLevel,
                                                         unsigned parts) {
  std::vector<Part> work;
  if (parts <= 1) {
    work.emplace_back();
  } else {
    // Each part in bitcode, to be read into a context of its own: an LLVM
    // context is not shared between threads. Internal functions called from
    // another part become hidden external ones.
    llvm::SplitModule(*module, parts, [&](std::unique_ptr<llvm::Module> split) {
      work.emplace_back();
      llvm::raw_svector_ostream os(work.back().bitcode);
      llvm::WriteBitcodeToFile(*split, os);
    });
  }
  // Target machines and files are made here: target registration is not
  // thread-safe, and a failure stops before any thread starts.
  for (Part &part : work) {
    FailureOr<std::unique_ptr<llvm::TargetMachine>> machine = createCPUTargetMachine(target);
    if (failed(machine))
      return failure();
    part.machine = std::move(*machine);
    llvm::SmallString<128> path;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile("fsdpc", "o", path)) {
      (void)fail("cannot create a temporary object file: " + ec.message());
      return failure();
    }
    part.object = path.str().str();
  }

  if (work.size() == 1) {
    Part &only = work.front();
    only.failed = failed(optimise(*module, *only.machine, optLevel)) ||
                  failed(writeObject(*module, *only.machine, only.object));
  } else {
    module.reset();
    std::vector<std::thread> threads;
    for (Part &part : work)
      threads.emplace_back(compilePart, std::ref(part), optLevel);
    for (std::thread &thread : threads)
      thread.join();
  }

  llvm::SmallVector<std::string> objects;
  bool anyFailed = false;
  for (Part &part : work) {
    objects.push_back(part.object);
    anyFailed |= part.failed;
  }
  if (anyFailed) {
    for (const std::string &object : objects)
      llvm::sys::fs::remove(object);
    return failure();
  }
  return objects;
}

} // namespace mlir::fsdp
