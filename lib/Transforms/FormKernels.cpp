//===- FormKernels.cpp - fsdp-form-kernels: one loop nest per GPU kernel --===//
//
// The upstream GPU mapping turns a two-level scf.parallel nest into a launch:
// the outer loop's iterations become blocks, the inner one's threads. This
// pass gives every piece of the step's device work exactly that shape, so
// each linalg op (or copy, or sequential scatter) becomes one kernel with
// enough threads, in program order.
//
//===----------------------------------------------------------------------===//

#include "fsdp/Analysis/ArenaAccesses.h"
#include "fsdp/Conversion/BufferKinds.h"
#include "fsdp/Conversion/RuntimeABI.h"
#include "fsdp/Transforms/Passes.h"

#include "ReductionKernels.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <numeric>

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPFORMKERNELSPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// Whether a top-level op of the step reads or writes buffers itself (a
/// runtime call only passes addresses on).
bool isDeviceWork(Operation *op) {
  // Runtime calls (offload's update among them), and what the host reads.
  if (isa<func::CallOp>(op) || op->hasAttr(kOnHostAttr))
    return false;
  WalkResult found = op->walk([](Operation *nested) {
    if (isa<linalg::LinalgOp, memref::CopyOp, memref::LoadOp, memref::StoreOp>(nested))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return found.wasInterrupted();
}

/// Whether `op` is a loop the host runs, launching the kernels of its body
/// each iteration: one that calls the runtime (the attention's key blocks,
/// whose products are library calls). Any other loop is device work.
bool isHostLoop(Operation *op) {
  auto loop = dyn_cast<scf::ForOp>(op);
  return loop && loop->walk([](func::CallOp) { return WalkResult::interrupt(); }).wasInterrupted();
}

/// Puts `op` alone in `scf.parallel (%i) = (0) to (1)`: one thread runs it.
FailureOr<scf::ParallelOp> wrapInSingleIteration(RewriterBase &rewriter, Operation *op) {
  if (!op->use_empty())
    return op->emitOpError("runs on the device but its results are used by the host");
  rewriter.setInsertionPoint(op);
  Location loc = op->getLoc();
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  auto loop = scf::ParallelOp::create(rewriter, loc, ValueRange{zero}, ValueRange{one},
                                      ValueRange{one});
  rewriter.moveOpBefore(op, loop.getBody()->getTerminator());
  return loop;
}

/// The same op with its parallel loops first, so that they form one
/// scf.parallel and the reductions run inside each thread.
FailureOr<linalg::LinalgOp> parallelDimsFirst(RewriterBase &rewriter, linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < iterators.size(); ++i)
    if (iterators[i] == utils::IteratorType::parallel)
      order.push_back(i);
  for (unsigned i = 0; i < iterators.size(); ++i)
    if (iterators[i] != utils::IteratorType::parallel)
      order.push_back(i);
  SmallVector<unsigned> identity(iterators.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (order == identity)
    return op;
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic) {
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> generalized = linalg::generalizeNamedOp(rewriter, op);
    if (failed(generalized))
      return op.emitOpError("cannot be generalized to reorder its loops for the GPU");
    generic = *generalized;
  }
  FailureOr<linalg::GenericOp> interchanged =
      linalg::interchangeGenericOp(rewriter, generic, order);
  if (failed(interchanged))
    return generic.emitOpError("cannot put its parallel loops first for the GPU");
  return cast<linalg::LinalgOp>(interchanged->getOperation());
}

/// One linalg op as a top-level scf.parallel nest, returned; `inits` are the
/// values its outputs start from (fills folded into a reduction), or null.
FailureOr<scf::ParallelOp> lowerToLoopNest(RewriterBase &rewriter, linalg::LinalgOp op,
                                           ArrayRef<Value> inits, int64_t blockSize) {
  if (inits.empty()) {
    SmallVector<Value> none(op.getNumDpsInits());
    return lowerToLoopNest(rewriter, op, none, blockSize);
  }
  if (!op.hasPureBufferSemantics())
    return op.emitOpError("expected buffers: the GPU kernels are formed after bufferization");
  FailureOr<linalg::LinalgOp> ordered = parallelDimsFirst(rewriter, op);
  if (failed(ordered))
    return failure();
  op = *ordered;
  if (op.getNumReductionLoops() > 0)
    return lowerReduction(rewriter, op, inits, blockSize);
  rewriter.setInsertionPoint(op);
  if (op.getNumParallelLoops() == 0) {
    FailureOr<scf::ParallelOp> single = wrapInSingleIteration(rewriter, op);
    if (failed(single))
      return failure();
    rewriter.setInsertionPoint(op);
    if (failed(linalg::linalgOpToLoops(rewriter, op)))
      return op.emitOpError("cannot be lowered to loops");
    rewriter.eraseOp(op);
    return single;
  }
  FailureOr<linalg::LinalgLoops> loops = linalg::linalgOpToParallelLoops(rewriter, op);
  if (failed(loops) || loops->empty())
    return op.emitOpError("cannot be lowered to parallel loops");
  rewriter.eraseOp(op);
  return cast<scf::ParallelOp>(loops->front());
}

/// The memrefs `op` and its nested ops load from and store to.
void collectAccesses(Operation *op, SetVector<Value> &loaded, SetVector<Value> &stored) {
  op->walk([&](Operation *nested) {
    if (auto load = dyn_cast<memref::LoadOp>(nested))
      loaded.insert(load.getMemRef());
    else if (auto store = dyn_cast<memref::StoreOp>(nested))
      stored.insert(store.getMemRef());
  });
}

/// A sequential scatter nest (an embedding gradient's
/// `table[ids[n], d] += grad[n, d]`: rows in order, because two positions may
/// name the same row) as an scf.parallel over its inner loop: each column d
/// is its own thread, which adds the rows in the same order. Legal when every
/// access to a buffer the inner loop writes is at column d (its last index is
/// the inner induction variable, the others are fixed before the inner loop)
/// and those bytes are read through no other buffer. Null when `outer` is
/// not such a nest.
FailureOr<scf::ParallelOp> parallelizeScatter(RewriterBase &rewriter, scf::ForOp outer,
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

/// Whether two byte ranges of the arena overlap (an unknown range overlaps
/// everything).
bool overlap(const std::optional<ArenaAccess> &a, const std::optional<ArenaAccess> &b) {
  return !a || !b || (a->begin < b->end && b->begin < a->end);
}

/// Makes every thread of `nest` compute the scalar (rank-0) linalg op
/// `scalar` first and use the values instead of loading them (in a block
/// reduction, thread 0 where it stores the result); with `store`, the nest's
/// first thread also stores them, for whatever reads them later.
/// Fails (changing nothing) when the nest reaches the scalar's results other
/// than by loading them whole, or writes what the scalar reads.
LogicalResult prependScalar(RewriterBase &rewriter, scf::ParallelOp nest,
                            linalg::LinalgOp scalar, bool store, const ArenaAccesses &arena) {
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

/// Whether nothing between `first` and `second` touches memory.
bool onlyPureOpsBetween(Operation *first, Operation *second) {
  for (Operation *op = first->getNextNode(); op && op != second; op = op->getNextNode())
    if (!isMemoryEffectFree(op))
      return false;
  return true;
}

/// Whether `op` is a matrix product of the runtime's, which runs on the
/// compute stream like the kernels.
bool isComputeStreamProduct(Operation *op) {
  auto call = dyn_cast<func::CallOp>(op);
  return call && llvm::is_contained({kGemm, kBatchedGemm, kGemmBF16, kBatchedGemmBF16},
                                    call.getCallee());
}

/// Whether `op` is a kernel nest horizontal fusion can take: one dimension
/// from 0 with step 1 and a static bound, not a block reduction.
std::optional<int64_t> fusableTrips(Operation *op) {
  auto nest = dyn_cast<scf::ParallelOp>(op);
  if (!nest || nest.getNumLoops() != 1 || nest->hasAttr(kCooperativeNestAttr) ||
      !isConstantIntValue(nest.getLowerBound()[0], 0) ||
      !isConstantIntValue(nest.getStep()[0], 1))
    return std::nullopt;
  return getConstantIntValue(nest.getUpperBound()[0]);
}

/// One kernel for `nests`, which touch no byte another of them writes: their
/// index spaces laid end to end, each thread running the body of the nest
/// its index falls in. Placed where the last of them was (what lies between
/// them is free of side effects).
void fuseNests(RewriterBase &rewriter, ArrayRef<scf::ParallelOp> nests) {
  Location loc = rewriter.getFusedLoc(llvm::map_to_vector(
      nests, [](scf::ParallelOp nest) { return nest.getLoc(); }));
  int64_t total = 0;
  for (scf::ParallelOp nest : nests)
    total += *fusableTrips(nest);
  rewriter.setInsertionPoint(nests.back());
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  Value bound = arith::ConstantIndexOp::create(rewriter, loc, total);
  auto fused = scf::ParallelOp::create(rewriter, loc, ValueRange{zero}, ValueRange{bound},
                                       ValueRange{one});
  rewriter.setInsertionPoint(fused.getBody()->getTerminator());
  Value index = fused.getInductionVars()[0];
  int64_t start = 0;
  for (scf::ParallelOp nest : nests) {
    int64_t end = start + *fusableTrips(nest);
    Value inside = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult, index,
                                         arith::ConstantIndexOp::create(rewriter, loc, end));
    if (start > 0)
      inside = arith::AndIOp::create(
          rewriter, loc, inside,
          arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::uge, index,
                                arith::ConstantIndexOp::create(rewriter, loc, start)));
    auto branch = scf::IfOp::create(rewriter, loc, inside, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(branch.thenBlock()->getTerminator());
    IRMapping mapping;
    mapping.map(nest.getInductionVars()[0],
                start == 0 ? index
                           : arith::SubIOp::create(
                                 rewriter, loc, index,
                                 arith::ConstantIndexOp::create(rewriter, loc, start))
                                 .getResult());
    for (Operation &op : nest.getBody()->without_terminator())
      rewriter.clone(op, mapping);
    start = end;
  }
  for (scf::ParallelOp nest : nests)
    rewriter.eraseOp(nest);
}

/// A kernel's parameters may take 4352 bytes (sm_80; more needs PTX 8.1):
/// a fused run stops short of this many.
constexpr int64_t kKernelParameterBytes = 4096;

/// Whether two kernel nests do the same on other buffers of the same types.
bool sameKernel(Operation *a, Operation *b) {
  DenseMap<Value, Value> inside;
  auto outside = [](Operation *op, Value value) {
    Operation *def = value.getDefiningOp();
    return !op->isAncestor(def ? def : value.getParentBlock()->getParentOp());
  };
  return OperationEquivalence::isEquivalentTo(
      a, b,
      [&](Value l, Value r) {
        if (auto known = inside.find(l); known != inside.end())
          return success(known->second == r);
        return success(outside(a, l) && outside(b, r) && l.getType() == r.getType());
      },
      [&](Value l, Value r) { inside[l] = r; }, OperationEquivalence::IgnoreLocations);
}

/// Whether `op` reads a buffer it writes.
bool updatesInPlace(Operation *op) {
  SetVector<Value> loaded, stored;
  collectAccesses(op, loaded, stored);
  return llvm::any_of(stored, [&](Value memref) { return loaded.contains(memref); });
}


/// The values defined outside `op` that its kernel receives as parameters
/// (constants are computed in the kernel instead).
void collectParameters(Operation *op, llvm::SetVector<Value> &parameters) {
  op->walk([&](Operation *nested) {
    for (Value operand : nested->getOperands()) {
      Operation *def = operand.getDefiningOp();
      Operation *owner = def ? def : operand.getParentBlock()->getParentOp();
      if (!op->isAncestor(owner) && !(def && def->hasTrait<OpTrait::ConstantLike>()))
        parameters.insert(operand);
    }
  });
}

/// The bytes of a kernel's parameters: a memref is its descriptor (two
/// pointers, the offset, then sizes and strides), anything else 8 bytes.
int64_t parameterBytes(const llvm::SetVector<Value> &parameters) {
  int64_t bytes = 0;
  for (Value value : parameters) {
    auto memref = dyn_cast<MemRefType>(value.getType());
    bytes += memref ? (3 + 2 * memref.getRank()) * 8 : 8;
  }
  return bytes;
}

/// Fuses each run of consecutive independent kernel nests of `body` into one
/// kernel: a launch costs microseconds, and the runs are frequent (a unit's
/// gradients copied into its flat gradient one after the other, the fills
/// that start the attention's accumulators).
void fuseIndependentNests(RewriterBase &rewriter, Block &body, const ArenaAccesses &arena) {
  SmallVector<SmallVector<scf::ParallelOp>> runs(1);
  SmallVector<ArenaAccess> touched;
  llvm::SetVector<Value> parameters;
  auto endRun = [&] {
    if (!runs.back().empty())
      runs.emplace_back();
    touched.clear();
    parameters.clear();
  };
  auto independent = [&](Operation *op) {
    return llvm::none_of(arena.of(op), [&](const ArenaAccess &access) {
      return llvm::any_of(touched,
                          [&](const ArenaAccess &other) { return access.conflictsWith(other); });
    });
  };
  for (Operation &op : body.without_terminator()) {
    if (!fusableTrips(&op)) {
      // A product on the compute stream that touches none of the run's bytes
      // may run before the run's kernels (the fused kernel goes after it):
      // the transposes of attention's projections join up.
      if (!isMemoryEffectFree(&op) && !(isComputeStreamProduct(&op) && independent(&op)))
        endRun();
      continue;
    }
    llvm::SetVector<Value> joined = parameters;
    collectParameters(&op, joined);
    // The same in-place update of another buffer (the optimizer's step of
    // the next identical unit) starts a kernel of its own: a run of them
    // would grow with the model's depth, where identical units should share
    // their kernels (compile time).
    bool repeatedUpdate = updatesInPlace(&op) && llvm::any_of(runs.back(), [&](Operation *other) {
      return sameKernel(other, &op);
    });
    if (!independent(&op) || parameterBytes(joined) > kKernelParameterBytes || repeatedUpdate) {
      endRun();
      collectParameters(&op, parameters);
    } else {
      parameters = std::move(joined);
    }
    SmallVector<ArenaAccess> accesses = arena.of(&op);
    runs.back().push_back(cast<scf::ParallelOp>(op));
    llvm::append_range(touched, accesses);
  }
  for (ArrayRef<scf::ParallelOp> run : runs)
    if (run.size() > 1)
      fuseNests(rewriter, run);
}


/// The block and thread counts of a block reduction's nest.
std::optional<std::pair<int64_t, int64_t>> blockShape(Operation *op) {
  auto nest = dyn_cast<scf::ParallelOp>(op);
  if (!nest || !nest->hasAttr(kCooperativeNestAttr))
    return std::nullopt;
  auto lanes = *nest.getBody()->getOps<scf::ParallelOp>().begin();
  std::optional<int64_t> blocks = getConstantIntValue(nest.getUpperBound()[0]);
  std::optional<int64_t> threads = getConstantIntValue(lanes.getUpperBound()[0]);
  if (!blocks || !threads)
    return std::nullopt;
  return std::make_pair(*blocks, *threads);
}

/// Whether the part of the block reduction `later` before its gpu.all_reduce
/// (the threads' folds) reads no byte `earlier` writes. In one block, that is
/// all the merged kernel needs: everything after a block reduction is
/// ordered after all that came before it in the block, and thread 0, which
/// stores a result, is the thread that reads it next (the gradient norm's
/// running sum, carried from one unit's reduction to the next).
bool foldSkips(scf::ParallelOp later, scf::ParallelOp earlier, const ArenaAccesses &arena) {
  SetVector<Value> loaded, stored, written, unused;
  collectAccesses(earlier, unused, written);
  auto lanes = *later.getBody()->getOps<scf::ParallelOp>().begin();
  for (Operation &op : lanes.getBody()->without_terminator()) {
    if (isa<gpu::AllReduceOp>(op))
      break;
    collectAccesses(&op, loaded, stored);
  }
  return llvm::none_of(loaded, [&](Value read) {
    return llvm::any_of(written, [&](Value write) {
      return overlap(arena.bytesOf(read), arena.bytesOf(write));
    });
  });
}

/// Merges consecutive block reductions of the same shape that touch no byte
/// the other writes (a norm's backward reduces two products of each row), or
/// single blocks whose folds do not read what the earlier one writes: one
/// kernel whose threads do one, then the other.
void fuseSiblingReductions(RewriterBase &rewriter, Block &body, const ArenaAccesses &arena) {
  SmallVector<SmallVector<scf::ParallelOp>> groups(1);
  for (Operation &op : body.without_terminator()) {
    auto shape = blockShape(&op);
    if (!shape) {
      if (!isMemoryEffectFree(&op))
        groups.emplace_back();
      continue;
    }
    auto nest = cast<scf::ParallelOp>(op);
    SmallVector<scf::ParallelOp> &group = groups.back();
    auto conflicts = [&](scf::ParallelOp earlier) {
      return llvm::any_of(arena.of(earlier), [&](const ArenaAccess &a) {
        return llvm::any_of(arena.of(nest),
                            [&](const ArenaAccess &b) { return a.conflictsWith(b); });
      });
    };
    // The same reduction of the next identical unit (the gradient norm's)
    // starts a kernel of its own: identical units share their kernels.
    bool joins = !group.empty() && blockShape(group.back()) == shape &&
                 llvm::none_of(group, [&](scf::ParallelOp member) {
                   return sameKernel(member, nest) ||
                          (conflicts(member) &&
                           !(shape->first == 1 && foldSkips(nest, member, arena)));
                 });
    if (!joins && !group.empty())
      groups.emplace_back();
    groups.back().push_back(nest);
  }
  for (ArrayRef<scf::ParallelOp> group : groups) {
    if (group.size() < 2)
      continue;
    // Into the last one's place (only views lie between them), in order.
    scf::ParallelOp into = group.front();
    rewriter.moveOpBefore(into, group.back());
    auto lanes = *into.getBody()->getOps<scf::ParallelOp>().begin();
    for (scf::ParallelOp nest : group.drop_front()) {
      auto from = *nest.getBody()->getOps<scf::ParallelOp>().begin();
      IRMapping mapping;
      mapping.map(nest.getInductionVars()[0], into.getInductionVars()[0]);
      mapping.map(from.getInductionVars()[0], lanes.getInductionVars()[0]);
      rewriter.setInsertionPoint(lanes.getBody()->getTerminator());
      for (Operation &nested : from.getBody()->without_terminator())
        rewriter.clone(nested, mapping);
      rewriter.eraseOp(nest);
    }
  }
}

/// Splits a one-dimensional loop into blocks of `blockSize` threads (fewer
/// when the loop is shorter); the last block is guarded when it is partial.
LogicalResult tileIntoBlocks(scf::ParallelOp loop, int64_t blockSize) {
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound()[0]);
  std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound()[0]);
  std::optional<int64_t> step = getConstantIntValue(loop.getStep()[0]);
  if (!lower || !upper || !step || *step <= 0)
    return loop.emitOpError("expected static bounds: the step's buffers have static shapes");
  int64_t trips = std::max<int64_t>(llvm::divideCeil(*upper - *lower, *step), 1);
  int64_t threads = std::min(blockSize, trips);
  scf::tileParallelLoop(loop, {threads}, /*noMinMaxBounds=*/trips % threads != 0);
  return success();
}

