//===- StepCost.cpp - the predicted time of a compiled step ---------------===//

#include "Analysis/StepCost.h"

#include "Analysis/ArenaAccesses.h"
#include "Analysis/KernelCost.h"

#include "Utils/RuntimeABI.h"
#include "fsdp/IR/BufferKinds.h"
#include "fsdprt/ManifestSchema.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// What an op does, counted over everything nested in it.
struct Work {
  double flops = 0;      // matrix-product FLOPs
  double bytes = 0;      // memory read and written
  double arithmetic = 0; // scalar arithmetic of loops
  double divides = 0;    // divisions and square roots, on the divider
  // Loops that are not vectorised: their arithmetic, and the additions into
  // an accumulator, each waiting for the one before.
  double scalarArithmetic = 0, dependent = 0;
  /// The part of `flops` in bf16 products, the part that computes again
  /// what the step computed before (an attention backward's scores), and the
  /// floating-point operations of loops, one each (an exponential counts one,
  /// not the polynomial it becomes): what the manifest's step_flops reports.
  double bf16Flops = 0, recomputedFlops = 0, floatOps = 0;

  Work &operator+=(const Work &other) {
    flops += other.flops;
    bytes += other.bytes;
    arithmetic += other.arithmetic;
    divides += other.divides;
    scalarArithmetic += other.scalarArithmetic;
    dependent += other.dependent;
    bf16Flops += other.bf16Flops;
    recomputedFlops += other.recomputedFlops;
    floatOps += other.floatOps;
    return *this;
  }
  Work scaled(double times) const {
    return {flops * times,
            bytes * times,
            arithmetic * times,
            divides * times,
            scalarArithmetic * times,
            dependent * times,
            bf16Flops * times,
            recomputedFlops * times,
            floatOps * times};
  }
  /// Memory and arithmetic overlap; a vectorised loop's divisions and its
  /// other arithmetic issue from the same instruction stream, whose
  /// dependents wait on the divider, and add up (the MLP's Adam update: 73 µs
  /// measured against 42 µs of divisions alone); a serial loop's arithmetic
  /// overlaps its chain of accumulations.
  double seconds(const DeviceProfile &profile, double memoryBandwidth) const {
    return std::max({bytes / memoryBandwidth,
                     arithmetic / profile.vectorFlops + divides / profile.vectorDivides,
                     scalarArithmetic / profile.scalarFlops, dependent / profile.dependentFlops});
  }
};

double elementBytes(Type type) {
  return static_cast<double>(llvm::divideCeil(type.getIntOrFloatBitWidth(), 8));
}

double bufferBytes(Type type) {
  auto memref = llvm::dyn_cast<MemRefType>(type);
  if (!memref || !memref.hasStaticShape())
    return 0;
  return static_cast<double>(memref.getNumElements()) * elementBytes(memref.getElementType());
}

std::optional<int64_t> constantInt(Value value) {
  APInt result;
  if (matchPattern(value, m_ConstantInt(&result)))
    return result.getSExtValue();
  return std::nullopt;
}

/// The arithmetic one scalar op stands for (KernelCost.h): exp, log and tanh
/// become polynomials of a few dozen ops (fsdp-approximate-math, NVVM's
/// libdevice), and so do fsdp.rope's exp2, cosine and sine (libm, libdevice);
/// divisions and square roots go to the divider.
Work scalarWork(Operation *op) {
  OpArithmetic counted = fsdp::arithmeticOf(op);
  Work work;
  work.arithmetic = counted.arithmetic;
  work.divides = counted.divides;
  work.floatOps = counted.floatOps;
  return work;
}

