//===- KernelFusion.cpp - fewer launches for the step's kernels -----------===//
//
// A launch costs microseconds, and the step has many small kernels in a row
// that share nothing (a unit's gradients copied into its flat gradient, the
// fills that start the attention's accumulators, the optimizer's step of
// each unit, reductions of the same rows): they run as one kernel, as long
// as no byte one writes is touched by another (the buffer plan's byte
// ranges say), its parameters fit, and identical units keep sharing their
// kernels.
//
//===----------------------------------------------------------------------===//

#include "Utils/RuntimeABI.h"

#include "FormKernels.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// Whether `op` is a matrix product of the runtime's, which runs on the
/// compute stream like the kernels.
bool isComputeStreamProduct(Operation *op) {
  auto call = dyn_cast<func::CallOp>(op);
  return call && isGemmCallee(call.getCallee());
}

/// Whether `op` is a kernel nest horizontal fusion can take: one dimension
/// from 0 with step 1 and a static bound, not a block reduction.
std::optional<int64_t> fusableTrips(Operation *op) {
  auto nest = dyn_cast<scf::ParallelOp>(op);
  if (!nest || nest.getNumLoops() != 1 || nest->hasAttr(kCooperativeNestAttr) ||
      !isConstantIntValue(nest.getLowerBound()[0], 0) || !isConstantIntValue(nest.getStep()[0], 1))
    return std::nullopt;
  return getConstantIntValue(nest.getUpperBound()[0]);
}

/// One kernel for `nests`, which touch no byte another of them writes: their
/// index spaces laid end to end, each thread running the body of the nest
/// its index falls in. Placed where the last of them was (what lies between
/// them is free of side effects).
void fuseNests(RewriterBase &rewriter, ArrayRef<scf::ParallelOp> nests) {
  Location loc = rewriter.getFusedLoc(
      llvm::map_to_vector(nests, [](scf::ParallelOp nest) { return nest.getLoc(); }));
  int64_t total = 0;
  for (scf::ParallelOp nest : nests)
    total += *fusableTrips(nest);
  rewriter.setInsertionPoint(nests.back());
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  Value bound = arith::ConstantIndexOp::create(rewriter, loc, total);
  auto fused =
      scf::ParallelOp::create(rewriter, loc, ValueRange{zero}, ValueRange{bound}, ValueRange{one});
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
    // The nest's own index, clamped to its range (which the guard already
    // ensures): the integer range analysis that narrows indices to 32 bits
    // (fsdp-cuda-narrow-kernel-indices) does not read the guard, and would see
    // each nest's index, and the offsets made from it, range over the whole
    // fused kernel. Signed, as that analysis keeps a module 64-bit where an
    // unsigned operation may see a negative operand.
    Value local = index;
    if (start > 0)
      local = arith::SubIOp::create(rewriter, loc, index,
                                    arith::ConstantIndexOp::create(rewriter, loc, start));
    local = arith::MinSIOp::create(rewriter, loc, local,
                                   arith::ConstantIndexOp::create(rewriter, loc, end - start - 1));
    if (start > 0)
      local = arith::MaxSIOp::create(rewriter, loc, local,
                                     arith::ConstantIndexOp::create(rewriter, loc, 0));
    IRMapping mapping;
    mapping.map(nest.getInductionVars()[0], local);
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

/// The bytes a kernel parameter takes: a static memref is one pointer (the
/// CUDA pipeline passes memrefs to kernels as bare pointers); another view
/// is made in the kernel from what makes it (fsdp-cuda-sink-kernel-views), a
/// memref of nothing known is a descriptor (two pointers, the offset, then
/// sizes and strides); anything else 8 bytes.
int64_t parameterBytes(Value value) {
  auto memref = dyn_cast<MemRefType>(value.getType());
  if (!memref || LLVMTypeConverter::canConvertToBarePtr(memref))
    return 8;
  Operation *def = value.getDefiningOp();
  if (!isa_and_present<ViewLikeOpInterface>(def))
    return (3 + 2 * memref.getRank()) * 8;
  int64_t bytes = 0;
  for (Value operand : def->getOperands())
    bytes += parameterBytes(operand);
  return bytes;
}

int64_t parameterBytes(const llvm::SetVector<Value> &parameters) {
  int64_t bytes = 0;
  for (Value value : parameters)
    bytes += parameterBytes(value);
  return bytes;
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
    return llvm::any_of(
        written, [&](Value write) { return overlap(arena.bytesOf(read), arena.bytesOf(write)); });
  });
}

} // namespace

void mlir::fsdp::fuseIndependentNests(RewriterBase &rewriter, Block &body,
                                      const ArenaAccesses &arena) {
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

void mlir::fsdp::fuseSiblingReductions(RewriterBase &rewriter, Block &body,
                                       const ArenaAccesses &arena) {
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
    bool joins =
        !group.empty() && blockShape(group.back()) == shape &&
        llvm::none_of(group, [&](scf::ParallelOp member) {
          return sameKernel(member, nest) ||
                 (conflicts(member) && !(shape->first == 1 && foldSkips(nest, member, arena)));
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
