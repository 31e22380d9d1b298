//===- ScatterKernels.cpp - the embedding gradient's scatter-add on the GPU ===//
//
// The scatter-add of an embedding gradient adds rows in order, because two
// positions may name the same row: a loop nest no GPU mapping parallelises.
// Its columns, though, never meet: a thread per column.
//
//===----------------------------------------------------------------------===//

#include "FormKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::fsdp;

FailureOr<scf::ParallelOp> mlir::fsdp::parallelizeScatter(RewriterBase &rewriter, scf::ForOp outer,
                                                          const ArenaAccesses &arena) {
  Block *body = outer.getBody();
  if (outer.getNumRegionIterArgs() != 0 || body->getOperations().size() < 2)
    return scf::ParallelOp();
  auto inner = dyn_cast<scf::ForOp>(*std::prev(body->without_terminator().end()));
  if (!inner || inner.getNumRegionIterArgs() != 0)
    return scf::ParallelOp();
  for (Operation &op : body->without_terminator())
    if (&op != inner && !isMemoryEffectFree(&op) && !isa<memref::LoadOp>(op))
      return scf::ParallelOp();
  SetVector<Value> loaded, stored;
  bool onlyLoadsAndStores = true;
  inner.getBody()->walk([&](Operation *op) {
    if (!isMemoryEffectFree(op) && !isa<memref::LoadOp, memref::StoreOp>(op))
      onlyLoadsAndStores = false;
  });
  collectAccesses(outer, loaded, stored);
  if (!onlyLoadsAndStores || stored.empty())
    return scf::ParallelOp();
  Value column = inner.getInductionVar();
  auto atColumn = [&](Value memref, ValueRange indices, Operation *access) {
    if (!stored.contains(memref))
      return true;
    if (!inner->isAncestor(access) || indices.empty() || indices.back() != column)
      return false;
    return llvm::all_of(indices.drop_back(), [&](Value index) {
      Operation *owner = index.getDefiningOp();
      return !inner->isAncestor(owner ? owner : index.getParentBlock()->getParentOp());
    });
  };
  WalkResult columnwise = outer.getBody()->walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op))
      return atColumn(load.getMemRef(), load.getIndices(), op) ? WalkResult::advance()
                                                               : WalkResult::interrupt();
    if (auto store = dyn_cast<memref::StoreOp>(op))
      return atColumn(store.getMemRef(), store.getIndices(), op) ? WalkResult::advance()
                                                                 : WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (columnwise.wasInterrupted())
    return scf::ParallelOp();
  for (Value written : stored)
    for (Value read : loaded) {
      std::optional<ArenaAccess> w = arena.bytesOf(written), r = arena.bytesOf(read);
      if (read != written && (!w || !r || (w->begin < r->end && r->begin < w->end)))
        return scf::ParallelOp();
    }

  rewriter.setInsertionPoint(outer);
  Location loc = outer.getLoc();
  auto columns = scf::ParallelOp::create(rewriter, loc, inner.getLowerBound(),
                                         inner.getUpperBound(), inner.getStep());
  rewriter.setInsertionPoint(columns.getBody()->getTerminator());
  auto rows = scf::ForOp::create(rewriter, loc, outer.getLowerBound(), outer.getUpperBound(),
                                 outer.getStep());
  rewriter.setInsertionPoint(rows.getBody()->getTerminator());
  IRMapping mapping;
  mapping.map(outer.getInductionVar(), rows.getInductionVar());
  mapping.map(column, columns.getInductionVars()[0]);
  for (Operation &op : body->without_terminator())
    if (&op != inner)
      rewriter.clone(op, mapping);
  for (Operation &op : inner.getBody()->without_terminator())
    rewriter.clone(op, mapping);
  rewriter.eraseOp(outer);
  return columns;
}
