//===- InsertStreamEvents.cpp - fsdp-cuda-insert-stream-events -----------------===//
//
// On a GPU the step runs on three streams: compute, all-gather and
// reduce-scatter. Work on one stream is ordered; across streams only events
// order it. The buffer plan says which bytes every op touches, so the
// compiler knows every cross-stream hazard (a gather overwriting a region a
// kernel still reads, a reduce-scatter reading a gradient not yet computed)
// and emits exactly the events that order them: the runtime guesses nothing.
//
//===----------------------------------------------------------------------===//

#include "Analysis/ArenaAccesses.h"
#include "Utils/RuntimeABI.h"
#include "Utils/RuntimeCalls.h"
#include "Utils/StepFunction.h"
#include "fsdp/Codegen/CUDA/Passes.h"

#include "mlir/IR/Builders.h"

#include <array>

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPINSERTSTREAMEVENTSPASS
#include "fsdp/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

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
  SmallVector<ArenaAccess> accesses;
  int64_t event = -1;         // the event recorded right after it, if any
};

class StreamOrder {
public:
  StreamOrder(ModuleOp module, func::FuncOp step) : module(module), accesses(step) {}

  LogicalResult run(Block &body);

private:
  void orderAfterConflicts(Issued &next);
  int64_t eventAfter(Issued &earlier);

  ModuleOp module;
  ArenaAccesses accesses;
  std::vector<Issued> issued;
  std::array<Clock, kNumRuntimeStreams> known{};
  llvm::DenseMap<Operation *, size_t> startOf; // collective start -> its Issued
  int64_t nextEvent = 0;
};

/// `callee(first, second)`, for the runtime's two event calls (i32, i32).
void callEventFunction(OpBuilder &b, Location loc, ModuleOp module, StringRef callee,
                       int64_t first, int64_t second) {
  Type i32 = b.getI32Type();
  func::FuncOp function =
      declareRuntimeFunction(module, callee, FunctionType::get(b.getContext(), {i32, i32}, {}));
  func::CallOp::create(b, loc, function,
                       ValueRange{i32Constant(b, loc, first), i32Constant(b, loc, second)});
}

/// The event recorded on `earlier`'s stream right after it, created once.
int64_t StreamOrder::eventAfter(Issued &earlier) {
  if (earlier.event >= 0)
    return earlier.event;
  earlier.event = nextEvent++;
  OpBuilder b(earlier.op->getContext());
  b.setInsertionPointAfter(earlier.op);
  callEventFunction(b, earlier.op->getLoc(), module, kEventRecord, earlier.event,
                    earlier.stream);
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
    bool conflict = llvm::any_of(next.accesses, [&](const ArenaAccess &a) {
      return llvm::any_of(earlier.accesses, [&](const ArenaAccess &b) { return a.conflictsWith(b); });
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
  for (Issued *earlier : latest) {
    if (!earlier || coveredByAnother(earlier))
      continue;
    int64_t event = eventAfter(*earlier);
    callEventFunction(b, next.op->getLoc(), module, kStreamWaitEvent, next.stream, event);
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
    SmallVector<ArenaAccess> touched = accesses.of(&op);
    if (touched.empty())
      continue;
    Issued next{&op, ArenaAccesses::streamOf(&op), 0, {}, std::move(touched), -1};
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
    auto step = requireStep(module, StepLevel::Runtime, getArgument());
    if (!step)
      return signalPassFailure();
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
