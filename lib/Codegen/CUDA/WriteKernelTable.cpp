//===- WriteKernelTable.cpp - fsdp-cuda-write-kernel-table ----------------===//
//
// What each kernel of the step does, counted from its code once it is
// outlined, and what that costs on a device profile (KernelCost.h): the
// table that shows a kernel a few blocks wide, or a thread summing thousands
// of rows in order, before any GPU runs it.
//
//===----------------------------------------------------------------------===//

#include "Analysis/KernelCost.h"
#include "fsdp/Codegen/CUDA/Passes.h"

#include "KernelOrigins.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"

#include <limits>
#include <map>

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPWRITEKERNELTABLEPASS
#include "fsdp/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// The buffer a memref reads: the source of its views.
Value rootBuffer(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  return memref;
}

double bufferBytes(Value memref) {
  auto type = dyn_cast<MemRefType>(memref.getType());
  if (!type || !type.hasStaticShape())
    return std::numeric_limits<double>::infinity();
  return static_cast<double>(type.getNumElements()) *
         static_cast<double>(llvm::divideCeil(type.getElementTypeBitWidth(), 8));
}

/// The iterations of the loops around `op`: in a kernel, those one thread
/// runs; on the host, the launches of a kernel per step.
int64_t tripsAround(Operation *op, bool longest = false) {
  int64_t trips = 1;
  for (auto loop = op->getParentOfType<scf::ForOp>(); loop;
       loop = loop->getParentOfType<scf::ForOp>())
    trips *= loopTrips(loop, longest);
  return trips;
}

/// Index values a comparison with constants admits: [begin, end).
struct Interval {
  int64_t begin = std::numeric_limits<int64_t>::min();
  int64_t end = std::numeric_limits<int64_t>::max();
};

/// The comparison with its operands swapped: `c < x` is `x > c`.
arith::CmpIPredicate swapped(arith::CmpIPredicate predicate) {
  using P = arith::CmpIPredicate;
  switch (predicate) {
  case P::ult:
    return P::ugt;
  case P::ule:
    return P::uge;
  case P::ugt:
    return P::ult;
  case P::uge:
    return P::ule;
  case P::slt:
    return P::sgt;
  case P::sle:
    return P::sge;
  case P::sgt:
    return P::slt;
  case P::sge:
    return P::sle;
  default:
    return predicate;
  }
}

/// The intervals `condition` restricts values to, for the conditions made
/// of comparisons of one value with a constant, joined by `and`.
void admitted(Value condition, llvm::MapVector<Value, Interval> &intervals) {
  if (auto both = condition.getDefiningOp<arith::AndIOp>()) {
    admitted(both.getLhs(), intervals);
    admitted(both.getRhs(), intervals);
    return;
  }
  auto compare = condition.getDefiningOp<arith::CmpIOp>();
  if (!compare)
    return;
  Value index = compare.getLhs();
  std::optional<int64_t> bound = getConstantIntValue(compare.getRhs());
  arith::CmpIPredicate predicate = compare.getPredicate();
  using P = arith::CmpIPredicate;
  if (!bound) {
    // c < x read as x > c.
    index = compare.getRhs();
    bound = getConstantIntValue(compare.getLhs());
    predicate = swapped(predicate);
  }
  if (!bound)
    return;
  Interval &interval = intervals[index];
  switch (predicate) {
  case P::ult:
  case P::slt:
    interval.end = std::min(interval.end, *bound);
    break;
  case P::ule:
  case P::sle:
    interval.end = std::min(interval.end, *bound + 1);
    break;
  case P::uge:
  case P::sge:
    interval.begin = std::max(interval.begin, *bound);
    break;
  case P::ugt:
  case P::sgt:
    interval.begin = std::max(interval.begin, *bound + 1);
    break;
  case P::eq:
    interval.begin = std::max(interval.begin, *bound);
    interval.end = std::min(interval.end, *bound + 1);
    break;
  default:
    break;
  }
}

/// What one kernel's threads do, counted from its body.
class KernelCounts {
public:
  KernelCounts(gpu::GPUFuncOp kernel, int64_t blockThreads, int64_t gridBlocks)
      : blockThreads(blockThreads), totalThreads(blockThreads * gridBlocks) {
    kernel.walk([&](Operation *op) { count(op); });
  }

  void addTo(KernelWork &work) const {
    for (auto [root, bytes] : read)
      work.bytesRead += std::min(bytes, bufferBytes(root));
    for (auto [root, bytes] : written)
      work.bytesWritten += std::min(bytes, bufferBytes(root));
    work.arithmetic = arithmetic.arithmetic;
    work.divides = arithmetic.divides;
    work.floatOps = arithmetic.floatOps;
    work.serialTrips = serialTrips;
    work.memoryCarried = memoryCarried;
  }

