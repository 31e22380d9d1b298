//===- ScalarKernels.cpp - scalar ops computed in the kernels after them -===//
//
// A scalar op (the gradient-clipping factor, from the all-reduced norm) has
// no parallel dimension: a kernel of its own would be one thread. The
// kernels that read it compute it instead, each thread for itself, and the
// first thread of the first of them stores it for whatever reads it later.
//
//===----------------------------------------------------------------------===//

#include "FormKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::fsdp;

bool mlir::fsdp::isCostlyScalar(linalg::LinalgOp op) {
  WalkResult costly = op->walk([](Operation *nested) {
    bool f64 = llvm::any_of(nested->getResultTypes(), [](Type type) { return type.isF64(); });
    bool transcendental = isa<math::MathDialect>(nested->getDialect()) &&
                          !isa<math::SqrtOp, math::RsqrtOp, math::AbsFOp>(nested);
    return f64 || transcendental ? WalkResult::interrupt() : WalkResult::advance();
  });
  return costly.wasInterrupted();
}

LogicalResult mlir::fsdp::prependScalar(RewriterBase &rewriter, scf::ParallelOp nest,
                                        linalg::LinalgOp scalar, bool store,
                                        const ArenaAccesses &arena) {
  SetVector<Value> loaded, stored;
  collectAccesses(nest, loaded, stored);
  SmallVector<Value> outs(scalar.getDpsInits()), ins;
  for (Value input : scalar.getDpsInputs())
    if (isa<MemRefType>(input.getType()))
      ins.push_back(input);
  SmallVector<Value> touched(loaded.begin(), loaded.end());
  llvm::append_range(touched, stored);
  for (Value memref : touched) {
    bool isOut = llvm::is_contained(outs, memref) && !stored.contains(memref);
    for (Value out : outs)
      if (!isOut && overlap(arena.bytesOf(memref), arena.bytesOf(out)))
        return failure();
    if (stored.contains(memref))
      for (Value input : ins)
        if (overlap(arena.bytesOf(memref), arena.bytesOf(input)))
          return failure();
  }
  // Where the values are computed, and the loop indices that are at their
  // lower bounds in the one thread that stores them. In a block reduction
  // that is thread 0's store of the result (values made before the block
  // reduction would have to cross it), in block 0.
  Block *where = nest.getBody();
  SmallVector<std::pair<Value, Value>> firstIndices;
  for (auto [iv, lower] : llvm::zip(nest.getInductionVars(), nest.getLowerBound()))
    firstIndices.push_back({iv, lower});
  if (nest->hasAttr(kCooperativeNestAttr)) {
    auto lanes = *nest.getBody()->getOps<scf::ParallelOp>().begin();
    scf::IfOp result;
    for (scf::IfOp branch : lanes.getBody()->getOps<scf::IfOp>())
      result = branch;
    where = result.thenBlock();
    firstIndices.resize(1);
    WalkResult outside = nest->walk([&](memref::LoadOp load) {
      return llvm::is_contained(outs, load.getMemRef()) && !result->isAncestor(load)
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (outside.wasInterrupted())
      return failure();
  }
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(where);
  Location loc = scalar.getLoc();
  SmallVector<Value> current = llvm::map_to_vector(outs, [&](Value out) -> Value {
    return memref::LoadOp::create(rewriter, loc, out, ValueRange{});
  });
  SmallVector<Value> values = inlineScalarOp(rewriter, loc, scalar, current);
  if (store) {
    Value first;
    for (auto [iv, lower] : firstIndices) {
      Value isLower = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, iv, lower);
      first = first ? arith::AndIOp::create(rewriter, loc, first, isLower) : isLower;
    }
    auto branch = scf::IfOp::create(rewriter, loc, first, /*withElseRegion=*/false);
    rewriter.setInsertionPoint(branch.thenBlock()->getTerminator());
    for (auto [value, out] : llvm::zip(values, outs))
      memref::StoreOp::create(rewriter, loc, value, out, ValueRange{});
  }
  SmallVector<memref::LoadOp> reads;
  where->walk([&](memref::LoadOp load) {
    if (llvm::is_contained(outs, load.getMemRef()) &&
        !llvm::is_contained(current, load.getResult()))
      reads.push_back(load);
  });
  for (memref::LoadOp load : reads)
    rewriter.replaceOp(load, values[llvm::find(outs, load.getMemRef()) - outs.begin()]);
  return success();
}