struct FSDPFormKernelsPass : public fsdp::impl::FSDPFormKernelsPassBase<FSDPFormKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>(kStepFunction);
    if (!step || step.isExternal())
      return;
    if (blockSize < 1 || blockSize > 1024) {
      module.emitError() << "fsdp-form-kernels: block-size " << blockSize
                         << " is not in [1, 1024], the threads a CUDA block can have";
      return signalPassFailure();
    }
    // The step's block and the bodies of its loops (the attention's key
    // blocks), which stay on the host and launch their kernels each iteration.
    SmallVector<Block *> blocks = {&step.getBody().front()};
    for (size_t i = 0; i < blocks.size(); ++i)
      for (auto loop : blocks[i]->getOps<scf::ForOp>())
        if (isHostLoop(loop))
          blocks.push_back(loop.getBody());
    IRRewriter rewriter(&getContext());
    ArenaAccesses arena(step);
    for (Block *body : blocks)
      if (failed(formKernels(rewriter, *body, arena)))
        return signalPassFailure();
    // Folds the collapsed bounds (products of the extents) to constants.
    if (failed(applyPatternsGreedily(step, RewritePatternSet(&getContext()))))
      return signalPassFailure();
    for (Block *body : blocks) {
      fuseSiblingReductions(rewriter, *body, arena);
      fuseIndependentNests(rewriter, *body, arena);
    }
    for (Block *body : blocks) {
      SmallVector<scf::ParallelOp> nests(body->getOps<scf::ParallelOp>());
      for (scf::ParallelOp nest : nests) {
        // A block reduction is shaped already.
        if (nest->removeAttr(kCooperativeNestAttr))
          continue;
        if (failed(tileIntoBlocks(nest, blockSize)))
          return signalPassFailure();
      }
    }
  }

  /// Every piece of device work of `body` as one scf.parallel of one
  /// dimension; a loop of the host's is not device work itself.
  LogicalResult formKernels(IRRewriter &rewriter, Block &body, const ArenaAccesses &arena) {
    // Copies are kernels like any other.
    for (auto copy : llvm::make_early_inc_range(body.getOps<memref::CopyOp>())) {
      rewriter.setInsertionPoint(copy);
      linalg::CopyOp::create(rewriter, copy.getLoc(), copy.getSource(), copy.getTarget());
      rewriter.eraseOp(copy);
    }
    // Fills that only start a reduction become its accumulators' first value.
    DenseMap<Operation *, SmallVector<Value>> inits;
    for (auto op : llvm::to_vector(body.getOps<linalg::LinalgOp>()))
      if (op.getNumReductionLoops() > 0)
        inits[op] = takeFusableFills(op);
    SmallVector<Operation *> work;
    for (Operation &op : body.without_terminator())
      if (!isHostLoop(&op) && isDeviceWork(&op))
        work.push_back(&op);
    // The nest of the last full reduction, while only scalar work follows it.
    scf::ParallelOp fullReduction;
    // The nest of the block reduction just lowered.
    scf::ParallelOp rowReduction;
    // A scalar op no full reduction took, computed by the kernels that follow
    // it (`consumer`: the last of them) rather than by a thread of its own.
    linalg::LinalgOp scalar;
    Operation *consumer = nullptr;
    auto settleScalar = [&]() -> LogicalResult {
      if (!scalar)
        return success();
      linalg::LinalgOp op = std::exchange(scalar, nullptr);
      if (consumer != op) {
        rewriter.eraseOp(op);
        return success();
      }
      return lowerToLoopNest(rewriter, op, {}, blockSize);
    };
    for (Operation *op : work) {
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      if (linalgOp && linalgOp.getNumLoops() == 0) {
        if (fullReduction && onlyPureOpsBetween(fullReduction, op)) {
          appendToFullReduction(rewriter, fullReduction, linalgOp);
          continue;
        }
        if (failed(settleScalar()))
          return failure();
        scalar = linalgOp;
        consumer = op;
        continue;
      }
      fullReduction = nullptr;
      // A row-wise op right after a block reduction runs in its kernel.
      if (linalgOp && rowReduction && onlyPureOpsBetween(rowReduction, op) &&
          succeeded(fuseRowEpilogue(rewriter, rowReduction, linalgOp, arena))) {
        rowReduction = nullptr;
        continue;
      }
      rowReduction = nullptr;
      FailureOr<scf::ParallelOp> nest = scf::ParallelOp();
      bool reduces = linalgOp && linalgOp.getNumReductionLoops() > 0;
      if (linalgOp) {
        SmallVector<Value> starts = inits.lookup(op);
        starts.resize(linalgOp.getNumDpsInits());
        nest = lowerToLoopNest(rewriter, linalgOp, starts, blockSize);
      } else if (auto loop = dyn_cast<scf::ForOp>(op)) {
        nest = parallelizeScatter(rewriter, loop, arena);
        if (succeeded(nest) && !*nest && failed(wrapInSingleIteration(rewriter, op)))
          return failure();
      } else if (failed(wrapInSingleIteration(rewriter, op))) {
        return failure();
      }
      if (failed(nest))
        return failure();
      if (*nest && isFullReductionNest(*nest))
        fullReduction = *nest;
      if (*nest && reduces)
        rowReduction = *nest;
      if (!scalar)
        continue;
      bool takes = *nest && onlyPureOpsBetween(consumer, *nest) &&
                   succeeded(prependScalar(rewriter, *nest, scalar,
                                           /*store=*/consumer == scalar, arena));
      if (takes)
        consumer = *nest;
      else if (failed(settleScalar()))
        return failure();
    }
    if (failed(settleScalar()))
      return failure();
    // One dimension, then blocks of threads.
    SmallVector<scf::ParallelOp> nests(body.getOps<scf::ParallelOp>());
    for (scf::ParallelOp nest : nests)
      if (nest.getNumLoops() > 1 && !nest->hasAttr(kCooperativeNestAttr)) {
        std::vector<unsigned> all(nest.getNumLoops());
        std::iota(all.begin(), all.end(), 0);
        collapseParallelLoops(rewriter, nest, {all});
      }
    return success();
  }
};

} // namespace
