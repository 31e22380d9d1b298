//===- ReductionKernels.cpp - reductions as GPU kernel loop nests ---------===//
//
// linalg's own loop lowering keeps a reduction's running value in the output
// buffer (a load and a store per iteration) and gives a full reduction no
// parallel loop at all. A GPU wants the accumulator in a register, each
// output written once, and a long reduction spread over many threads: a
// thread per output would leave a whole tensor's sum to one thread.
//
//===----------------------------------------------------------------------===//

#include "FormKernels.h"

#include "Analysis/KernelCost.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// The all-reduce that combines partial results as `combiner` does.
std::optional<gpu::AllReduceOperation> allReduceKind(Operation *combiner) {
  using Kind = gpu::AllReduceOperation;
  return llvm::TypeSwitch<Operation *, std::optional<Kind>>(combiner)
      .Case([](arith::AddFOp) { return Kind::ADD; })
      .Case([](arith::MulFOp) { return Kind::MUL; })
      .Case([](arith::MaximumFOp) { return Kind::MAXIMUMF; })
      .Case([](arith::MinimumFOp) { return Kind::MINIMUMF; })
      .Case([](arith::MaxNumFOp) { return Kind::MAXNUMF; })
      .Case([](arith::MinNumFOp) { return Kind::MINNUMF; })
      .Default([](Operation *) { return std::nullopt; });
}

/// The value a thread with nothing to fold contributes: the combiner's
/// identity.
double identity(gpu::AllReduceOperation kind) {
  using Kind = gpu::AllReduceOperation;
  switch (kind) {
  case Kind::MUL:
    return 1.0;
  case Kind::MAXIMUMF:
  case Kind::MAXNUMF:
    return -std::numeric_limits<double>::infinity();
  case Kind::MINIMUMF:
  case Kind::MINNUMF:
    return std::numeric_limits<double>::infinity();
  default:
    return 0.0;
  }
}

Value indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// The indices `map` reads at loop indices `ivs`.
SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map, ValueRange ivs) {
  SmallVector<Value> indices;
  for (unsigned i = 0; i < map.getNumResults(); ++i) {
    AffineExpr expr = map.getResult(i);
    if (auto dim = dyn_cast<AffineDimExpr>(expr))
      indices.push_back(ivs[dim.getPosition()]);
    else if (auto constant = dyn_cast<AffineConstantExpr>(expr))
      indices.push_back(indexConstant(b, loc, constant.getValue()));
    else
      indices.push_back(affine::AffineApplyOp::create(b, loc, map.getSubMap({i}), ivs));
  }
  return indices;
}

/// The loop indices of `linear`, numbered row-major over `extents`.
SmallVector<Value> unflatten(OpBuilder &b, Location loc, Value linear, ArrayRef<int64_t> extents) {
  SmallVector<Value> indices(extents.size());
  for (int64_t i = static_cast<int64_t>(extents.size()) - 1; i >= 0; --i) {
    if (i == 0) {
      indices[i] = linear;
      break;
    }
    Value extent = indexConstant(b, loc, extents[i]);
    indices[i] = arith::RemUIOp::create(b, loc, linear, extent);
    linear = arith::DivUIOp::create(b, loc, linear, extent);
  }
  return indices;
}

/// The body of `op` at loop indices `ivs`, with each output's block argument
/// standing for `outs`: what it yields.
SmallVector<Value> inlineBody(OpBuilder &b, Location loc, linalg::LinalgOp op, ValueRange ivs,
                              ValueRange outs,
                              llvm::function_ref<Value(OpOperand *)> given = nullptr) {
  IRMapping mapping;
  for (OpOperand *input : op.getDpsInputOperands()) {
    Value value = input->get();
    if (Value known = given ? given(input) : Value())
      value = known;
    else if (isa<MemRefType>(value.getType()))
      value = memref::LoadOp::create(b, loc, value,
                                     applyMap(b, loc, op.getMatchingIndexingMap(input), ivs));
    mapping.map(op.getMatchingBlockArgument(input), value);
  }
  for (auto [init, out] : llvm::zip(op.getDpsInitsMutable(), outs))
    mapping.map(op.getMatchingBlockArgument(&init), out);
  for (Operation &nested : op.getBlock()->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(nested))
      mapping.map(index.getResult(), ivs[index.getDim()]);
    else
      b.clone(nested, mapping);
  }
  return llvm::map_to_vector(op.getBlock()->getTerminator()->getOperands(),
                             [&](Value v) { return mapping.lookupOrDefault(v); });
}

