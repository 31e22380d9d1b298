//===- ArenaAccesses.cpp - the arena bytes each op of the step touches ----===//

#include "Analysis/ArenaAccesses.h"

#include "Utils/RuntimeABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::fsdp;

ArenaAccesses::ArenaAccesses(func::FuncOp step)
    : arena(step.getArgument(0)),
      arenaBytes(llvm::cast<MemRefType>(arena.getType()).getNumElements()) {
  // offload = optimizer: a host arena follows the arena.
  if (step.getNumArguments() > 1 && llvm::isa<MemRefType>(step.getArgument(1).getType()))
    hostArena = step.getArgument(1);
}

std::optional<ArenaSpan> mlir::fsdp::arenaSpanOf(Value value, Value arena, int64_t arenaBytes) {
  if (value == arena)
    return ArenaSpan{0, ArenaAccess{0, arenaBytes}};
  Operation *def = value.getDefiningOp();
  if (auto view = llvm::dyn_cast_or_null<memref::ViewOp>(def)) {
    std::optional<ArenaSpan> source = arenaSpanOf(view.getSource(), arena, arenaBytes);
    std::optional<int64_t> shift = getConstantIntValue(view.getByteShift());
    if (!source || !shift)
      return std::nullopt;
    ArenaSpan span{source->pointer + *shift, std::nullopt};
    auto type = llvm::cast<MemRefType>(view.getType());
    if (source->bytes && type.hasStaticShape()) {
      int64_t elementBytes = llvm::divideCeil(type.getElementTypeBitWidth(), 8);
      span.bytes = ArenaAccess{span.pointer, span.pointer + type.getNumElements() * elementBytes};
    }
    return span;
  }
  // The same pointer, over bytes of the source.
  if (llvm::isa_and_present<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
                            memref::CastOp>(def))
    return arenaSpanOf(def->getOperand(0), arena, arenaBytes);
  // The same pointer, over any bytes.
  if (llvm::isa_and_present<memref::ReinterpretCastOp>(def)) {
    std::optional<ArenaSpan> span = arenaSpanOf(def->getOperand(0), arena, arenaBytes);
    if (span)
      span->bytes = std::nullopt;
    return span;
  }
  return std::nullopt;
}

/// The arena bytes behind a buffer or an address derived from one; the whole
/// arena when the derivation is not understood (always safe: it can only add
/// waits).
std::optional<ArenaAccess> ArenaAccesses::range(Value value, bool write) const {
  ArenaAccess whole{0, arenaBytes, write};
  if (value == arena)
    return whole;
  // Host memory: the host's program order orders it.
  if (hostArena && value == hostArena)
    return std::nullopt;
  if (auto arg = llvm::dyn_cast<BlockArgument>(value)) {
    // The memref a loop carries is its initial value.
    if (auto loop = llvm::dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp()))
      if (OpOperand *init = loop.getTiedLoopInit(arg))
        return range(init->get(), write);
    return whole;
  }
  Operation *def = value.getDefiningOp();
  if (auto loop = llvm::dyn_cast<scf::ForOp>(def))
    return range(loop.getInits()[llvm::cast<OpResult>(value).getResultNumber()], write);
  if (auto view = llvm::dyn_cast<memref::ViewOp>(def)) {
    std::optional<ArenaAccess> source = range(view.getSource(), write);
    std::optional<int64_t> shift = getConstantIntValue(view.getByteShift());
    auto type = llvm::cast<MemRefType>(view.getType());
    if (!source || !shift || !type.hasStaticShape())
      return source;
    int64_t begin = source->begin + *shift;
    return ArenaAccess{begin, begin + type.getNumElements() * (type.getElementTypeBitWidth() / 8),
                  write};
  }
  if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp, memref::SubViewOp, memref::CastOp,
          memref::ReinterpretCastOp, memref::ExtractAlignedPointerAsIndexOp,
          memref::ExtractStridedMetadataOp, arith::IndexCastOp, LLVM::IntToPtrOp>(def))
    return range(def->getOperand(0), write);
  if (auto add = llvm::dyn_cast<arith::AddIOp>(def)) {
    // An address: a buffer's base plus its offset (fsdp::bufferAddress).
    for (Value operand : add->getOperands())
      if (!operand.getDefiningOp<arith::ConstantOp>() && !operand.getDefiningOp<arith::MulIOp>())
        return range(operand, write);
    return whole;
  }
  // Scalars and values not in memory.
  if (!llvm::isa<MemRefType, LLVM::LLVMPointerType>(value.getType()))
    return std::nullopt;
  return whole;
}