/// A runtime product: 2 m n k FLOPs per matrix, A, B and C moved once.
Work gemmWork(func::CallOp call) {
  StringRef callee = call.getCallee();
  bool batched = isBatchedGemmCallee(callee);
  double element =
      (isBF16GemmCallee(callee) ? fsdprt::manifest::dtype::kBF16 : fsdprt::manifest::dtype::kF32)
          .bytes;
  unsigned first = batched ? 3 : 2;
  double batch = batched ? static_cast<double>(constantInt(call.getOperand(2)).value_or(1)) : 1;
  std::optional<int64_t> m = constantInt(call.getOperand(first)),
                         n = constantInt(call.getOperand(first + 1)),
                         k = constantInt(call.getOperand(first + 2));
  if (!m || !n || !k)
    return {};
  double dm = static_cast<double>(*m), dn = static_cast<double>(*n), dk = static_cast<double>(*k);
  Work work{2 * batch * dm * dn * dk, batch * element * (dm * dk + dk * dn + dm * dn)};
  if (isBF16GemmCallee(callee))
    work.bf16Flops = work.flops;
  if (call->hasAttr(kRecomputedAttr))
    work.recomputedFlops = work.flops;
  return work;
}

/// A fused attention call (fsdprt_attention_bf16, or its gradient): the
/// products it stands for, 2 forward and 5 backward of 2 D FLOPs per scored
/// pair (attentionFusedPairs) of each batch and head (of the backward's, the
/// scores computed again), and its operands and results moved once.
Work attentionWork(func::CallOp call) {
  bool backward = call.getCallee() == kAttentionGradBF16;
  double shape[5];
  for (unsigned i = 0; i < 5; ++i) {
    std::optional<int64_t> size = constantInt(call.getOperand(i));
    if (!size)
      return {};
    shape[i] = static_cast<double>(*size);
  }
  auto [batch, heads, kvHeads, seq, headDim] = shape;
  bool causal = constantInt(call.getOperand(5)).value_or(0) != 0;
  std::optional<int64_t> window = constantInt(call.getOperand(6));
  if (window == 0)
    window.reset();
  auto length = static_cast<int64_t>(seq);
  double product =
      2 * batch * heads * attentionFusedPairs(length, length, causal, window) * headDim;
  double queries = 2 * batch * heads * seq * headDim, keys = 2 * batch * kvHeads * seq * headDim;
  double lse = 4 * batch * heads * seq;
  // Backward reads the queries, the output and its gradient, the keys, the
  // values and the log-sum-exp, and writes the three gradients.
  if (backward) {
    Work work{5 * product, 4 * queries + 4 * keys + lse};
    work.recomputedFlops = product;
    return work;
  }
  return {2 * product, 2 * queries + 2 * keys + lse, 0};
}

bool isAttentionCallee(StringRef callee) {
  return callee == kAttentionBF16 || callee == kAttentionGradBF16;
}

Work workOf(Operation *op);

/// Iterations of a loop with constant bounds (1 where they are not).
double tripCount(scf::ForOp loop) {
  std::optional<int64_t> lower = constantInt(loop.getLowerBound()),
                         upper = constantInt(loop.getUpperBound()),
                         step = constantInt(loop.getStep());
  if (!lower || !upper || !step || *step <= 0)
    return 1;
  return static_cast<double>(std::max<int64_t>(0, llvm::divideCeil(*upper - *lower, *step)));
}

/// The dependent instructions of one accumulation of a reduction: the ops
/// that combine an output's running value with the new point, a maximum or
/// minimum counting two (x86 has no IEEE maximum: a max and a select on NaN,
/// 2.3x an addition's time in the small Llama's row maxima).
double accumulationSteps(linalg::LinalgOp op) {
  double steps = 1;
  for (BlockArgument running : op.getRegionOutputArgs())
    for (Operation *combine : running.getUsers())
      steps = std::max(steps, isa<arith::MaximumFOp, arith::MinimumFOp>(combine) ? 2.0 : 1.0);
  return steps;
}

/// The scalar work of a region's ops, each executed `times` times.
Work regionWork(Region &region) {
  Work work;
  for (Operation &op : region.getOps())
    work += workOf(&op);
  return work;
}

/// A linalg op's payload, once.
Work payloadWork(Operation *op) {
  Work work;
  for (Region &region : op->getRegions())
    work += regionWork(region);
  return work;
}