/// Where output `i` of `op` is written for loop indices `ivs` (reduction
/// indices do not matter).
SmallVector<Value> outputIndices(OpBuilder &b, Location loc, linalg::LinalgOp op, unsigned i,
                                 ValueRange ivs) {
  return applyMap(b, loc, op.getMatchingIndexingMap(&op.getDpsInitsMutable()[i]), ivs);
}

/// The value output `i` starts from: its fill, or what the buffer holds.
Value initialValue(OpBuilder &b, Location loc, linalg::LinalgOp op, unsigned i,
                   ArrayRef<Value> inits, ValueRange ivs) {
  if (inits[i])
    return inits[i];
  return memref::LoadOp::create(b, loc, op.getDpsInits()[i], outputIndices(b, loc, op, i, ivs));
}

/// A thread per output point: reductions folded in registers, then stored.
scf::ParallelOp lowerThreadPerOutput(RewriterBase &rewriter, linalg::LinalgOp op,
                                     ArrayRef<Value> inits, ArrayRef<int64_t> ranges,
                                     unsigned numParallel) {
  Location loc = op.getLoc();
  Value zero = indexConstant(rewriter, loc, 0), one = indexConstant(rewriter, loc, 1);
  SmallVector<Value> lower(numParallel, zero), steps(numParallel, one), upper;
  for (int64_t extent : ranges.take_front(numParallel))
    upper.push_back(indexConstant(rewriter, loc, extent));
  return scf::ParallelOp::create(
      rewriter, loc, lower, upper, steps, [&](OpBuilder &b, Location l, ValueRange outer) {
        SmallVector<Value> ivs(outer.begin(), outer.end());
        ivs.resize(ranges.size(), zero);
        SmallVector<Value> starts;
        for (unsigned i = 0; i < op.getNumDpsInits(); ++i)
          starts.push_back(initialValue(b, l, op, i, inits, ivs));
        SmallVector<Value> lowerR, upperR, stepsR;
        for (int64_t extent : ranges.drop_front(numParallel)) {
          lowerR.push_back(zero);
          upperR.push_back(indexConstant(b, l, extent));
          stepsR.push_back(one);
        }
        scf::LoopNest nest =
            scf::buildLoopNest(b, l, lowerR, upperR, stepsR, starts,
                               [&](OpBuilder &nb, Location nl, ValueRange inner, ValueRange acc) {
                                 SmallVector<Value> all(outer.begin(), outer.end());
                                 all.append(inner.begin(), inner.end());
                                 return scf::ValueVector(inlineBody(nb, nl, op, all, acc));
                               });
        for (unsigned i = 0; i < op.getNumDpsInits(); ++i)
          memref::StoreOp::create(b, l, nest.results[i], op.getDpsInits()[i],
                                  outputIndices(b, l, op, i, ivs));
      });
}

/// The values the elementwise op `prologue` computes at loop indices `ivs`,
/// stored where it stores them.
SmallVector<Value> runPrologueAt(OpBuilder &b, Location loc, linalg::LinalgOp prologue,
                                 ValueRange ivs) {
  // Its payload reads no output (isRowPrologue), so none is loaded.
  SmallVector<Value> made = inlineBody(b, loc, prologue, ivs, /*outs=*/{});
  for (auto [value, out] : llvm::zip(made, prologue.getDpsInits()))
    memref::StoreOp::create(b, loc, value, out, ivs);
  return made;
}

/// The elements a block reduction's thread folds as one run: as many
/// adjacent elements of its one reduced dimension as make `vectorBytes` of
/// the smallest element an input reads along it, dividing the dimension
/// (so a run never crosses a row's end); 1 otherwise.
int64_t runWidth(linalg::LinalgOp op, ArrayRef<int64_t> reduced, int64_t vectorBytes) {
  if (reduced.size() != 1)
    return 1;
  unsigned dim = op.getNumLoops() - 1;
  int64_t smallest = 0;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(input->get().getType());
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!type || map.getNumResults() == 0 ||
        map.getResults().back() != getAffineDimExpr(dim, op.getContext()))
      continue;
    int64_t bytes = llvm::divideCeil(type.getElementTypeBitWidth(), 8);
    smallest = smallest ? std::min(smallest, bytes) : bytes;
  }
  if (!smallest)
    return 1;
  int64_t width = std::max<int64_t>(vectorBytes / smallest, 1);
  while (width > 1 && reduced[0] % width != 0)
    width /= 2;
  return width;
}

