//===- InsertStreamEvents.cpp - fsdp-insert-stream-events -----------------===//
//
// On a GPU the step runs on three streams: compute, all-gather and
// reduce-scatter. Work on one stream is ordered; across streams only events
// order it. The buffer plan says which bytes every op touches, so the
// compiler knows every cross-stream hazard (a gather overwriting a region a
// kernel still reads, a reduce-scatter reading a gradient not yet computed)
// and emits exactly the events that order them: the runtime guesses nothing.
//
//===----------------------------------------------------------------------===//

#include "fsdp/Conversion/RuntimeABI.h"
#include "fsdp/Transforms/Passes.h"
#include "fsdp/Utils/RuntimeCalls.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <array>

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPINSERTSTREAMEVENTSPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// Bytes [begin, end) of the arena an op reads, or reads and writes.
struct Access {
  int64_t begin = 0, end = 0;
  bool write = false;

  bool conflictsWith(const Access &other) const {
    return begin < other.end && other.begin < end && (write || other.write);
  }
};

/// For each stream, how many of its ops are known to be complete: a vector
/// clock. Stream s has waited for the first clock[t] ops of stream t.
using Clock = std::array<int64_t, kNumRuntimeStreams>;

void mergeInto(Clock &into, const Clock &from) {
  for (int s = 0; s < kNumRuntimeStreams; ++s)
    into[s] = std::max(into[s], from[s]);
}

/// An op of the step issued on a stream, as far as ordering is concerned.
struct Issued {
  Operation *op;
  int stream;
  int64_t index;              // 1-based position on its stream
  Clock clock;                // what its stream had waited for, itself included
  SmallVector<Access> accesses;
  int64_t event = -1;         // the event recorded right after it, if any
};

class StreamOrder {
public:
  StreamOrder(ModuleOp module, func::FuncOp step)
      : module(module), arena(step.getArgument(0)),
        arenaBytes(llvm::cast<MemRefType>(arena.getType()).getNumElements()) {}

  LogicalResult run(Block &body);

private:
  std::optional<Access> range(Value value, bool write) const;
  void addAccess(SmallVector<Access> &accesses, Value value, bool write) const;
  SmallVector<Access> accessesOf(Operation *op) const;
  int streamOf(Operation *op) const;
  void orderAfterConflicts(Issued &next);
  int64_t eventAfter(Issued &earlier);

  ModuleOp module;
  Value arena;
  int64_t arenaBytes;
  std::vector<Issued> issued;
  std::array<Clock, kNumRuntimeStreams> known{};
  llvm::DenseMap<Operation *, size_t> startOf; // collective start -> its Issued
  int64_t nextEvent = 0;
};