Work workOf(Operation *op) {
  if (auto call = dyn_cast<func::CallOp>(op)) {
    if (isAttentionCallee(call.getCallee()))
      return attentionWork(call);
    return isGemmCallee(call.getCallee()) ? gemmWork(call) : Work{};
  }
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    // Every operand moved once; the payload once per point of the
    // iteration space (loads inside it move bytes of their own).
    Work work;
    for (Value operand : op->getOperands())
      work.bytes += bufferBytes(operand.getType());
    double points = 1;
    for (int64_t range : linalgOp.getStaticLoopRanges())
      points *= ShapedType::isDynamic(range) ? 1 : static_cast<double>(range);
    Work payload = payloadWork(op).scaled(points);
    // Lowered to loops in iterator order: a reduction innermost into a float
    // accumulates in order, one point after the other, and keeps LLVM from
    // vectorising the nest.
    auto iterators = linalgOp.getIteratorTypesArray();
    bool serial = !iterators.empty() && iterators.back() == utils::IteratorType::reduction &&
                  llvm::any_of(linalgOp.getDpsInits(), [](Value init) {
                    return isa<FloatType>(getElementTypeOrSelf(init.getType()));
                  });
    if (serial) {
      payload.scalarArithmetic += payload.arithmetic + payload.divides;
      payload.arithmetic = payload.divides = 0;
      payload.dependent = points * accumulationSteps(linalgOp);
    }
    work += payload;
    return work;
  }
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    return {0, 2 * bufferBytes(copy.getSource().getType()), 0};
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return {0, elementBytes(load.getType()), 0};
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return {0, elementBytes(store.getValueToStore().getType()), 0};
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return regionWork(loop.getRegion()).scaled(tripCount(loop));
  Work work = scalarWork(op);
  for (Region &region : op->getRegions())
    work += regionWork(region);
  return work;
}

/// The bytes of the distinct buffers an op reads or writes: what has to be
/// in cache for it to run from there. A product's are its matrices; any
/// other op's, the memrefs it or its body uses from outside.
double footprintOf(Operation *op, const Work &work) {
  if (auto call = dyn_cast<func::CallOp>(op))
    return isGemmCallee(call.getCallee()) || isAttentionCallee(call.getCallee()) ? work.bytes
                                                                                 : 0;
  llvm::DenseSet<Value> buffers;
  double bytes = 0;
  op->walk([&](Operation *nested) {
    for (Value operand : nested->getOperands())
      if (isa<MemRefType>(operand.getType()) &&
          (nested == op || !op->isAncestor(operand.getParentRegion()->getParentOp())) &&
          buffers.insert(operand).second)
        bytes += bufferBytes(operand.getType());
  });
  return bytes;
}

/// Whether an op of the step is work the compute stream does (as opposed to
/// views, constants and address arithmetic, which cost nothing at run time).
bool isComputeOp(Operation *op) {
  return isa<func::CallOp, linalg::LinalgOp, memref::CopyOp, scf::ForOp>(op);
}

/// The compute stream's time of a compute op: products, fused attention and
/// everything else, and how much of it is launch overhead.
struct ComputeTime {
  double matmul = 0, attention = 0, other = 0, launches = 0;

  ComputeTime &operator+=(const ComputeTime &t) {
    matmul += t.matmul;
    attention += t.attention;
    other += t.other;
    launches += t.launches;
    return *this;
  }
  double total() const { return matmul + attention + other; }
};

/// Whether `loop` is one the host runs, launching its body's ops each
/// iteration: it calls the runtime (the attention's key blocks). Any other
/// loop of the step (an embedding gradient's scatter) is device work itself.
bool isHostLoop(scf::ForOp loop) {
  return loop->walk([](func::CallOp) { return WalkResult::interrupt(); }).wasInterrupted();
}

/// The threads per block the CUDA target's kernels have (fsdpc
/// --gpu-block-size's default).
constexpr int64_t kBlockSize = 256;

