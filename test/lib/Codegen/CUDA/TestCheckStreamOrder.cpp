//===- TestCheckStreamOrder.cpp - no unordered cross-stream access (test) -===//
//
// An independent check of fsdp-cuda-insert-stream-events: from the step's final
// calls alone (stream order, fsdprt_event_record, fsdprt_stream_wait_event,
// fsdprt_wait), build the happens-before graph of the three streams and
// verify that every two ops on different streams that touch overlapping
// arena bytes, one writing, are ordered by a path in it. The pass computes
// the same thing with vector clocks; this one with plain reachability, and
// reports each race it finds.
//
//===----------------------------------------------------------------------===//

#include "TestPasses.h"

#include "Analysis/ArenaAccesses.h"
#include "Utils/RuntimeABI.h"
#include "Utils/StepFunction.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/BitVector.h"

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// An op of the step that takes part in ordering.
struct Node {
  Operation *op;
  int stream;
  SmallVector<ArenaAccess> accesses; // empty for event and wait calls
  SmallVector<size_t> after;         // nodes of other streams it directly follows
};

std::optional<int64_t> constantArg(func::CallOp call, unsigned i) {
  return getConstantIntValue(call.getArgOperands()[i]);
}

LogicalResult checkStep(func::FuncOp step) {
  ArenaAccesses arena(step);
  std::vector<Node> nodes;
  llvm::DenseMap<int64_t, size_t> recorded;       // event -> its record node
  llvm::DenseMap<Operation *, size_t> collective; // start -> its node
  for (Operation &op : step.getBody().front().without_terminator()) {
    auto call = dyn_cast<func::CallOp>(op);
    StringRef callee = call ? call.getCallee() : "";
    if (callee == kEventRecord || callee == kStreamWaitEvent) {
      std::optional<int64_t> first = constantArg(call, 0), second = constantArg(call, 1);
      if (!first || !second)
        return call.emitOpError("expected constant stream and event");
      int64_t event = callee == kEventRecord ? *first : *second;
      int stream = static_cast<int>(callee == kEventRecord ? *second : *first);
      Node node{call, stream, {}, {}};
      if (callee == kStreamWaitEvent) {
        auto it = recorded.find(event);
        if (it == recorded.end())
          return call.emitOpError("waits for event ") << event << ", never recorded before";
        node.after.push_back(it->second);
      } else {
        recorded[event] = nodes.size();
      }
      nodes.push_back(std::move(node));
      continue;
    }
    if (callee == kWait) {
      auto it = collective.find(call.getArgOperands()[0].getDefiningOp());
      if (it == collective.end())
        return call.emitOpError("waits for a handle no collective returned");
      nodes.push_back({call, static_cast<int>(RuntimeStream::Compute), {}, {it->second}});
      continue;
    }
    SmallVector<ArenaAccess> accesses = arena.of(&op);
    if (accesses.empty())
      continue;
    int stream = ArenaAccesses::streamOf(&op);
    if (stream != static_cast<int>(RuntimeStream::Compute))
      collective[&op] = nodes.size();
    nodes.push_back({&op, stream, std::move(accesses), {}});
  }

  // before[n]: the nodes that complete before node n starts. Edges only go
  // forward in program order: one pass computes the transitive closure.
  std::vector<llvm::BitVector> before(nodes.size(), llvm::BitVector(nodes.size()));
  std::array<std::optional<size_t>, kNumRuntimeStreams> last;
  for (size_t n = 0; n < nodes.size(); ++n) {
    SmallVector<size_t> predecessors(nodes[n].after);
    if (last[nodes[n].stream])
      predecessors.push_back(*last[nodes[n].stream]);
    for (size_t p : predecessors) {
      before[n] |= before[p];
      before[n].set(p);
    }
    last[nodes[n].stream] = n;
  }

  auto firstConflict = [](const Node &x, const Node &y) -> std::optional<ArenaAccess> {
    for (const ArenaAccess &a : x.accesses)
      for (const ArenaAccess &b : y.accesses)
        if (a.conflictsWith(b))
          return ArenaAccess{std::max(a.begin, b.begin), std::min(a.end, b.end), true};
    return std::nullopt;
  };
  bool raced = false;
  for (size_t o = 0; o < nodes.size(); ++o)
    for (size_t p = 0; p < o; ++p) {
      if (nodes[p].stream == nodes[o].stream || before[o].test(p))
        continue;
      if (std::optional<ArenaAccess> bytes = firstConflict(nodes[o], nodes[p])) {
        InFlightDiagnostic diag = nodes[o].op->emitError()
                                  << "on stream " << nodes[o].stream << " touches arena bytes ["
                                  << bytes->begin << ", " << bytes->end
                                  << ") unordered with stream " << nodes[p].stream;
        diag.attachNote(nodes[p].op->getLoc()) << "the earlier access";
        raced = true;
      }
    }
  return failure(raced);
}

struct TestCheckStreamOrderPass
    : public PassWrapper<TestCheckStreamOrderPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestCheckStreamOrderPass)

  StringRef getArgument() const final { return "test-fsdp-check-stream-order"; }
  StringRef getDescription() const final {
    return "Test only: reports ops of the step on different streams that touch the same "
           "arena bytes without an event or wait ordering them";
  }

  void runOnOperation() override {
    auto step = requireStep(getOperation(), StepLevel::Runtime, getArgument());
    if (!step || failed(checkStep(step)))
      signalPassFailure();
  }
};

} // namespace

void mlir::fsdp::test::registerTestCheckStreamOrderPass() {
  PassRegistration<TestCheckStreamOrderPass>();
}
