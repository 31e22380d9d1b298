//===- PackFatbin.cpp - fsdp-cuda-pack-fatbin: every architecture in one image -===//
//
// gpu-module-to-binary compiles a module once per #nvvm.target, but the
// upstream offloading handler embeds one object. A trainer must run on any of
// the architectures it was compiled for, so the cubins go into one fat binary
// (the CUDA toolkit's own format and tool), from which the driver loads the
// code of the device it finds.
//
//===----------------------------------------------------------------------===//

#include "fsdp/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPPACKFATBINPASS
#include "fsdp/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// The ELF section cuobjdump and the CUDA tools look for fat binaries in.
constexpr StringLiteral kFatbinSection = ".nv_fatbin";

/// "sm_90" -> "90" (also "sm_90a" -> "90a"), as fatbinary's `sm=` wants it.
std::optional<StringRef> smVersion(gpu::ObjectAttr object) {
  auto target = llvm::dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
  if (!target || !target.getChip().starts_with("sm_"))
    return std::nullopt;
  return target.getChip().drop_front(3);
}

class FatbinPacker {
public:
  explicit FatbinPacker(StringRef toolkit) {
    llvm::sys::path::append(tool, toolkit, "bin", "fatbinary");
  }

  /// One fatbin holding every cubin of `binary`.
  FailureOr<std::string> pack(gpu::BinaryOp binary);

private:
  SmallString<128> tool;
};

FailureOr<std::string> FatbinPacker::pack(gpu::BinaryOp binary) {
  // At the binary's location, without printing the op: it holds megabytes.
  auto fail = [&](const llvm::Twine &message) -> FailureOr<std::string> {
    emitError(binary.getLoc()) << "the GPU binary @" << binary.getName() << ": " << message;
    return failure();
  };
  if (!llvm::sys::fs::can_execute(tool))
    return fail("needs the CUDA toolkit's fatbinary, not found at " + tool);
  SmallVector<std::string> args = {tool.str().str(), "--64"};
  SmallVector<std::unique_ptr<llvm::FileRemover>> removers;
  for (Attribute attr : binary.getObjectsAttr()) {
    auto object = llvm::cast<gpu::ObjectAttr>(attr);
    std::optional<StringRef> sm = smVersion(object);
    if (!sm || object.getFormat() != gpu::CompilationTarget::Binary)
      return fail("expected cubins (`bin` objects) of #nvvm.target sm_* targets");
    SmallString<128> cubin;
    int fd;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile("fsdp-kernels", "cubin", fd,
                                                                cubin))
      return fail("cannot create a temporary file: " + ec.message());
    removers.push_back(std::make_unique<llvm::FileRemover>(cubin));
    {
      llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
      out << object.getObject().getValue();
    }
    args.push_back(("--image3=kind=elf,sm=" + *sm + ",file=" + cubin).str());
  }
  SmallString<128> fatbin;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("fsdp-kernels", "fatbin", fatbin))
    return fail("cannot create a temporary file: " + ec.message());
  llvm::FileRemover removeFatbin(fatbin);
  args.push_back(("--create=" + fatbin).str());

  SmallVector<StringRef> argRefs(args.begin(), args.end());
  std::string error;
  if (llvm::sys::ExecuteAndWait(tool, argRefs, std::nullopt, {}, 0, 0, &error) != 0)
    return fail("fatbinary failed" + (error.empty() ? "" : ": " + error));
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> packed =
      llvm::MemoryBuffer::getFile(fatbin, /*IsText=*/false);
  if (!packed)
    return fail("cannot read the fatbin: " + packed.getError().message());
  return (*packed)->getBuffer().str();
}

struct FSDPPackFatbinPass : public fsdp::impl::FSDPPackFatbinPassBase<FSDPPackFatbinPass> {
  using Base::Base;

  void runOnOperation() override {
    FatbinPacker packer(toolkit);
    MLIRContext *ctx = &getContext();
    WalkResult result = getOperation().walk([&](gpu::BinaryOp binary) {
      if (binary.getObjectsAttr().empty())
        return WalkResult::advance();
      FailureOr<std::string> fatbin = packer.pack(binary);
      if (failed(fatbin))
        return WalkResult::interrupt();
      // The first target stands for all: the handler only embeds the bytes.
      auto first = llvm::cast<gpu::ObjectAttr>(binary.getObjectsAttr()[0]);
      auto properties = DictionaryAttr::get(
          ctx, {NamedAttribute(StringAttr::get(ctx, "section"), StringAttr::get(ctx, kFatbinSection))});
      auto object = gpu::ObjectAttr::get(ctx, first.getTarget(), gpu::CompilationTarget::Fatbin,
                                         StringAttr::get(ctx, *fatbin), properties,
                                         /*kernels=*/nullptr);
      binary.setObjectsAttr(ArrayAttr::get(ctx, {object}));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