/// The launch of a device op that is not a library call, as
/// fsdp-cuda-form-kernels shapes it: a linalg op's (KernelCost.h), a copy's
/// a thread per element, and a scatter loop's a thread per column of its
/// inner loop, each running the outer loop's rows in order, each row reading
/// what the one before may have stored.
KernelWork launchShapeOfDeviceOp(Operation *op) {
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return launchShapeOf(linalgOp, kBlockSize);
  KernelWork shape;
  int64_t threads = 1;
  if (auto copy = dyn_cast<memref::CopyOp>(op)) {
    if (auto type = dyn_cast<MemRefType>(copy.getSource().getType()); type && type.hasStaticShape())
      threads = type.getNumElements();
  } else if (auto loop = dyn_cast<scf::ForOp>(op)) {
    auto inner = loop.getBody()->getOps<scf::ForOp>();
    threads = inner.empty() ? 1 : static_cast<int64_t>(tripCount(*inner.begin()));
    shape.serialTrips = static_cast<int64_t>(tripCount(loop));
    llvm::DenseSet<Value> loaded;
    loop.walk([&](memref::LoadOp load) { loaded.insert(load.getMemRef()); });
    loop.walk([&](memref::StoreOp store) {
      shape.memoryCarried |= loaded.contains(store.getMemRef());
    });
  }
  threads = std::max<int64_t>(threads, 1);
  shape.threadsPerBlock = std::min(kBlockSize, threads);
  shape.blocks = llvm::divideCeil(threads, shape.threadsPerBlock);
  return shape;
}

/// A host loop (the attention's key blocks) runs its body's ops one after
/// the other, each with its own overhead and rates, once per iteration; any
/// other op is one launch or call. On a GPU (a profile with
/// multiprocessors), a generated kernel is priced by KernelCost.h: the share
/// of the device its blocks fill and its longest serial chain.
/// `work` and `footprint` are the op's own (workOf, footprintOf).
ComputeTime computeTime(Operation *op, const Work &work, double footprint,
                        const DeviceProfile &profile) {
  if (auto loop = dyn_cast<scf::ForOp>(op); loop && isHostLoop(loop)) {
    ComputeTime body;
    for (Operation &nested : loop.getBody()->without_terminator()) {
      if (!isComputeOp(&nested))
        continue;
      Work nestedWork = workOf(&nested);
      body += computeTime(&nested, nestedWork, footprintOf(&nested, nestedWork), profile);
    }
    double trips = tripCount(loop);
    return {body.matmul * trips, body.attention * trips, body.other * trips,
            body.launches * trips};
  }
  auto call = dyn_cast<func::CallOp>(op);
  if (!call && profile.multiprocessors > 0) {
    KernelWork kernel = launchShapeOfDeviceOp(op);
    kernel.bytesRead = work.bytes;
    kernel.arithmetic = work.arithmetic + work.scalarArithmetic;
    kernel.divides = work.divides;
    double seconds = predictKernelTime(kernel, profile).predicted;
    return work.flops > 0 ? ComputeTime{seconds, 0, 0, profile.opOverhead}
                          : ComputeTime{0, 0, seconds, profile.opOverhead};
  }
  StringRef callee = call ? call.getCallee() : StringRef();
  double rate = isBF16GemmCallee(callee) ? profile.matmulFlopsBF16 : profile.matmulFlopsF32;
  if (isAttentionCallee(callee)) {
    rate = callee == kAttentionBF16 ? profile.attentionFlopsForward
                                    : profile.attentionFlopsBackward;
    // Operand 4 is the head size (attentionWork).
    if (rate > 0)
      rate = profile.attentionRateAt(rate,
                                     static_cast<double>(constantInt(call.getOperand(4)).value_or(0)));
    else
      rate = profile.matmulFlopsBF16;
  }
  double seconds = profile.opOverhead +
                   std::max(work.flops / rate,
                            work.seconds(profile, profile.memoryBandwidthAt(footprint)));
  if (isAttentionCallee(callee))
    return {0, seconds, 0, profile.opOverhead};
  return work.flops > 0 ? ComputeTime{seconds, 0, 0, profile.opOverhead}
                        : ComputeTime{0, 0, seconds, profile.opOverhead};
}