  StringRef kind() const {
    if (memoryCarried)
      return "scatter";
    if (combines)
      return "block reduction";
    if (serialTrips > 1)
      return "thread reduction";
    return "elementwise";
  }

private:
  /// The share of the threads that run `op`: each guard around it admits an
  /// interval of a thread index (the block's, or the grid's linear index).
  double activeShare(Operation *op) const {
    double share = 1;
    for (auto guard = op->getParentOfType<scf::IfOp>(); guard;
         guard = guard->getParentOfType<scf::IfOp>()) {
      if (!guard.getThenRegion().isAncestor(op->getParentRegion()))
        continue;
      llvm::MapVector<Value, Interval> intervals;
      admitted(guard.getCondition(), intervals);
      for (auto [index, interval] : intervals) {
        int64_t range = index.getDefiningOp<gpu::ThreadIdOp>() ? blockThreads : totalThreads;
        int64_t inside = std::min(interval.end, range) - std::max<int64_t>(interval.begin, 0);
        share *= static_cast<double>(std::max<int64_t>(inside, 0)) / static_cast<double>(range);
      }
    }
    return share;
  }

  /// Whether a loop around `op` with more than one iteration also loads
  /// from `root`: the next iteration reads what this store wrote.
  static bool loadedInSameLoop(Operation *op, Value root) {
    for (auto loop = op->getParentOfType<scf::ForOp>(); loop;
         loop = loop->getParentOfType<scf::ForOp>()) {
      if (loopTrips(loop) < 2)
        continue;
      WalkResult found = loop.walk([&](Operation *nested) {
        Value source;
        if (auto load = dyn_cast<memref::LoadOp>(nested))
          source = load.getMemRef();
        else if (auto load = dyn_cast<vector::LoadOp>(nested))
          source = load.getBase();
        return source && rootBuffer(source) == root ? WalkResult::interrupt()
                                                    : WalkResult::advance();
      });
      if (found.wasInterrupted())
        return true;
    }
    return false;
  }

  void count(Operation *op) {
    if (isa<gpu::AllReduceOp>(op))
      combines = true;
    int64_t trips = tripsAround(op);
    serialTrips = std::max(serialTrips, tripsAround(op, /*longest=*/true));
    double executions = static_cast<double>(totalThreads) * activeShare(op) * trips;
    auto access = [&](Value memref, Type element, bool store) {
      auto vector = dyn_cast<VectorType>(element);
      double elements = vector ? static_cast<double>(vector.getNumElements()) : 1;
      double bytes = elements * static_cast<double>(llvm::divideCeil(
                                    getElementTypeOrSelf(element).getIntOrFloatBitWidth(), 8));
      Value root = rootBuffer(memref);
      (store ? written : read)[root] += executions * bytes;
      if (store && loadedInSameLoop(op, root))
        memoryCarried = true;
    };
    if (auto load = dyn_cast<memref::LoadOp>(op))
      return access(load.getMemRef(), load.getType(), false);
    if (auto store = dyn_cast<memref::StoreOp>(op))
      return access(store.getMemRef(), store.getValueToStore().getType(), true);
    if (auto load = dyn_cast<vector::LoadOp>(op))
      return access(load.getBase(), load.getVectorType(), false);
    if (auto store = dyn_cast<vector::StoreOp>(op))
      return access(store.getBase(), store.getVectorType(), true);
    OpArithmetic one = arithmeticOf(op);
    arithmetic.arithmetic += executions * one.arithmetic;
    arithmetic.divides += executions * one.divides;
    arithmetic.floatOps += executions * one.floatOps;
  }

  int64_t blockThreads, totalThreads;
  llvm::MapVector<Value, double> read, written;
  OpArithmetic arithmetic;
  int64_t serialTrips = 1;
  bool memoryCarried = false, combines = false;
};

/// One row of the table: a kernel at one launch shape.
struct KernelRow {
  gpu::GPUFuncOp kernel;
  std::array<int64_t, 3> grid, block;
  int64_t launches = 0;
  std::string kind;
  KernelWork work;
  KernelTime time;
};

std::optional<std::array<int64_t, 3>> constantSizes(gpu::KernelDim3 sizes) {
  std::optional<int64_t> x = getConstantIntValue(sizes.x), y = getConstantIntValue(sizes.y),
                         z = getConstantIntValue(sizes.z);
  if (!x || !y || !z)
    return std::nullopt;
  return std::array<int64_t, 3>{*x, *y, *z};
}

