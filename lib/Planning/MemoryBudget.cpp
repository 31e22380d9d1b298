//===- MemoryBudget.cpp - does a plan fit a rank's memory? ----------------===//

#include "fsdp/Planning/MemoryBudget.h"

#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::fsdp;

std::string mlir::fsdp::groupedBytes(int64_t bytes) {
  std::string digits = std::to_string(bytes < 0 ? -bytes : bytes), text;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      text += ',';
    text += digits[i];
  }
  return (bytes < 0 ? "-" : "") + text;
}

void mlir::fsdp::printMemoryBreakdown(llvm::raw_ostream &os, const PlanEvaluation &plan,
                                      const MemoryBudget &budget) {
  const ArenaFigures &arena = plan.arena;
  auto line = [&](StringRef what, int64_t bytes) {
    os << llvm::format("  %-52s%20s  %8.2f GiB\n", what.str().c_str(),
                       groupedBytes(bytes).c_str(),
                       static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
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