/// The last index of a load or store; null for other ops.
Value lastIndexOf(Operation *op) {
  auto [memref, indices] = accessOf(op);
  return memref && !indices.empty() ? indices.back() : Value();
}

/// Whether `a` and `b` are the same kind of access to the same memref at the
/// same indices but the last.
bool sameAccessButLast(Operation *a, Operation *b) {
  auto [memrefA, indicesA] = accessOf(a);
  auto [memrefB, indicesB] = accessOf(b);
  return a->getName() == b->getName() && memrefA == memrefB && indicesA.size() == indicesB.size() &&
         llvm::equal(indicesA.drop_back(), indicesB.drop_back());
}

/// The accesses of `body` at the runs' elements (`offsets[k]`, the k-th
/// element's index along a unit-stride last dimension) as vector accesses.
void packRuns(RewriterBase &rewriter, Block *body, ArrayRef<Value> offsets) {
  OpBuilder::InsertionGuard guard(rewriter);
  SmallVector<Operation *> accesses;
  for (Operation &op : body->without_terminator())
    if (lastIndexOf(&op))
      accesses.push_back(&op);
  // Packing erases a run's accesses.
  llvm::DenseSet<Operation *> packed;
  for (Operation *first : accesses) {
    if (packed.contains(first) || lastIndexOf(first) != offsets.front() ||
        !hasVectorRows(accessOf(first).first))
      continue;
    SmallVector<Operation *> copies = {first};
    for (Value at : offsets.drop_front()) {
      auto copy = llvm::find_if(accesses, [&](Operation *op) {
        return !packed.contains(op) && lastIndexOf(op) == at && sameAccessButLast(first, op);
      });
      if (copy == accesses.end())
        break;
      copies.push_back(*copy);
    }
    if (copies.size() != offsets.size())
      continue;
    packed.insert(copies.begin(), copies.end());
    packAccesses(rewriter, copies);
  }
}

/// The indices of a run's `width` elements, `run * width + k`.
SmallVector<Value> runElements(OpBuilder &b, Location loc, Value run, int64_t width) {
  if (width == 1)
    return {run};
  Value first = arith::MulIOp::create(b, loc, run, indexConstant(b, loc, width));
  SmallVector<Value> elements = {first};
  for (int64_t k = 1; k < width; ++k)
    elements.push_back(arith::AddIOp::create(b, loc, first, indexConstant(b, loc, k)));
  return elements;
}

/// The threads of a block that folds `runs` runs: whole warps, no more than
/// the runs need (a short row gets a small block), and a power of two of them.
/// Upstream's lowering of gpu.all_reduce has every thread below the warp count
/// store its second-level sum to the same workgroup slot, a sum defined only
/// in the first lane (AllReduceLowering.cpp): with a power of two of warps the
/// shuffles' butterfly gives each of those threads the same bits, with 3, 5
/// or 6 warps they differ and which store lands decides the result (the race
/// compute-sanitizer found in odd-sizes' gradient norm, 160 threads).
int64_t cooperativeThreads(int64_t blockSize, int64_t runs) {
  constexpr int64_t kWarp = 32;
  if (blockSize <= kWarp)
    return std::min(blockSize, runs);
  uint64_t warpsNeeded = llvm::divideCeil(runs, kWarp);
  uint64_t warps = std::min(llvm::PowerOf2Ceil(warpsNeeded),
                            llvm::bit_floor(static_cast<uint64_t>(blockSize / kWarp)));
  return kWarp * static_cast<int64_t>(warps);
}