/// Offload's update (fsdprt_host_parallel): its task's loop over `count`
/// elements, each operand element moved once, the payload once per element.
Work hostTaskWork(func::CallOp call) {
  Work work;
  auto function = call.getOperand(0).getDefiningOp<func::ConstantOp>();
  auto module = call->getParentOfType<ModuleOp>();
  auto task = function && module ? module.lookupSymbol<func::FuncOp>(function.getValue())
                                 : func::FuncOp();
  if (!task)
    return work;
  double count = static_cast<double>(constantInt(call.getOperand(5)).value_or(0));
  task.walk([&](linalg::GenericOp generic) {
    for (Value operand : generic->getOperands())
      work.bytes += elementBytes(getElementTypeOrSelf(operand.getType())) * count;
    work += payloadWork(generic).scaled(count);
  });
  return work;
}

/// What an op of the step's block does: offload's update its host task's
/// loop, any other op everything nested in it.
Work stepOpWork(Operation &op) {
  auto call = dyn_cast<func::CallOp>(&op);
  return call && call.getCallee() == kHostParallel ? hostTaskWork(call) : workOf(&op);
}

bool isCopyStart(StringRef callee) {
  return callee == kCopyToHostStart || callee == kCopyToDeviceStart;
}

double dtypeBytes(Value dtype) {
  bool bf16 = constantInt(dtype).value_or(0) == static_cast<int64_t>(RuntimeDType::BF16);
  return (bf16 ? fsdprt::manifest::dtype::kBF16 : fsdprt::manifest::dtype::kF32).bytes;
}

/// Plays the step's block in order on the runtime's streams and the host's
/// clock (StepCost.h), pricing each op from the profile.
class StepPlayer {
public:
  StepPlayer(const DeviceProfile &profile, RankGrid grid)
      : profile(profile), grid(grid), world(grid.replicas * grid.shardRanks * grid.tensorRanks),
        node(std::max<int64_t>(1, profile.ranksPerNode)) {}

  /// Plays one op of the step's block.
  void play(Operation &op) {
    cost.opStart.push_back(now);
    auto call = dyn_cast<func::CallOp>(&op);
    StringRef callee = call ? call.getCallee() : StringRef();
    if (callee == kAllGatherStart || callee == kReduceScatterStart || callee == kAllReduceStart)
      return startCollective(op, call, callee);
    if (isCopyStart(callee))
      return startCopy(op, call, callee);
    if (callee == kWait)
      return wait(call);
    if (!isComputeOp(&op))
      return;
    Work work = stepOpWork(op);
    if (callee == kHostParallel)
      return runHostUpdate(op, work);
    runCompute(op, call, callee, work);
  }

  /// The step's cost once every op is played: it ends when the last of the
  /// clocks and streams does.
  StepCost finish() {
    cost.stepSeconds = std::max(now, hostNow);
    for (double free : streamFree)
      cost.stepSeconds = std::max(cost.stepSeconds, free);
    return std::move(cost);
  }

private:
  // Ranks fill nodes in order, the tensor axis innermost: a tensor group is
  // tensorRanks consecutive ranks, a shard group one rank of each of
  // shardRanks consecutive tensor groups, a replica group one rank of each
  // shard group's copy. A group spanning nodes crosses them on the interfaces
  // of its ranks on a node.
  LinkProfile groupLink(bool spansNodes, int64_t ranksOnANode) const {
    return spansNodes ? profile.crossNodeRing(ranksOnANode) : profile.intraNode;
  }

  /// The size and link of the group a collective's group operand names.
  std::pair<int64_t, LinkProfile> group(Value id) const {
    int64_t tensor = grid.tensorRanks, copy = grid.shardRanks * tensor;
    switch (constantInt(id).value_or(0)) {
    case 1:
      return {grid.shardRanks, groupLink(copy > node, std::max<int64_t>(1, node / tensor))};
    case 2:
      return {grid.replicas,
              groupLink(grid.replicas > 1 && world > node, std::max<int64_t>(1, node / copy))};
    case 3:
      return {tensor, groupLink(tensor > node, node)};
    default:
      return {world, groupLink(world > node, node)};
    }
  }

