//===- MemoryBudget.cpp - does a plan fit a rank's memory? ----------------===//

#include "Planning/MemoryBudget.h"
#include "Utils/ByteCounts.h"

#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::fsdp;

void mlir::fsdp::printMemoryBreakdown(llvm::raw_ostream &os, const PlanEvaluation &plan,
                                      const MemoryBudget &budget) {
  const ArenaFigures &arena = plan.arena;
  auto line = [&](StringRef what, int64_t bytes) {
    os << llvm::format("  %-52s%20s  %8.2f GiB\n", what.str().c_str(),
                       groupedBytes(bytes).c_str(), gibibytes(bytes));
  };
  line("sharded state and inputs (persistent)", arena.persistentBytes);
  line("activations and temporaries at the peak", arena.activations);
  line("gathered parameters at the peak", arena.gathered);
  line("flat gradients at the peak", arena.gradients);
  line("gradient shards at the peak", arena.gradientShards);
  line("= planned arena", arena.arenaBytes);
  line("runtime: context", budget.runtime.context);
  line("runtime: collective buffers", budget.runtime.collectives);
  line("runtime: library workspaces", budget.runtime.workspace);
  line("= needed per rank", budget.needed(plan));
  line("budget (" + budget.origin + ")", budget.deviceBytes);
}