/// A block per output point; its threads fold strided runs of the reduced
/// elements (runWidth: one vector access of each contiguous operand a run),
/// then combine them in a gpu.all_reduce, and thread 0 stores.
/// With a `prologue` (isRowPrologue), each thread first computes and stores
/// the prologue's elements it folds, and folds those values.
scf::ParallelOp lowerCooperative(RewriterBase &rewriter, linalg::LinalgOp op, ArrayRef<Value> inits,
                                 ArrayRef<int64_t> ranges, unsigned numParallel,
                                 Operation *combiner, int64_t blockSize, int64_t vectorBytes,
                                 linalg::LinalgOp prologue) {
  Location loc = op.getLoc();
  gpu::AllReduceOperation kind = *allReduceKind(combiner);
  ArrayRef<int64_t> parallel = ranges.take_front(numParallel),
                    reduced = ranges.drop_front(numParallel);
  int64_t points = 1, elements = 1;
  for (int64_t extent : parallel)
    points *= extent;
  for (int64_t extent : reduced)
    elements *= extent;
  int64_t width = runWidth(op, reduced, vectorBytes), runs = elements / width;
  int64_t threads = cooperativeThreads(blockSize, runs);
  Value zero = indexConstant(rewriter, loc, 0), one = indexConstant(rewriter, loc, 1);
  auto blocks =
      scf::ParallelOp::create(rewriter, loc, zero, indexConstant(rewriter, loc, points), one);
  blocks->setAttr(kCooperativeNestAttr, rewriter.getUnitAttr());
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(blocks.getBody()->getTerminator());
  auto lanes =
      scf::ParallelOp::create(rewriter, loc, zero, indexConstant(rewriter, loc, threads), one);
  rewriter.setInsertionPoint(lanes.getBody()->getTerminator());
  Value block = blocks.getInductionVars()[0], thread = lanes.getInductionVars()[0];
  SmallVector<Value> point = unflatten(rewriter, loc, block, parallel);
  Type type = getElementTypeOrSelf(op.getDpsInits()[0]);
  Value start =
      arith::ConstantOp::create(rewriter, loc, type, rewriter.getFloatAttr(type, identity(kind)));
  // The index of each element of a run: `first + k`.
  SmallVector<Value> offsets;
  auto foldElement = [&](OpBuilder &b, Location l, Value linear, ValueRange acc) {
    SmallVector<Value> ivs = point;
    llvm::append_range(ivs, unflatten(b, l, linear, reduced));
    SmallVector<Value> made;
    if (prologue)
      made = runPrologueAt(b, l, prologue, ivs);
    auto given = [&](OpOperand *input) -> Value {
      if (!prologue)
        return Value();
      auto outs = prologue.getDpsInits();
      auto it = llvm::find(outs, input->get());
      return it == outs.end() ? Value() : made[it - outs.begin()];
    };
    return inlineBody(b, l, op, ivs, acc, given);
  };
  auto fold = scf::ForOp::create(rewriter, loc, thread, indexConstant(rewriter, loc, runs),
                                 indexConstant(rewriter, loc, threads), ValueRange{start},
                                 [&](OpBuilder &b, Location l, Value run, ValueRange acc) {
                                   offsets = runElements(b, l, run, width);
                                   SmallVector<Value> values(acc);
                                   for (Value linear : offsets)
                                     values = foldElement(b, l, linear, values);
                                   scf::YieldOp::create(b, l, values);
                                 });
  if (width > 1)
    packRuns(rewriter, fold.getBody(), offsets);
  auto total = gpu::AllReduceOp::create(
      rewriter, loc, type, fold.getResult(0),
      gpu::AllReduceOperationAttr::get(rewriter.getContext(), kind), rewriter.getUnitAttr());
  // Every thread has the result when the start is a value (a fill's): a
  // row-wise op after the reduction can then run in this kernel too.
  SmallVector<Value> ivs = point;
  ivs.resize(ranges.size(), zero);
  auto combine = [&](Value init) {
    Operation *combined = rewriter.clone(*combiner);
    combined->setOperands(ValueRange{init, total.getResult()});
    return combined->getResult(0);
  };
  Value result = inits[0] ? combine(inits[0]) : Value();
  Value first = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, thread, zero);
  auto store = scf::IfOp::create(rewriter, loc, first, /*withElseRegion=*/false);
  rewriter.setInsertionPoint(store.thenBlock()->getTerminator());
  if (!result)
    result = combine(initialValue(rewriter, loc, op, 0, inits, ivs));
  memref::StoreOp::create(rewriter, loc, result, op.getDpsInits()[0],
                          outputIndices(rewriter, loc, op, 0, ivs));
  return blocks;
}

} // namespace

