//===- WideThreads.cpp - adjacent elements per thread, in vector accesses ===//
//
// A thread that loads one 4-byte element issues a 4-byte load, where one
// 16-byte load (ld.global.v4) costs the memory system the same: an
// elementwise kernel at one element a thread issues four times the memory
// instructions it needs. So each thread of an elementwise nest takes the
// adjacent elements that make 16 bytes of its contiguous buffers: the
// innermost loop goes over runs of that many, the body is repeated for each
// element of a run, and the run's loads and stores of a contiguous buffer
// become one vector.load and one vector.store. The arithmetic stays scalar
// and the same for each element, so the results are the same bits.
//
// Where a vector access lands in the arena is LLVM's to prove from the
// address arithmetic (the index is a multiple of the run, the pointer as
// aligned as fsdp-cuda-annotate-kernel-arguments says): a 16-byte aligned one is
// one instruction, another is split into element accesses by the NVPTX
// back end, as before.
//
//===----------------------------------------------------------------------===//

#include "FormKernels.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

#include <limits>

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// Whether `index` is `column` (itself, or as linalg's loops apply an
/// identity map to it).
bool isColumn(Value index, Value column) {
  if (auto apply = index.getDefiningOp<affine::AffineApplyOp>())
    return apply.getAffineMap().isIdentity() && apply.getMapOperands().front() == column;
  return index == column;
}

/// Whether `op` loads or stores contiguously along `column`: its last index
/// is `column`, no other index is computed from it (`dependents`), and the
/// memref's last dimension has unit stride.
bool isContiguous(Operation *op, Value column, const SetVector<Operation *> &dependents) {
  auto [memref, indices] = accessOf(op);
  if (!memref || indices.empty() || !isColumn(indices.back(), column) ||
      llvm::any_of(indices.drop_back(), [&](Value index) {
        return index.getDefiningOp() && dependents.contains(index.getDefiningOp());
      }))
    return false;
  return hasVectorRows(memref);
}

} // namespace

std::pair<Value, ValueRange> mlir::fsdp::accessOf(Operation *op) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return {load.getMemRef(), load.getIndices()};
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return {store.getMemRef(), store.getIndices()};
  return {};
}

bool mlir::fsdp::hasVectorRows(Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  return VectorType::isValidElementType(type.getElementType()) &&
         succeeded(type.getStridesAndOffset(strides, offset)) && strides.back() == 1;
}

void mlir::fsdp::packAccesses(RewriterBase &rewriter, ArrayRef<Operation *> copies) {
  Location loc = copies.front()->getLoc();
  if (auto first = dyn_cast<memref::LoadOp>(copies.front())) {
    auto type = VectorType::get({static_cast<int64_t>(copies.size())}, first.getType());
    rewriter.setInsertionPoint(first);
    Value run = vector::LoadOp::create(rewriter, loc, type, first.getMemRef(), first.getIndices());
    for (auto [k, copy] : llvm::enumerate(copies))
      rewriter.replaceOp(copy, vector::ExtractOp::create(rewriter, loc, run, k));
    return;
  }
  auto first = cast<memref::StoreOp>(copies.front());
  auto type = VectorType::get({static_cast<int64_t>(copies.size())},
                              first.getValueToStore().getType());
  rewriter.setInsertionPoint(copies.back());
  SmallVector<Value> values = llvm::map_to_vector(
      copies, [](Operation *copy) { return cast<memref::StoreOp>(copy).getValueToStore(); });
  Value run = vector::FromElementsOp::create(rewriter, loc, type, values);
  vector::StoreOp::create(rewriter, loc, run, first.getMemRef(), first.getIndices());
  for (Operation *copy : copies)
    rewriter.eraseOp(copy);
}

int64_t mlir::fsdp::widenThreads(RewriterBase &rewriter, scf::ParallelOp nest,
                                 int64_t vectorBytes) {
  unsigned last = nest.getNumLoops() - 1;
  Value column = nest.getInductionVars()[last];
  std::optional<int64_t> extent = getConstantIntValue(nest.getUpperBound()[last]);
  if (!extent || !isConstantIntValue(nest.getLowerBound()[last], 0) ||
      !isConstantIntValue(nest.getStep()[last], 1))
    return 1;
  Block *body = nest.getBody();
  // A body with loops of its own (a search, a piece's sum) would run each
  // loop once per element of the run, one after the other: a longer chain
  // in every thread for loads that stay scalar inside the loops.
  if (llvm::any_of(body->without_terminator(), [](Operation &op) { return op.getNumRegions(); }))
    return 1;
  // The body of one element; the accesses that become vector ones.
  SmallVector<Operation *> element =
      llvm::map_to_vector(body->without_terminator(), [](Operation &op) { return &op; });
  SetVector<Operation *> dependents;
  getForwardSlice(column, &dependents);
  SmallVector<Operation *> contiguous = llvm::filter_to_vector(
      element, [&](Operation *op) { return isContiguous(op, column, dependents); });
  if (contiguous.empty())
    return 1;
  // The smallest element they access, in bytes.
  int64_t smallest = std::numeric_limits<int64_t>::max();
  for (Operation *op : contiguous) {
    auto type = cast<MemRefType>(accessOf(op).first.getType());
    smallest = std::min<int64_t>(smallest, llvm::divideCeil(type.getElementTypeBitWidth(), 8));
  }
  // The most elements that fit the vector and divide the row (no thread
  // goes past a row's end, so no access needs a guard of its own).
  int64_t width = std::max<int64_t>(vectorBytes / smallest, 1);
  while (width > 1 && *extent % width != 0)
    width /= 2;
  if (width < 2)
    return 1;
  // The loop goes over runs of `width` elements (by 1: the GPU mapping
  // tiles loops that step by 1), and the body over the elements of a run.
  Location loc = nest.getLoc();
  auto flags = arith::IntegerOverflowFlags::nsw | arith::IntegerOverflowFlags::nuw;
  rewriter.setInsertionPoint(nest);
  Value runs = arith::ConstantIndexOp::create(rewriter, loc, *extent / width);
  rewriter.modifyOpInPlace(nest, [&] { nest.getUpperBoundMutable()[last].set(runs); });
  rewriter.setInsertionPointToStart(body);
  Value first = arith::MulIOp::create(rewriter, loc, column,
                                      arith::ConstantIndexOp::create(rewriter, loc, width), flags);
  rewriter.replaceAllUsesExcept(column, first, first.getDefiningOp());
  rewriter.setInsertionPoint(body->getTerminator());
  // copies[i][k]: the i-th contiguous access of element k of the run.
  SmallVector<SmallVector<Operation *>> copies =
      llvm::map_to_vector(contiguous, [](Operation *op) { return SmallVector<Operation *>{op}; });
  for (int64_t k = 1; k < width; ++k) {
    Value offset = arith::ConstantIndexOp::create(rewriter, loc, k);
    IRMapping mapping;
    mapping.map(first, arith::AddIOp::create(rewriter, loc, first, offset, flags).getResult());
    for (Operation *op : element)
      rewriter.clone(*op, mapping);
    for (auto [access, run] : llvm::zip(contiguous, copies))
      run.push_back(mapping.lookup(access));
  }
  // Each element reads its inputs before it writes, and no element touches
  // another's bytes: loading a run first and storing it last is the same.
  for (ArrayRef<Operation *> run : copies)
    packAccesses(rewriter, run);
  return width;
}