  /// A start call's op on its stream, not yet timed.
  static TimedOp startedOp(Operation &op, StringRef callee) {
    TimedOp timed{&op, ArenaAccesses::streamOf(&op), 0, 0, callee.drop_front(7).str(), 0, 0};
    if (auto unit = op.getAttrOfType<StringAttr>(kCollectiveUnitAttr))
      timed.unit = unit.getValue().str();
    return timed;
  }

  /// Records a started op, for the wait on its handle to find.
  void addStarted(func::CallOp call, TimedOp timed, double duration) {
    pending[call.getResult(0)] = cost.ops.size();
    durations.push_back(duration);
    cost.ops.push_back(std::move(timed));
  }

  void runCollective(TimedOp &timed, double duration, double ready) {
    timed.start = std::max(ready, streamFree[timed.stream]);
    timed.end = timed.start + duration;
    streamFree[timed.stream] = timed.end;
    cost.communicationSeconds += duration;
  }

  /// An all-gather, reduce-scatter or all-reduce start: a ring over its
  /// group, run at once with asynchronous progress.
  void startCollective(Operation &op, func::CallOp call, StringRef callee) {
    TimedOp timed = startedOp(op, callee);
    double total = 0;
    CollectiveKind kind;
    Value groupId = call.getOperand(*collectiveGroupOperand(callee));
    std::pair<int64_t, LinkProfile> members = group(groupId);
    if (callee == kAllGatherStart) {
      kind = CollectiveKind::AllGather;
      total = static_cast<double>(constantInt(call.getOperand(2)).value_or(0)) *
              static_cast<double>(members.first);
    } else if (callee == kReduceScatterStart) {
      kind = CollectiveKind::ReduceScatter;
      total = static_cast<double>(constantInt(call.getOperand(2)).value_or(0)) *
              dtypeBytes(call.getOperand(3)) * static_cast<double>(members.first);
    } else {
      kind = CollectiveKind::AllReduce;
      total = static_cast<double>(constantInt(call.getOperand(1)).value_or(0)) *
              dtypeBytes(call.getOperand(2));
    }
    double g = static_cast<double>(members.first);
    timed.bytes = g > 1 ? (g - 1) / g * total * (kind == CollectiveKind::AllReduce ? 2 : 1) : 0;
    double duration = ringSeconds(kind, members.first, total, members.second);
    if (constantInt(groupId) == static_cast<int64_t>(Group::Tensor)) {
      (kind == CollectiveKind::AllReduce   ? cost.tensorAllReduceBytes
       : kind == CollectiveKind::AllGather ? cost.tensorAllGatherBytes
                                           : cost.tensorReduceScatterBytes) += timed.bytes;
      cost.tensorCommunicationSeconds += duration;
    }
    if (profile.asyncCollectives)
      runCollective(timed, duration, now);
    addStarted(call, std::move(timed), duration);
  }

  /// A copy between host and device, on the copy stream at the host link's
  /// rate once the host has what it copies.
  void startCopy(Operation &op, func::CallOp call, StringRef callee) {
    TimedOp timed = startedOp(op, callee);
    timed.bytes = static_cast<double>(constantInt(call.getOperand(2)).value_or(0));
    double duration =
        profile.hostDeviceBandwidth > 0 ? timed.bytes / profile.hostDeviceBandwidth : 0;
    timed.start = std::max({now, hostNow, streamFree[timed.stream]});
    timed.end = timed.start + duration;
    streamFree[timed.stream] = timed.end;
    cost.copySeconds += duration;
    addStarted(call, std::move(timed), duration);
  }

