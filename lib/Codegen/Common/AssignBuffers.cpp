//===- AssignBuffers.cpp - fsdp-assign-buffers: the static memory plan ----===//
//
// Every buffer of the step gets its bytes in the arena before anything runs,
// so a rank's peak memory is a number the compiler prints, and the trainer can
// check it against what the step really touches.
//
//===----------------------------------------------------------------------===//

#include "Analysis/BufferLiveness.h"
#include "Utils/RuntimeABI.h"
#include "Utils/StepFunction.h"
#include "fsdp/Codegen/Common/Passes.h"
#include "fsdp/IR/BufferKinds.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPASSIGNBUFFERSPASS
#include "fsdp/Codegen/Common/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// One buffer of the step: its size, the ops (by position in the step's
/// block) between which it is live, and where it goes.
struct Buffer {
  memref::AllocOp alloc;
  int64_t bytes = 0;
  int64_t first = 0, last = 0;
  int64_t offset = -1;
  StringRef kind;

  bool overlapsInTime(const Buffer &other) const {
    return first <= other.last && other.first <= last;
  }
};

/// Largest first, each at the lowest aligned offset free during its life.
int64_t placeBuffers(MutableArrayRef<Buffer> buffers) {
  SmallVector<Buffer *> order;
  for (Buffer &buffer : buffers)
    order.push_back(&buffer);
  llvm::stable_sort(order, [](Buffer *a, Buffer *b) { return a->bytes > b->bytes; });
  SmallVector<Buffer *> placed;
  int64_t peak = 0;
  for (Buffer *buffer : order) {
    SmallVector<Buffer *> conflicts;
    for (Buffer *other : placed)
      if (other->overlapsInTime(*buffer))
        conflicts.push_back(other);
    llvm::sort(conflicts, [](Buffer *a, Buffer *b) { return a->offset < b->offset; });
    int64_t offset = 0;
    for (Buffer *other : conflicts) {
      if (offset + buffer->bytes <= other->offset)
        break;
      offset =
          std::max<int64_t>(offset, llvm::alignTo(other->offset + other->bytes, kArenaAlignment));
    }
    buffer->offset = offset;
    peak = std::max(peak, offset + buffer->bytes);
    placed.push_back(buffer);
  }
  return peak;
}

/// What a buffer holds: its element type, or the one element type of the
/// typed views of its bytes (how the step lowering types them); `mixed`
/// when they differ.
std::string elementTypeName(memref::AllocOp alloc) {
  Type element = alloc.getType().getElementType();
  if (element.isInteger(8)) {
    element = Type();
    for (Operation *user : alloc->getUsers()) {
      auto view = dyn_cast<memref::ViewOp>(user);
      Type viewed = view ? view.getType().getElementType() : Type();
      if (!viewed || viewed.isInteger(8))
        continue;
      if (element && viewed != element)
        return "mixed";
      element = viewed;
    }
    if (!element)
      return "bytes";
  }
  std::string name;
  llvm::raw_string_ostream os(name);
  element.print(os);
  return name;
}

/// The most bytes live at one instant, by kind and by element type, and the
/// instant's total: a
/// lower bound of any placement, which the arena peak exceeds only by
/// fragmentation.
TransientPlanAttr peakBreakdown(MLIRContext *ctx, ArrayRef<Buffer> buffers, int64_t peak) {
  // Swept in time: the bytes live at each buffer's first instant, the
  // earliest instant with the most kept (buffers come in block order).
  SmallVector<std::pair<int64_t, int64_t>> ends; // (last + 1, bytes), by time
  for (const Buffer &buffer : buffers)
    ends.push_back({buffer.last + 1, buffer.bytes});
  llvm::sort(ends);
  int64_t busiest = 0, mostBytes = -1, live = 0;
  size_t ended = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    int64_t instant = buffers[i].first;
    for (; ended < ends.size() && ends[ended].first <= instant; ++ended)
      live -= ends[ended].second;
    live += buffers[i].bytes;
    // Every buffer starting at this instant counts before it is compared.
    if (i + 1 < buffers.size() && buffers[i + 1].first == instant)
      continue;
    if (live > mostBytes) {
      mostBytes = live;
      busiest = instant;
    }
  }
  llvm::StringMap<int64_t> bytes, dtypeBytes;
  int64_t count = 0;
  for (const Buffer &buffer : buffers)
    if (buffer.first <= busiest && busiest <= buffer.last) {
      bytes[buffer.kind] += buffer.bytes;
      dtypeBytes[elementTypeName(buffer.alloc)] += buffer.bytes;
      ++count;
    }
  Builder b(ctx);
  SmallVector<NamedAttribute> dtypes;
  for (const auto &[dtype, total] : dtypeBytes)
    dtypes.push_back(b.getNamedAttr(dtype, b.getI64IntegerAttr(total)));
  return TransientPlanAttr::get(
      ctx, peak, std::max<int64_t>(mostBytes, 0), static_cast<int64_t>(buffers.size()), count,
      bytes.lookup(kGatheredKind), bytes.lookup(kGradientKind), bytes.lookup(kCollectiveKind),
      bytes.lookup(kGradientShardKind), bytes.lookup(""), b.getDictionaryAttr(dtypes));
}