SmallVector<Value> mlir::fsdp::takeFusableFills(linalg::LinalgOp op) {
  SmallVector<Value> inits(op.getNumDpsInits());
  // A fill helps only when the op writes every element of the output once.
  auto writesAll = [&](OpOperand &init) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    return map.isProjectedPermutation() && map.getNumResults() == op.getNumParallelLoops();
  };
  for (Operation *previous = op->getPrevNode(); previous;) {
    Operation *before = previous->getPrevNode();
    if (auto fill = dyn_cast<linalg::FillOp>(previous)) {
      auto filled = llvm::find_if(op.getDpsInitsMutable(), [&](OpOperand &init) {
        return init.get() == fill.getDpsInits()[0] && writesAll(init) &&
               fill.getInputs()[0].getType() == getElementTypeOrSelf(init.get());
      });
      // A fill of another buffer writes memory the op may read.
      if (filled == op.getDpsInitsMutable().end() ||
          inits[filled->getOperandNumber() - op.getNumDpsInputs()])
        break;
      inits[filled->getOperandNumber() - op.getNumDpsInputs()] = fill.getInputs()[0];
      fill->erase();
    } else if (!isMemoryEffectFree(previous)) {
      break;
    }
    previous = before;
  }
  return inits;
}

namespace {


bool hasParallelLoopsFirst(linalg::LinalgOp op) {
  return llvm::is_sorted(op.getIteratorTypesArray(), [](auto a, auto b) {
    return a == utils::IteratorType::parallel && b != utils::IteratorType::parallel;
  });
}

} // namespace

bool mlir::fsdp::isRowPrologue(linalg::LinalgOp producer, linalg::LinalgOp op,
                               const ArenaAccesses *arena) {
  if (!producer.hasPureBufferSemantics() || !op.hasPureBufferSemantics() ||
      producer.getNumReductionLoops() != 0 || op.getNumReductionLoops() == 0 ||
      !hasParallelLoopsFirst(op) || ShapedType::isDynamicShape(op.getStaticLoopRanges()) ||
      producer.getStaticLoopRanges() != op.getStaticLoopRanges() || !reducesCooperatively(op))
    return false;
  // The producer writes each point of the shared iteration space at that
  // point, reading none of its outputs' old values: the block that folds a
  // point makes it.
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(op.getNumLoops(), op.getContext());
  for (OpOperand &init : producer.getDpsInitsMutable())
    if (producer.getMatchingIndexingMap(&init) != identity ||
        producer.payloadUsesValueFromOperand(&init))
      return false;
  // The reduction reads the producer's outputs only at its own point, and
  // reads nothing else they overlap; what it writes overlaps nothing the
  // producer touches (other blocks still read and write it).
  auto touches = [&](Value a, Value b) {
    return arena ? overlap(arena->bytesOf(a), arena->bytesOf(b)) : a == b;
  };
  bool readsProduct = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    bool product = llvm::is_contained(producer.getDpsInits(), input->get());
    if (product && op.getMatchingIndexingMap(input) != identity)
      return false;
    readsProduct |= product;
    if (!product && llvm::any_of(producer.getDpsInits(),
                                 [&](Value out) { return touches(out, input->get()); }))
      return false;
  }
  for (Value out : op.getDpsInits())
    for (Value touched : producer->getOperands())
      if (isa<MemRefType>(touched.getType()) && touches(out, touched))
        return false;
  return readsProduct;
}

FailureOr<scf::ParallelOp> mlir::fsdp::lowerReduction(RewriterBase &rewriter, linalg::LinalgOp op,
                                                      ArrayRef<Value> inits, int64_t blockSize,
                                                      int64_t vectorBytes,
                                                      linalg::LinalgOp prologue) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ShapedType::isDynamicShape(ranges))
    return op.emitOpError("expected static loop ranges: the step's buffers have static shapes");
  unsigned numParallel = op.getNumParallelLoops();
  rewriter.setInsertionPoint(op);
  Operation *combiner = singleCombiner(op);
  scf::ParallelOp nest;
  if (reducesCooperatively(op))
    nest = lowerCooperative(rewriter, op, inits, ranges, numParallel, combiner, blockSize,
                            vectorBytes, prologue);
  else if (prologue)
    return op.emitOpError("is no block reduction, and cannot run the op before it");
  else if (numParallel > 0)
    nest = lowerThreadPerOutput(rewriter, op, inits, ranges, numParallel);
  else
    return op.emitOpError("is a full reduction whose combiner the GPU's block reduction does "
                          "not know (addf, mulf, maximumf, minimumf, maxnumf, minnumf)");
  rewriter.eraseOp(op);
  if (prologue)
    rewriter.eraseOp(prologue);
  return nest;
}

