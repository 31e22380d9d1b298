//===- PlanEvaluation.cpp - a plan's exact memory and predicted time ------===//

#include "Planning/PlanEvaluation.h"

#include "Analysis/BufferLiveness.h"
#include "Utils/RuntimeABI.h"
#include "fsdp/IR/BufferKinds.h"
#include "fsdp/IR/FSDPDialect.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::fsdp;

int64_t MemorySample::total() const {
  int64_t sum = 0;
  for (int64_t kind : bytes)
    sum += kind;
  return sum;
}

/// The all-gather `op` waits for, if it is such a wait: where compute
/// receives a unit.
static func::CallOp gatherWaitedFor(Operation &op) {
  auto wait = dyn_cast<func::CallOp>(&op);
  if (!wait || wait.getCallee() != kWait || wait.getNumOperands() != 1)
    return {};
  auto start = wait.getOperand(0).getDefiningOp<func::CallOp>();
  return start && start.getCallee() == kAllGatherStart ? start : func::CallOp();
}

/// The transient buffers of the planned step (the arena views
/// fsdp-assign-buffers tagged with their kind), swept over the step's block:
/// a sample wherever the live bytes or the planned high-water mark change,
/// at the compute stream's clock.
static MemoryTimeline memoryOverStep(func::FuncOp step, const StepCost &cost,
                                     int64_t persistentBytes) {
  Block &body = step.getBody().front();
  // Loops' bodies in line, as fsdp-assign-buffers placed their buffers; an op
  // of a body takes its loop's time.
  StepPositions positions(body);
  llvm::DenseMap<Operation *, size_t> topIndex;
  for (auto [index, op] : llvm::enumerate(body))
    topIndex[&op] = index;
  size_t numOps = positions.ops.size();
  // Bytes by kind that start (+) and stop (-) being live before each op, and
  // the end of the highest buffer placed at each op.
  std::vector<std::array<int64_t, kNumMemoryKinds>> change(numOps + 1);
  std::vector<int64_t> placedTop(numOps, persistentBytes);
  for (auto [at, op] : llvm::enumerate(positions.ops)) {
    auto view = dyn_cast<memref::ViewOp>(op);
    auto kind = view ? view->getAttrOfType<StringAttr>(kBufferKindAttr) : StringAttr();
    if (!kind)
      continue;
    const auto *slot = llvm::find(kMemoryKinds, kind.getValue());
    if (slot == std::end(kMemoryKinds))
      continue;
    MemRefType type = view.getType();
    int64_t bytes = type.getNumElements() * llvm::divideCeil(type.getElementTypeBitWidth(), 8);
    size_t k = slot - std::begin(kMemoryKinds);
    change[at][k] += bytes;
    change[positions.lastUse(view.getResult()) + 1][k] -= bytes;
    // fsdp-assign-buffers writes each offset as a constant.
    if (std::optional<int64_t> offset = getConstantIntValue(view.getByteShift()))
      placedTop[at] = std::max(placedTop[at], *offset + bytes);
  }
  MemoryTimeline timeline;
  timeline.persistentBytes = persistentBytes;
  MemorySample live;
  live.plannedHighWater = persistentBytes;
  for (auto [at, op] : llvm::enumerate(positions.ops)) {
    size_t i = topIndex.lookup(positions.top[at]);
    if (i >= cost.opStart.size())
      break;
    bool changed = placedTop[at] > live.plannedHighWater;
    live.plannedHighWater = std::max(live.plannedHighWater, placedTop[at]);
    for (size_t k = 0; k < kNumMemoryKinds; ++k) {
      changed |= change[at][k] != 0;
      live.bytes[k] += change[at][k];
    }
    // The compute stream gets past a wait when the next op begins.
    if (func::CallOp gather = gatherWaitedFor(*op)) {
      auto unit = gather->getAttrOfType<StringAttr>(kCollectiveUnitAttr);
      timeline.gatherWaits.push_back(
          {i, i + 1 < cost.opStart.size() ? cost.opStart[i + 1] : cost.stepSeconds,
           live.plannedHighWater, unit ? unit.getValue().str() : ""});
    }
    if (!changed)
      continue;
    live.time = cost.opStart[i];
    // Ops at the same instant (views, constants, a loop's body) make one sample.
    if (!timeline.samples.empty() && timeline.samples.back().time == live.time)
      timeline.samples.back() = live;
    else
      timeline.samples.push_back(live);
    timeline.peakLiveBytes = std::max(timeline.peakLiveBytes, live.total());
  }
  timeline.plannedHighWater = live.plannedHighWater;
  return timeline;
}

FailureOr<PlanEvaluation> mlir::fsdp::evaluateBufferPlan(ModuleOp planned,
                                                         const DeviceProfile &profile) {
  auto manifest = planned->getAttrOfType<ManifestAttr>(FSDPDialect::getManifestAttrName());
  auto step = planned.lookupSymbol<func::FuncOp>(kStepFunction);
  if (!manifest || !step)
    return planned.emitError("the compiled step has no manifest or no ") << kStepFunction;
  std::optional<ArenaFigures> arena = ArenaFigures::fromManifest(manifest);
  if (!arena)
    return planned.emitError("the manifest has no buffer plan");
  PlanEvaluation evaluation;
  evaluation.arena = *arena;
  evaluation.manifest = manifest;
  // The rank grid, for the links its collectives take.
  evaluation.grid = {manifest.getReplicas(), manifest.getShardRanks(),
                     manifest.getPlan().getTensorParallel()};
  evaluation.cost = predictStepCost(step, profile, evaluation.grid);
  evaluation.memory = memoryOverStep(step, evaluation.cost, arena->persistentBytes);
  for (TimedOp &op : evaluation.cost.ops)
    op.op = nullptr;
  return evaluation;
}

FailureOr<PlanEvaluation> mlir::fsdp::evaluatePlan(ModuleOp model, PlanAttr plan,
                                                   const PipelineTarget &target,
                                                   const DeviceProfile &profile,
                                                   bool verifyEachPass) {
  OwningOpRef<ModuleOp> copy = model.clone();
  if (plan)
    (*copy)->setAttr(FSDPDialect::getPlanAttrName(), plan);
  PassManager pm(model.getContext());
  pm.enableVerifier(verifyEachPass);
  buildBufferPlanPipeline(pm, target);
  if (failed(pm.run(*copy)) || (!verifyEachPass && failed(verify(*copy))))
    return failure();
  FailureOr<PlanEvaluation> evaluation = evaluateBufferPlan(*copy, profile);
  if (succeeded(evaluation))
    evaluation->plan = plan ? plan : model->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName());
  return evaluation;
}