/// The arena bytes behind a buffer or an address derived from one; the whole
/// arena when the derivation is not understood (always safe: it can only add
/// waits).
std::optional<Access> StreamOrder::range(Value value, bool write) const {
  Access whole{0, arenaBytes, write};
  if (value == arena)
    return whole;
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
    std::optional<Access> source = range(view.getSource(), write);
    std::optional<int64_t> shift = getConstantIntValue(view.getByteShift());
    auto type = llvm::cast<MemRefType>(view.getType());
    if (!source || !shift || !type.hasStaticShape())
      return source;
    int64_t begin = source->begin + *shift;
    return Access{begin, begin + type.getNumElements() * (type.getElementTypeBitWidth() / 8),
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

void StreamOrder::addAccess(SmallVector<Access> &accesses, Value value, bool write) const {
  if (std::optional<Access> access = range(value, write))
    accesses.push_back(*access);
}

/// What `op` (an op of the step's body) reads and writes, its nested ops
/// included.
SmallVector<Access> StreamOrder::accessesOf(Operation *op) const {
  SmallVector<Access> accesses;
  op->walk([&](Operation *nested) {
    if (auto call = dyn_cast<func::CallOp>(nested)) {
      StringRef callee = call.getCallee();
      SmallVector<Value> pointers;
      for (Value arg : call.getArgOperands())
        if (llvm::isa<LLVM::LLVMPointerType>(arg.getType()))
          pointers.push_back(arg);
      if (callee == kAllGatherStart || callee == kReduceScatterStart) {
        // (source, destination, ...)
        addAccess(accesses, pointers[0], false);
        addAccess(accesses, pointers[1], true);
      } else if (callee == kGemm || callee == kBatchedGemm) {
        // A and B read, C accumulated into.
        addAccess(accesses, pointers[0], false);
        addAccess(accesses, pointers[1], false);
        addAccess(accesses, pointers[2], true);
      } else if (callee == kReadF32) {
        addAccess(accesses, pointers[0], false);
      } else {
        for (Value pointer : pointers)
          addAccess(accesses, pointer, true);
      }
    } else if (auto linalgOp = dyn_cast<linalg::LinalgOp>(nested)) {
      for (Value input : linalgOp.getDpsInputs())
        addAccess(accesses, input, false);
      for (Value init : linalgOp.getDpsInits())
        addAccess(accesses, init, true);
    } else if (auto copy = dyn_cast<memref::CopyOp>(nested)) {
      addAccess(accesses, copy.getSource(), false);
      addAccess(accesses, copy.getTarget(), true);
    } else if (auto load = dyn_cast<memref::LoadOp>(nested)) {
      addAccess(accesses, load.getMemRef(), false);
    } else if (auto store = dyn_cast<memref::StoreOp>(nested)) {
      addAccess(accesses, store.getMemRef(), true);
    }
  });
  return accesses;
}

/// The stream an op of the step that touches memory runs on.
int StreamOrder::streamOf(Operation *op) const {
  if (auto call = dyn_cast<func::CallOp>(op)) {
    StringRef callee = call.getCallee();
    if (callee == kAllGatherStart)
      return static_cast<int>(RuntimeStream::AllGather);
    if (callee == kReduceScatterStart || callee == kAllReduceStart)
      return static_cast<int>(RuntimeStream::ReduceScatter);
  }
  return static_cast<int>(RuntimeStream::Compute);
}

/// The event recorded on `earlier`'s stream right after it, created once.
int64_t StreamOrder::eventAfter(Issued &earlier) {
  if (earlier.event >= 0)
    return earlier.event;
  earlier.event = nextEvent++;
  OpBuilder b(earlier.op->getContext());
  b.setInsertionPointAfter(earlier.op);
  Location loc = earlier.op->getLoc();
  Type i32 = b.getI32Type();
  func::FuncOp record = declareRuntimeFunction(
      module, kEventRecord, FunctionType::get(b.getContext(), {i32, i32}, {}));
  func::CallOp::create(b, loc, record,
                       ValueRange{i32Constant(b, loc, earlier.event),
                                  i32Constant(b, loc, earlier.stream)});
  return earlier.event;
}

/// Makes `next`'s stream wait for the latest conflicting op of every other
/// stream it is not yet ordered after.
void StreamOrder::orderAfterConflicts(Issued &next) {
  Clock &mine = known[next.stream];
  std::array<Issued *, kNumRuntimeStreams> latest{};
  for (Issued &earlier : llvm::reverse(issued)) {
    int t = earlier.stream;
    if (t == next.stream || latest[t] || earlier.index <= mine[t])
      continue;
    bool conflict = llvm::any_of(next.accesses, [&](const Access &a) {
      return llvm::any_of(earlier.accesses, [&](const Access &b) { return a.conflictsWith(b); });
    });
    if (conflict)
      latest[t] = &earlier;
  }
  // Waiting for one op also waits for everything its stream had waited for.
  auto coveredByAnother = [&](Issued *candidate) {
    return llvm::any_of(latest, [&](Issued *other) {
      return other && other != candidate &&
             other->clock[candidate->stream] >= candidate->index;
    });
  };
  OpBuilder b(next.op);
  Location loc = next.op->getLoc();
  Type i32 = b.getI32Type();
  for (Issued *earlier : latest) {
    if (!earlier || coveredByAnother(earlier))
      continue;
    int64_t event = eventAfter(*earlier);
    func::FuncOp wait = declareRuntimeFunction(
        module, kStreamWaitEvent, FunctionType::get(b.getContext(), {i32, i32}, {}));
    func::CallOp::create(b, loc, wait,
                         ValueRange{i32Constant(b, loc, next.stream), i32Constant(b, loc, event)});
    mergeInto(mine, earlier->clock);
  }
}

LogicalResult StreamOrder::run(Block &body) {
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    if (auto call = dyn_cast<func::CallOp>(op); call && call.getCallee() == kWait) {
      // The compute stream waits for the collective (the runtime's event).
      Operation *start = call.getArgOperands()[0].getDefiningOp();
      auto it = start ? startOf.find(start) : startOf.end();
      if (it == startOf.end())
        return call.emitOpError("waits for a handle that no collective start returned");
      mergeInto(known[static_cast<int>(RuntimeStream::Compute)], issued[it->second].clock);
      continue;
    }
    SmallVector<Access> accesses = accessesOf(&op);
    if (accesses.empty())
      continue;
    Issued next{&op, streamOf(&op), 0, {}, std::move(accesses), -1};
    orderAfterConflicts(next);
    Clock &clock = known[next.stream];
    next.index = ++clock[next.stream];
    next.clock = clock;
    if (next.stream != static_cast<int>(RuntimeStream::Compute))
      startOf[&op] = issued.size();
    issued.push_back(std::move(next));
  }
  if (nextEvent > kMaxRuntimeEvents)
    return emitError(body.getParentOp()->getLoc())
           << "the step needs " << nextEvent << " events, more than the runtime's "
           << kMaxRuntimeEvents;
  return success();
}

struct FSDPInsertStreamEventsPass
    : public fsdp::impl::FSDPInsertStreamEventsPassBase<FSDPInsertStreamEventsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>(kStepFunction);
    if (!step || step.isExternal())
      return;
    if (step.getNumArguments() == 0 ||
        !llvm::isa<MemRefType>(step.getArgument(0).getType()) ||
        !llvm::cast<MemRefType>(step.getArgument(0).getType()).hasStaticShape()) {
      step.emitOpError("expected the arena, a static byte buffer, as first argument");
      return signalPassFailure();
    }
    StreamOrder order(module, step);
    if (failed(order.run(step.getBody().front())))
      signalPassFailure();
  }
};

} // namespace