namespace {

/// Runs the elementwise `op` over the points of `row` (its leading loops),
/// its `inner` extents flattened: from `first` by `stride` runs of `width`
/// adjacent points (one vector access of each contiguous operand a run).
/// `given` supplies an input's value instead of a load.
void goThroughRow(RewriterBase &rewriter, linalg::LinalgOp op, ArrayRef<Value> row,
                  ArrayRef<int64_t> inner, Value first, int64_t stride, int64_t width,
                  llvm::function_ref<Value(OpOperand *)> given) {
  int64_t elements = 1;
  for (int64_t extent : inner)
    elements *= extent;
  SmallVector<Value> offsets;
  auto loop = scf::ForOp::create(
      rewriter, op.getLoc(), first, indexConstant(rewriter, op.getLoc(), elements / width),
      indexConstant(rewriter, op.getLoc(), stride), ValueRange{},
      [&](OpBuilder &b, Location l, Value run, ValueRange) {
        offsets = runElements(b, l, run, width);
        for (Value linear : offsets) {
          SmallVector<Value> ivs(row);
          llvm::append_range(ivs, unflatten(b, l, linear, inner));
          SmallVector<Value> outs;
          for (auto [i, out] : llvm::enumerate(op.getDpsInits()))
            outs.push_back(memref::LoadOp::create(b, l, out, outputIndices(b, l, op, i, ivs)));
          SmallVector<Value> values = inlineBody(b, l, op, ivs, outs, given);
          for (auto [i, value] : llvm::enumerate(values))
            memref::StoreOp::create(b, l, value, op.getDpsInits()[i],
                                    outputIndices(b, l, op, i, ivs));
        }
        scf::YieldOp::create(b, l);
      });
  if (width > 1)
    packRuns(rewriter, loop.getBody(), offsets);
}

} // namespace