/// Rows in the order the step first launches each kernel shape.
FailureOr<std::vector<KernelRow>> collectRows(ModuleOp module, const DeviceProfile &profile) {
  std::vector<KernelRow> rows;
  std::map<std::tuple<Operation *, std::array<int64_t, 3>, std::array<int64_t, 3>>, size_t> index;
  WalkResult walked = module.walk([&](gpu::LaunchFuncOp launch) {
    auto kernel = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(launch, launch.getKernel());
    std::optional<std::array<int64_t, 3>> grid = constantSizes(launch.getGridSizeOperandValues());
    std::optional<std::array<int64_t, 3>> block =
        constantSizes(launch.getBlockSizeOperandValues());
    if (!kernel || !grid || !block) {
      launch.emitError("fsdp-cuda-write-kernel-table: expected a kernel of the module launched "
                       "with constant sizes");
      return WalkResult::interrupt();
    }
    auto [at, inserted] = index.try_emplace({kernel, *grid, *block}, rows.size());
    if (inserted) {
      KernelRow row{kernel, *grid, *block};
      row.work.blocks = (*grid)[0] * (*grid)[1] * (*grid)[2];
      row.work.threadsPerBlock = (*block)[0] * (*block)[1] * (*block)[2];
      KernelCounts counts(kernel, row.work.threadsPerBlock, row.work.blocks);
      counts.addTo(row.work);
      row.kind = counts.kind().str();
      row.time = predictKernelTime(row.work, profile);
      rows.push_back(std::move(row));
    }
    // A launch in a host loop (the attention's key blocks) runs once per
    // iteration.
    rows[at->second].launches += tripsAround(launch);
    return WalkResult::advance();
  });
  if (walked.wasInterrupted())
    return failure();
  return rows;
}

llvm::json::Array sizesJson(const std::array<int64_t, 3> &sizes) {
  return llvm::json::Array{sizes[0], sizes[1], sizes[2]};
}

llvm::json::Object rowJson(const KernelRow &row) {
  gpu::GPUFuncOp kernel = row.kernel;
  llvm::json::Array origin;
  for (FileLineColLoc place : kernelPlaces(kernel))
    origin.push_back(placeText(place));
  const KernelWork &work = row.work;
  return llvm::json::Object{{"name", kernel.getName()},
                            {"kind", row.kind},
                            {"origin", std::move(origin)},
                            {"launches", row.launches},
                            {"grid", sizesJson(row.grid)},
                            {"block", sizesJson(row.block)},
                            {"bytes_read", work.bytesRead},
                            {"bytes_written", work.bytesWritten},
                            {"flops", work.floatOps},
                            {"serial_trips", work.serialTrips},
                            {"memory_carried", work.memoryCarried},
                            {"roofline_seconds", row.time.roofline},
                            {"predicted_seconds", row.time.predicted}};
}

/// Per kind: kernels, launches, and per step the bytes, roofline and
/// predicted seconds of all its launches.
llvm::json::Array summaryJson(const std::vector<KernelRow> &rows) {
  struct Totals {
    int64_t kernels = 0, launches = 0;
    double bytes = 0, roofline = 0, predicted = 0;
  };
  llvm::MapVector<StringRef, Totals> byKind;
  for (const KernelRow &row : rows) {
    Totals &totals = byKind[row.kind];
    double launches = static_cast<double>(row.launches);
    totals.kernels += 1;
    totals.launches += row.launches;
    totals.bytes += launches * (row.work.bytesRead + row.work.bytesWritten);
    totals.roofline += launches * row.time.roofline;
    totals.predicted += launches * row.time.predicted;
  }
  llvm::json::Array summary;
  for (auto [kind, totals] : byKind)
    summary.push_back(llvm::json::Object{{"kind", kind},
                                         {"kernels", totals.kernels},
                                         {"launches", totals.launches},
                                         {"bytes", totals.bytes},
                                         {"roofline_seconds", totals.roofline},
                                         {"predicted_seconds", totals.predicted}});
  return summary;
}

struct FSDPWriteKernelTablePass
    : public fsdp::impl::FSDPWriteKernelTablePassBase<FSDPWriteKernelTablePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::Expected<DeviceProfile> profile = DeviceProfile::load(deviceProfile);
    if (!profile) {
      module.emitError() << "fsdp-cuda-write-kernel-table: device-profile: "
                         << llvm::toString(profile.takeError());
      return signalPassFailure();
    }
    FailureOr<std::vector<KernelRow>> rows = collectRows(module, *profile);
    if (failed(rows))
      return signalPassFailure();
    llvm::json::Array kernels;
    for (const KernelRow &row : *rows)
      kernels.push_back(rowJson(row));
    llvm::json::Object table{{"profile", profile->name},
                             {"multiprocessors", profile->multiprocessors},
                             {"kernels", std::move(kernels)},
                             {"summary", summaryJson(*rows)}};
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> output = openOutputFile(file, &error);
    if (!output) {
      module.emitError() << "fsdp-cuda-write-kernel-table: " << error;
      return signalPassFailure();
    }
    output->os() << llvm::formatv("{0:2}", llvm::json::Value(std::move(table))) << "\n";
    output->keep();
  }
};

} // namespace