/// The manifest with the arena's size, its transient plan and where each
/// unit's gradient shard lies (`gradOffsets`, by unit).
ManifestAttr withBufferPlan(ManifestAttr manifest, int64_t arenaBytes, TransientPlanAttr plan,
                            const llvm::StringMap<int64_t> &gradOffsets) {
  SmallVector<ManifestUnitAttr> units;
  for (ManifestUnitAttr unit : manifest.getUnits()) {
    auto offset = gradOffsets.find(unit.getName());
    units.push_back(offset == gradOffsets.end() ? unit : unit.withGradOffset(offset->second));
  }
  return manifest.withBufferPlan(arenaBytes, plan, units);
}

struct FSDPAssignBuffersPass
    : public fsdp::impl::FSDPAssignBuffersPassBase<FSDPAssignBuffersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = requireStep(module, StepLevel::Runtime, getArgument());
    if (!step)
      return signalPassFailure();
    auto manifest = module->getAttrOfType<ManifestAttr>(FSDPDialect::getManifestAttrName());
    if (!manifest) {
      module.emitError("fsdp-assign-buffers needs the manifest of convert-fsdp-to-runtime");
      return signalPassFailure();
    }
    if (!step.getBody().hasOneBlock()) {
      step.emitError("fsdp-assign-buffers expects the step as one block (run it before "
                     "lowering to loops)");
      return signalPassFailure();
    }
    Block &body = step.getBody().front();
    BlockArgument arena = body.getArgument(0);
    int64_t persistent = llvm::cast<MemRefType>(arena.getType()).getDimSize(0);

    StepPositions positions(body);
    SmallVector<Buffer> buffers;
    WalkResult walk = step.walk([&](memref::AllocOp alloc) {
      MemRefType type = alloc.getType();
      // A buffer of a loop's body (the attention's key blocks) lives within
      // an iteration, and every iteration reuses its bytes: One-Shot
      // Bufferize carries a loop's values in the buffers of its inits, so
      // none of the body's buffers outlives its iteration.
      bool inLoops = true;
      for (Operation *parent = alloc->getParentOp(); parent && parent != step;
           parent = parent->getParentOp())
        inLoops &= isa<scf::ForOp>(parent);
      if (!inLoops || !type.hasStaticShape() || !type.getLayout().isIdentity() ||
          type.getMemorySpace()) {
        alloc.emitOpError("is not a static buffer of the step's block or of a loop in it; "
                          "the arena plan cannot place it");
        return WalkResult::interrupt();
      }
      Buffer buffer;
      buffer.alloc = alloc;
      buffer.bytes = type.getNumElements() *
                     llvm::divideCeil(type.getElementTypeBitWidth(), 8);
      buffer.first = positions.position.lookup(alloc);
      buffer.last = positions.lastUse(alloc);
      if (auto kind = alloc->getAttrOfType<StringAttr>(kBufferKindAttr))
        buffer.kind = kind.getValue();
      // A gradient shard is the step's result for the trainer to read after
      // it (--trace-state): nothing may take its bytes before the step ends.
      if (alloc->hasAttr(kGradientOfAttr))
        buffer.last = positions.position.lookup(body.getTerminator());
      buffers.push_back(buffer);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    int64_t peak = placeBuffers(buffers);
    int64_t arenaBytes = persistent + peak;
    // Read from the allocations, which the placement below replaces.
    TransientPlanAttr breakdown = peakBreakdown(&getContext(), buffers, peak);
    llvm::StringMap<int64_t> gradOffsets;
    for (const Buffer &buffer : buffers)
      if (auto unit = buffer.alloc->getAttrOfType<StringAttr>(kGradientOfAttr))
        gradOffsets[unit.getValue()] = persistent + buffer.offset;
    OpBuilder b(&getContext());
    for (Buffer &buffer : buffers) {
      b.setInsertionPoint(buffer.alloc);
      Location loc = buffer.alloc.getLoc();
      Value offset = arith::ConstantIndexOp::create(b, loc, persistent + buffer.offset);
      Operation *view = memref::ViewOp::create(b, loc, buffer.alloc.getType(), arena, offset,
                                               ValueRange{});
      view->setAttr(kBufferKindAttr,
                    b.getStringAttr(buffer.kind.empty() ? StringRef(kActivationKind) : buffer.kind));
      for (Operation *user : llvm::make_early_inc_range(buffer.alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->erase();
      buffer.alloc.replaceAllUsesWith(view->getResult(0));
      buffer.alloc.erase();
    }
    arena.setType(MemRefType::get({arenaBytes}, b.getI8Type()));
    step.setFunctionType(FunctionType::get(&getContext(), body.getArgumentTypes(),
                                           step.getResultTypes()));
    module->setAttr(FSDPDialect::getManifestAttrName(),
                    withBufferPlan(manifest, arenaBytes, breakdown, gradOffsets));
  }
};

} // namespace