LogicalResult mlir::fsdp::fuseRowEpilogue(RewriterBase &rewriter, scf::ParallelOp nest,
                                          linalg::LinalgOp op, const ArenaAccesses &arena,
                                          int64_t vectorBytes) {
  if (op.getNumReductionLoops() != 0 || !op.hasPureBufferSemantics())
    return failure();
  // Where the row's result is stored, and where the op's work goes: after
  // it, in the loop the block's threads stride (a block reduction), or in
  // the thread that made the row (a thread per output, for short rows only).
  bool cooperative = nest->hasAttr(kCooperativeNestAttr);
  memref::StoreOp store;
  Block *where;
  scf::ParallelOp lanes;
  Operation *privateTo = nullptr;
  if (cooperative) {
    lanes = *nest.getBody()->getOps<scf::ParallelOp>().begin();
    scf::IfOp branch;
    for (scf::IfOp candidate : lanes.getBody()->getOps<scf::IfOp>())
      branch = candidate;
    store = cast<memref::StoreOp>(*std::prev(branch.thenBlock()->without_terminator().end()));
    where = lanes.getBody();
    privateTo = branch;
  } else {
    auto stores = llvm::to_vector(nest.getBody()->getOps<memref::StoreOp>());
    if (stores.size() != 1 || !llvm::equal(stores[0].getIndices(), nest.getInductionVars()))
      return failure();
    store = stores[0];
    where = nest.getBody();
  }
  // The result must be every thread's, not loaded by thread 0 alone.
  Value result = store.getValueToStore();
  if (privateTo && privateTo->isAncestor(result.getParentBlock()->getParentOp()))
    return failure();
  Value reduced = store.getMemRef();
  auto reducedType = cast<MemRefType>(reduced.getType());
  unsigned rows = reducedType.getRank();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ShapedType::isDynamicShape(ranges) || ranges.size() < rows ||
      ArrayRef(ranges).take_front(rows) != reducedType.getShape())
    return failure();
  // The op's leading loops are the stored row's coordinates (known to every
  // thread of the block), and it reads the result at its own row.
  SmallVector<Value> row(store.getIndices());
  if (privateTo && llvm::any_of(row, [&](Value index) {
        return privateTo->isAncestor(index.getParentBlock()->getParentOp());
      }))
    return failure();
  AffineMap rowMap =
      AffineMap::getMultiDimIdentityMap(ranges.size(), op.getContext()).getMajorSubMap(rows);
  for (OpOperand *input : op.getDpsInputOperands())
    if (input->get() == reduced && op.getMatchingIndexingMap(input) != rowMap)
      return failure();
  // No other byte of the reduction's output is touched, nothing the
  // reduction reads (in any block) is written.
  SetVector<Value> loaded, stored;
  collectAccesses(nest, loaded, stored);
  std::optional<ArenaAccess> reducedBytes = arena.bytesOf(reduced);
  auto overlaps = [&](Value a, std::optional<ArenaAccess> b) {
    return overlap(arena.bytesOf(a), b);
  };
  for (OpOperand &operand : op->getOpOperands()) {
    Value memref = operand.get();
    if (!isa<MemRefType>(memref.getType()) || memref == reduced)
      continue;
    if (overlaps(memref, reducedBytes))
      return failure();
    if (op.isDpsInit(&operand))
      for (Value read : loaded)
        if (overlaps(memref, arena.bytesOf(read)))
          return failure();
  }
  if (llvm::any_of(op.getDpsInits(), [&](Value out) { return out == reduced; }))
    return failure();

  ArrayRef<int64_t> inner = ArrayRef(ranges).drop_front(rows);
  int64_t elements = 1;
  for (int64_t extent : inner)
    elements *= extent;
  // One thread going through a long row would be slower than the kernel the
  // op would have had.
  if (!cooperative && elements > kCooperativeMinElements)
    return failure();
  OpBuilder::InsertionGuard guard(rewriter);
  // After the views of op's buffers (all that lies between them).
  rewriter.moveOpBefore(nest, op);
  rewriter.setInsertionPoint(where->getTerminator());
  Value first = cooperative ? lanes.getInductionVars()[0] : indexConstant(rewriter, op.getLoc(), 0);
  int64_t stride = cooperative ? *getConstantIntValue(lanes.getUpperBound()[0]) : 1;
  // A block's threads go through the row in runs, as they folded it.
  int64_t width = cooperative ? runWidth(op, inner, vectorBytes) : 1;
  goThroughRow(rewriter, op, row, inner, first, stride, width, [&](OpOperand *input) -> Value {
    return input->get() == reduced ? result : Value();
  });
  rewriter.eraseOp(op);
  return success();
}

SmallVector<Value> mlir::fsdp::inlineScalarOp(OpBuilder &b, Location loc, linalg::LinalgOp op,
                                              ValueRange outs) {
  return inlineBody(b, loc, op, {}, outs);
}

bool mlir::fsdp::isFullReductionNest(scf::ParallelOp nest) {
  std::optional<int64_t> blocks = getConstantIntValue(nest.getUpperBound()[0]);
  return nest->hasAttr(kCooperativeNestAttr) && blocks == 1;
}

void mlir::fsdp::appendToFullReduction(RewriterBase &rewriter, scf::ParallelOp nest,
                                       linalg::LinalgOp op) {
  auto lanes = *nest.getBody()->getOps<scf::ParallelOp>().begin();
  // Thread 0's store of the result is the last thing the threads do.
  scf::IfOp store;
  for (scf::IfOp branch : lanes.getBody()->getOps<scf::IfOp>())
    store = branch;
  OpBuilder::InsertionGuard guard(rewriter);
  // After the views of op's buffers (all that lies between them).
  rewriter.moveOpBefore(nest, op);
  rewriter.setInsertionPoint(store.thenBlock()->getTerminator());
  Location loc = op.getLoc();
  SmallVector<Value> outs = llvm::map_to_vector(op.getDpsInits(), [&](Value out) -> Value {
    return memref::LoadOp::create(rewriter, loc, out, ValueRange{});
  });
  for (auto [value, out] : llvm::zip(inlineScalarOp(rewriter, loc, op, outs), op.getDpsInits()))
    memref::StoreOp::create(rewriter, loc, value, out, ValueRange{});
  rewriter.eraseOp(op);
}