void ArenaAccesses::add(SmallVector<ArenaAccess> &accesses, Value value, bool write) const {
  if (std::optional<ArenaAccess> access = range(value, write))
    accesses.push_back(*access);
}

void mlir::fsdp::forEachMemRefAccess(Operation *op, function_ref<void(Value, bool)> fn) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return;
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  for (const MemoryEffects::EffectInstance &effect : instances) {
    Value value = effect.getValue();
    if (value && isa<MemRefType>(value.getType()) &&
        isa<MemoryEffects::Read, MemoryEffects::Write>(effect.getEffect()))
      fn(value, isa<MemoryEffects::Write>(effect.getEffect()));
  }
}

/// What `op` (an op of the step's body) reads and writes, its nested ops
/// included.
SmallVector<ArenaAccess> ArenaAccesses::of(Operation *op) const {
  SmallVector<ArenaAccess> accesses;
  op->walk([&](Operation *nested) {
    if (auto call = dyn_cast<func::CallOp>(nested)) {
      StringRef callee = call.getCallee();
      SmallVector<Value> pointers;
      for (Value arg : call.getArgOperands())
        if (llvm::isa<LLVM::LLVMPointerType>(arg.getType()))
          pointers.push_back(arg);
      if (callee == kAllGatherStart || callee == kReduceScatterStart) {
        // (source, destination, ...)
        add(accesses, pointers[0], false);
        add(accesses, pointers[1], true);
      } else if (callee == kCopyToHostStart || callee == kCopyToDeviceStart) {
        // (destination, source, bytes): one side is the host arena.
        add(accesses, pointers[0], true);
        add(accesses, pointers[1], false);
      } else if (isGemmCallee(callee)) {
        // A and B read, C accumulated into, the bias (if any) read.
        add(accesses, pointers[0], false);
        add(accesses, pointers[1], false);
        add(accesses, pointers[2], true);
        if (pointers.size() == 4)
          add(accesses, pointers[3], false);
      } else if (callee == kAttentionBF16 || callee == kAttentionGradBF16) {
        // The operands read (3 forward, 6 backward), the results and the
        // workspace written.
        size_t reads = callee == kAttentionBF16 ? 3 : 6;
        for (auto [i, pointer] : llvm::enumerate(pointers))
          add(accesses, pointer, i >= reads);
      } else {
        for (Value pointer : pointers)
          add(accesses, pointer, true);
      }
    } else if (auto linalgOp = dyn_cast<linalg::LinalgOp>(nested)) {
      for (Value input : linalgOp.getDpsInputs())
        add(accesses, input, false);
      for (Value init : linalgOp.getDpsInits())
        add(accesses, init, true);
    } else if (auto copy = dyn_cast<memref::CopyOp>(nested)) {
      add(accesses, copy.getSource(), false);
      add(accesses, copy.getTarget(), true);
    } else {
      // A load or a store, of an element or a vector (a GPU kernel's).
      forEachMemRefAccess(nested,
                          [&](Value memref, bool write) { add(accesses, memref, write); });
    }
  });
  return accesses;
}

/// The stream an op of the step that touches memory runs on.
int ArenaAccesses::streamOf(Operation *op) {
  if (auto call = dyn_cast<func::CallOp>(op)) {
    StringRef callee = call.getCallee();
    // The tensor group's collectives, of every kind, on the tensor stream.
    std::optional<unsigned> group = collectiveGroupOperand(callee);
    if (group && *group < call.getNumOperands() &&
        getConstantIntValue(call.getOperand(*group)) == FSDPRT_GROUP_TENSOR)
      return static_cast<int>(RuntimeStream::Tensor);
    if (callee == kAllGatherStart)
      return static_cast<int>(RuntimeStream::AllGather);
    if (callee == kReduceScatterStart || callee == kAllReduceStart)
      return static_cast<int>(RuntimeStream::ReduceScatter);
    if (callee == kCopyToHostStart || callee == kCopyToDeviceStart)
      return static_cast<int>(RuntimeStream::Copy);
  }
  return static_cast<int>(RuntimeStream::Compute);
}

