//===- OutlineKernels.cpp - fsdp-outline-kernels: small functions for LLVM -===//
//
// As one function, a training step of hundreds of loop nests per layer costs
// LLVM time that grows with the square of its size (8 small Llama layers: 94 s
// at -O3). Each compute op of the step becomes a call of a function of its
// own, and ops identical up to the buffers they touch (every decoder block's)
// call the same function: LLVM optimises each distinct loop nest once, and the
// step is left a straight line of calls.
//
//===----------------------------------------------------------------------===//

#include "Analysis/ArenaAccesses.h"
#include "Utils/Outlining.h"
#include "Utils/StepFunction.h"
#include "fsdp/Codegen/Common/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPOUTLINEKERNELSPASS
#include "fsdp/Codegen/Common/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// A top-level op of the step that computes on buffers in loops of its own: a
/// linalg op, a copy, a loop (the scatter of an embedding gradient) or one of
/// the target's `launchOps` (named, so that this pass links no target's
/// dialect), whose results nothing uses.
bool isKernel(Operation &op, ArrayRef<std::string> launchOps) {
  if (!op.use_empty())
    return false;
  if (isa<linalg::LinalgOp, memref::CopyOp>(op) ||
      llvm::is_contained(launchOps, op.getName().getStringRef()))
    return true;
  return op.getNumRegions() > 0 && !isa<func::CallOp>(op);
}

/// A memref the outlined function can take as a plain pointer (the step's
/// calling convention): static sizes, strides and offset.
bool isBarePointerMemRef(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || !memref.hasStaticShape())
    return false;
  int64_t offset;
  SmallVector<int64_t> strides;
  if (failed(memref.getStridesAndOffset(strides, offset)))
    return false;
  return !ShapedType::isDynamic(offset) && llvm::none_of(strides, ShapedType::isDynamic);
}

/// Whether `value` is computed from constants alone (a launch's grid size):
/// the kernel computes it itself, and launches of one size share a function.
bool isComputedFromConstants(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  if (matchPattern(def, m_Constant()))
    return true;
  return isPure(def) && def->getNumRegions() == 0 &&
         llvm::all_of(def->getOperands(), isComputedFromConstants);
}

/// What a kernel computes itself rather than takes: what is computed from
/// constants, views whose layouts a pointer cannot carry, and the cast that
/// makes the compute stream a GPU launch's async token.
bool isClonedIntoKernel(Operation *def) {
  return llvm::all_of(def->getResults(), isComputedFromConstants) ||
         isa<UnrealizedConversionCastOp>(def) ||
         (isa<ViewLikeOpInterface>(def) && !isBarePointerMemRef(def->getResult(0).getType()));
}

/// The outlined kernels: a new one identical to one before is that one.
class KernelTable {
public:
  explicit KernelTable(ModuleOp module) : symbols(module) {}

  /// `candidate` (not yet in the module) named and inserted, or the identical
  /// kernel that already is (`candidate` is erased then).
  func::FuncOp unique(func::FuncOp candidate) {
    if (FunctionOpInterface known = kernels.find(candidate)) {
      candidate.erase();
      return cast<func::FuncOp>(known.getOperation());
    }
    candidate.setSymName(("fsdp_kernel_" + llvm::Twine(kernels.size())).str());
    symbols.insert(candidate);
    kernels.add(candidate);
    return candidate;
  }

private:
  SymbolTable symbols;
  IdenticalFunctions kernels;
};

struct FSDPOutlineKernelsPass
    : public fsdp::impl::FSDPOutlineKernelsPassBase<FSDPOutlineKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = requireStep(module, StepLevel::Runtime, getArgument());
    if (!step)
      return signalPassFailure();
    ArenaAccesses arena(step);
    KernelTable kernels(module);
    for (Operation &op : llvm::make_early_inc_range(step.getBody().front()))
      if (isKernel(op, *launchOps))
        outline(op, arena, kernels);
  }

  /// Replaces `op` by a call of its kernel function.
  void outline(Operation &op, const ArenaAccesses &arena, KernelTable &kernels) {
    OutlinedInterface interface(isClonedIntoKernel);
    for (Value operand : op.getOperands())
      interface.add(operand);
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(op.getRegions(), captured);
    for (Value value : captured)
      interface.add(value);
    ArrayRef<Value> arguments = interface.getArguments();

    MLIRContext *ctx = &getContext();
    Location loc = op.getLoc();
    OpBuilder b(ctx);
    auto type = FunctionType::get(ctx, ValueRange(arguments).getTypes(), {});
    auto function = func::FuncOp::create(b, loc, "kernel", type);
    keepOutlined(function);
    markNoAlias(function, arguments, arena);

    IRMapping mapping = interface.startBody(function, b);
    b.clone(op, mapping);
    func::ReturnOp::create(b, loc);

    func::FuncOp kernel = kernels.unique(function);
    OpBuilder caller(&op);
    func::CallOp::create(caller, loc, kernel, arguments);
    op.erase();
  }

  /// A buffer argument whose bytes no other argument touches is `noalias`:
  /// LLVM then keeps values in registers across stores and vectorises without
  /// run-time overlap checks, as it could when every buffer was a constant
  /// offset of the arena in one function. (The same buffer passed twice, as an
  /// op updating in place does, is one argument.)
  static void markNoAlias(func::FuncOp function, ArrayRef<Value> arguments,
                          const ArenaAccesses &arena) {
    SmallVector<std::optional<ArenaAccess>> bytes;
    for (Value argument : arguments)
      bytes.push_back(isa<MemRefType>(argument.getType()) ? arena.bytesOf(argument) : std::nullopt);
    for (auto [i, range] : llvm::enumerate(bytes)) {
      if (!range)
        continue;
      bool disjoint = llvm::all_of(llvm::enumerate(bytes), [&](auto other) {
        const std::optional<ArenaAccess> &theirs = other.value();
        return other.index() == i || !theirs || range->end <= theirs->begin ||
               theirs->end <= range->begin;
      });
      if (disjoint)
        function.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                            UnitAttr::get(function.getContext()));
    }
  }
};

} // namespace