  /// A wait on a started op's handle: the compute stream (or the host, for a
  /// copy to the host) holds until it is done.
  void wait(func::CallOp call) {
    auto it = pending.find(call.getOperand(0));
    if (it == pending.end())
      return;
    TimedOp &started = cost.ops[it->second];
    StringRef startedBy = cast<func::CallOp>(started.op).getCallee();
    bool copy = isCopyStart(startedBy);
    if (startedBy == kCopyToHostStart) {
      // The host, not the compute stream, reads what arrives.
      hostNow = std::max(hostNow, started.end);
      started.waited = hostNow;
    } else {
      if (!copy && !profile.asyncCollectives)
        runCollective(started, durations[it->second], now);
      if (started.end > now) {
        (copy ? cost.exposedCopySeconds : cost.exposedCommunicationSeconds) += started.end - now;
        now = started.end;
      }
      started.waited = now;
    }
    pending.erase(it);
  }

  /// Offload's update on the host's clock.
  void runHostUpdate(Operation &op, const Work &work) {
    // The update is elementwise and vectorised, on the host's cores: its
    // divisions add to its other arithmetic as on the device.
    double seconds = std::max(work.bytes / profile.hostMemoryBandwidth,
                              work.arithmetic / profile.hostVectorFlops +
                                  work.divides / profile.hostVectorDivides);
    std::string unit;
    if (auto name = op.getAttrOfType<StringAttr>(kCollectiveUnitAttr))
      unit = name.getValue().str();
    cost.ops.push_back(TimedOp{&op, kHostTrack, hostNow, hostNow + seconds, "host update", 0,
                               work.bytes, unit, hostNow + seconds});
    cost.hostSeconds += seconds;
    durations.push_back(seconds);
    hostNow += seconds;
  }

  /// Device work on the compute stream.
  void runCompute(Operation &op, func::CallOp call, StringRef callee, const Work &work) {
    // Device work the host launches after work of its own starts after it.
    now = std::max(now, hostNow);
    double footprint = footprintOf(&op, work);
    ComputeTime time = computeTime(&op, work, footprint, profile);
    double seconds = time.total();
    std::string name = call ? callee.drop_front(callee.starts_with("fsdprt_") ? 7 : 0).str()
                            : op.getName().getStringRef().str();
    cost.ops.push_back(TimedOp{&op, static_cast<int>(RuntimeStream::Compute), now, now + seconds,
                               std::move(name), work.flops, work.bytes, "", now + seconds,
                               footprint});
    cost.matmulSeconds += time.matmul;
    cost.attentionSeconds += time.attention;
    cost.otherComputeSeconds += time.other;
    cost.launchSeconds += time.launches;
    (isAttentionCallee(callee) ? cost.attentionFlops : cost.matmulFlops) += work.flops;
    durations.push_back(seconds);
    now += seconds;
  }

  const DeviceProfile &profile;
  RankGrid grid;
  int64_t world, node;
  StepCost cost;
  // The compute stream's clock, and the host's: the host launches device work
  // without waiting for it and is held only by what it computes or waits for
  // itself (offload's updates, the gradients they read).
  double now = 0, hostNow = 0;
  double streamFree[kNumRuntimeStreams] = {};
  // A collective's op by its handle; without asynchronous progress it is
  // timed when it is waited for.
  DenseMap<Value, size_t> pending;
  SmallVector<double> durations;
};

} // namespace

StepCost mlir::fsdp::predictStepCost(func::FuncOp step, const DeviceProfile &profile,
                                     RankGrid grid) {
  StepPlayer player(profile, grid);
  for (Operation &op : step.getBody().front())
    player.play(op);
  return player.finish();
}

StepFlops mlir::fsdp::countStepFlops(func::FuncOp step) {
  StepFlops counted;
  for (Operation &op : step.getBody().front()) {
    if (!isComputeOp(&op))
      continue;
    auto call = dyn_cast<func::CallOp>(&op);
    Work work = stepOpWork(op);
    if (call && isAttentionCallee(call.getCallee())) {
      counted.attention += work.flops;
    } else {
      counted.products += work.flops;
      counted.bf16Products += work.bf16Flops;
    }
    counted.recomputed += work.recomputedFlops;
    counted.other += work.floatOps;
  }
  return counted;
}
