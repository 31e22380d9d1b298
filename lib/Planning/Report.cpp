//===- Report.cpp - fsdp-report: each rank's memory and traffic -----------===//
//
// Prints a plan's accounting (PlanAccounting.h) as a table or JSON, with the
// compiled step's buffer plan and predicted time when fsdpc passes them.
//
//===----------------------------------------------------------------------===//

#include "Analysis/ArenaFigures.h"
#include "Analysis/ShardingLayout.h"
#include "Planning/PlanAccounting.h"
#include "Utils/ByteCounts.h"
#include "fsdp/Planning/Passes.h"
#include "fsdprt/ManifestSchema.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <map>

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPREPORTPASS
#include "fsdp/Planning/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// The predicted step (StepCost) and the budget, as fsdpc passes them.
struct CostFigures {
  std::string profile;
  double step = 0, matmul = 0, attention = 0, otherCompute = 0, launches = 0;
  double communication = 0, exposed = 0;
  double copies = 0, exposedCopies = 0, host = 0; // offload
  double tensorCommunication = 0;
  double tensorAllReduceBytes = 0, tensorAllGatherBytes = 0, tensorReduceScatterBytes = 0;
  std::optional<std::map<std::string, int64_t>> budget;
  std::string budgetOrigin;
  llvm::json::Value json = nullptr;
};

FailureOr<CostFigures> parseCost(StringRef text, Operation *op) {
  namespace json = llvm::json;
  llvm::Expected<json::Value> value = json::parse(text);
  const json::Object *object = value ? value->getAsObject() : nullptr;
  if (!object || !object->getNumber("step_seconds")) {
    if (!value)
      llvm::consumeError(value.takeError());
    return op->emitError("fsdp-report: 'cost' is not fsdpc's predicted step");
  }
  CostFigures cost;
  cost.profile = object->getString("profile").value_or("").str();
  auto get = [&](StringRef key) { return object->getNumber(key).value_or(0); };
  cost.step = get("step_seconds");
  cost.matmul = get("matmul_seconds");
  cost.attention = get("attention_seconds");
  cost.otherCompute = get("other_compute_seconds");
  cost.launches = get("launch_seconds");
  cost.communication = get("communication_seconds");
  cost.exposed = get("exposed_communication_seconds");
  cost.copies = get("copy_seconds");
  cost.exposedCopies = get("exposed_copy_seconds");
  cost.host = get("host_seconds");
  cost.tensorCommunication = get("tensor_communication_seconds");
  cost.tensorAllReduceBytes = get("tensor_all_reduce_bytes");
  cost.tensorAllGatherBytes = get("tensor_all_gather_bytes");
  cost.tensorReduceScatterBytes = get("tensor_reduce_scatter_bytes");
  if (const json::Object *budget = object->getObject("budget")) {
    cost.budget.emplace();
    for (StringRef key : {"device_bytes", "runtime_bytes", "needed_bytes"})
      (*cost.budget)[key.str()] = budget->getInteger(key).value_or(0);
    cost.budgetOrigin = budget->getString("origin").value_or("").str();
  }
  cost.json = std::move(*value);
  return cost;
}

/// The accounting with what fsdpc adds: the compiled step's buffer plan and
/// the predicted step.
struct Report : PlanAccounting {
  std::optional<ArenaFigures> arena;
  std::optional<CostFigures> cost;
};

std::string bytesText(int64_t bytes) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%18lld  %10.3f GiB", static_cast<long long>(bytes), gibibytes(bytes));
  return text;
}

void printReportHeading(raw_ostream &os, const ShardingLayout &layout, const Report &report) {
  PlanAttr plan = layout.plan;
  os << "fsdp-report: grid [";
  llvm::interleaveComma(plan.getGrid(), os);
  os << "]";
  // With tensor ranks, a rank's parameters are its blocks of the cut ones.
  int64_t tensorRanks = plan.getTensorParallel();
  if (tensorRanks > 1)
    os << " x " << tensorRanks << " tensor ranks";
  os << ", " << stringifyStrategy(plan.getStrategy()) << ", " << report.numParams
     << (tensorRanks > 1 ? " parameters per tensor rank in " : " parameters in ")
     << layout.units.size() << " units, " << layout.shardRanks << "-way sharded, "
     << layout.replicas << " replica(s)\n\n";
}

void printReportPerRank(raw_ostream &os, const ShardingLayout &layout, const Report &report) {
  os << "per rank                                          bytes\n";
  os << "  parameter shards               " << bytesText(report.params) << "\n";
  os << "  gradient shards                " << bytesText(report.grads)
     << "  (in the step's arena)\n";
  os << "  optimizer state                " << bytesText(report.optimizer) << "\n";
  os << "  sharded state (total)          " << bytesText(report.persistent()) << "\n";
  for (const auto &[dtype, bytes] : report.stateDtypeBytes)
    os << llvm::format("    of which %-21s", dtype.c_str()) << bytesText(bytes) << "\n";
  // The textbook mixed-precision figure: bf16 parameters and gradients (2 +
  // 2 bytes) and K bytes of f32 master copy and optimizer slots, over N.
  int64_t k = 4 + 4 * report.optimizerSlots;
  os << llvm::format("  textbook (2 + 2 + %lld) P / N     ", static_cast<long long>(k))
     << bytesText((4 + k) * report.numParams / layout.shardRanks) << "\n";
  os << "    (the same bytes per parameter: the f32 parameter shards are the master copy;\n"
        "    the f32 gradient shards, and the bf16 copies the textbook keeps (gathered\n"
        "    units, flat gradients), live only in the step's arena; shards are padded\n"
        "    to equal size, frozen parameters have no gradient or state)\n";
  os << "  gathered parameters at peak    " << bytesText(report.gatheredPeak) << "\n";
}

void printReportOffload(raw_ostream &os, PlanAttr plan, const Report::Offload &offload) {
  os << "\noffload = optimizer (trainable units)            bytes\n";
  os << "  device: parameter shards       " << bytesText(offload.deviceParams) << "  ("
     << stringifyDType(plan.getParamDtype()) << ", what the gathers read)\n";
  os << "  host: f32 master shards        " << bytesText(offload.masters) << "\n";
  os << "  host: optimizer state          " << bytesText(offload.state) << "\n";
  os << "  host: gradient shards          " << bytesText(offload.gradients)
     << "  (as they arrive; room for f32)\n";
  if (offload.rounded > 0)
    os << "  host: shards for the copy back " << bytesText(offload.rounded) << "\n";
  os << "  host (page-locked, total)      " << bytesText(offload.host()) << "\n";
}

void printReportRecompute(raw_ostream &os, PlanAttr plan, RecomputeAttr recompute) {
  os << "recompute (remat = " << stringifyRematPolicy(plan.getRemat()) << ") per step\n";
  os << llvm::format("  ops recomputed                 %18lld\n",
                     static_cast<long long>(recompute.getOps()));
  int64_t flops = recompute.getProductFlops(), all = recompute.getStepProductFlops();
  os << llvm::format("  matrix products, FLOPs         %18lld  (%lld products, %.1f%% of the "
                     "step's %lld)\n",
                     static_cast<long long>(flops), static_cast<long long>(recompute.getProducts()),
                     all ? 100.0 * static_cast<double>(flops) / static_cast<double>(all) : 0.0,
                     static_cast<long long>(all));
  os << llvm::format("  other ops, elements computed   %18lld\n\n",
                     static_cast<long long>(recompute.getOtherElements()));
}

/// The report's `recompute`: the manifest's counts of what recompute adds
/// (null without remat).
llvm::json::Value recomputeJson(RecomputeAttr recompute) {
  if (!recompute)
    return nullptr;
  using namespace fsdprt::manifest::recompute;
  return llvm::json::Object{{kOps.key, recompute.getOps()},
                            {kProducts.key, recompute.getProducts()},
                            {kProductFlops.key, recompute.getProductFlops()},
                            {kOtherElements.key, recompute.getOtherElements()},
                            {kStepProductFlops.key, recompute.getStepProductFlops()}};
}

void printReportArena(raw_ostream &os, PlanAttr plan, const ArenaFigures &arena) {
  os << "\narena plan of the compiled step                   bytes\n";
  os << "  persistent (shards, inputs)    " << bytesText(arena.persistentBytes) << "\n";
  os << "  transient buffers at peak      " << bytesText(arena.transientPeak) << "\n";
  os << "    activations, temporaries     " << bytesText(arena.activations) << "\n";
  os << "    gathered parameters          " << bytesText(arena.gathered) << "\n";
  os << "    flat gradients               " << bytesText(arena.gradients) << "\n";
  os << "    gradient shards              " << bytesText(arena.gradientShards) << "\n";
  for (const auto &[dtype, bytes] : arena.dtypeBytes)
    os << llvm::format("    of which %-21s", dtype.c_str()) << bytesText(bytes) << "\n";
  os << "  arena (planned peak)           " << bytesText(arena.arenaBytes) << "\n";
  if (arena.hostArenaBytes > 0) {
    os << "  host arena (offload)           " << bytesText(arena.hostArenaBytes) << "\n";
    os << "  host <-> device per step:\n";
    os << "    gradient shards to the host  " << bytesText(arena.toHostBytes) << "\n";
    os << "    parameter shards to device   " << bytesText(arena.toDeviceBytes) << "\n";
  }
  os << "\n";
  if (arena.recompute)
    printReportRecompute(os, plan, arena.recompute);
}

void printReportBudget(raw_ostream &os, const CostFigures &cost,
                       const std::map<std::string, int64_t> &budget) {
  int64_t device = budget.at("device_bytes"), needed = budget.at("needed_bytes");
  os << "memory budget (" << cost.budgetOrigin << ")             bytes\n";
  os << "  arena + runtime (" << budget.at("runtime_bytes") << ")  " << bytesText(needed) << "\n";
  os << "  device memory                  " << bytesText(device) << "\n";
  os << (needed <= device ? "  spare                          "
                          : "  OVER BY                        ")
     << bytesText(needed <= device ? device - needed : needed - device) << "\n\n";
}

void printReportCost(raw_ostream &os, PlanAttr plan, const CostFigures &cost) {
  os << "predicted step on " << cost.profile << " (docs/CostModel.md)            seconds\n";
  auto line = [&](const char *what, double seconds) {
    os << llvm::format("  %-32s%18.6f\n", what, seconds);
  };
  line("step", cost.step);
  line("compute: matrix products", cost.matmul);
  if (cost.attention > 0)
    line("compute: fused attention", cost.attention);
  line("compute: everything else", cost.otherCompute);
  line("  of which launch overhead", cost.launches);
  line("communication (own streams)", cost.communication);
  if (plan.getTensorParallel() > 1)
    line("  of which the tensor group", cost.tensorCommunication);
  line("communication exposed", cost.exposed);
  if (plan.getOffload() == Offload::Optimizer) {
    line("host <-> device copies", cost.copies);
    line("copies exposed", cost.exposedCopies);
    line("host: optimizer updates", cost.host);
  }
  os << "\n";
  if (const auto &budget = cost.budget)
    printReportBudget(os, cost, *budget);
}

void printReportTraffic(raw_ostream &os, const Report &report) {
  UnitTraffic total;
  for (const UnitTraffic &t : report.traffic) {
    total.gatherForward += t.gatherForward;
    total.gatherBackward += t.gatherBackward;
    total.reduceScatter += t.reduceScatter;
    total.allReduce += t.allReduce;
  }
  os << "sent per rank per step                            bytes\n";
  os << "  all-gather, forward            " << bytesText(total.gatherForward) << "\n";
  os << "  all-gather, backward           " << bytesText(total.gatherBackward) << "\n";
  os << "  reduce-scatter, gradients      " << bytesText(total.reduceScatter) << "\n";
  os << "  all-reduce, gradients          " << bytesText(total.allReduce) << "\n";
  os << "  all-reduce, gradient norm      " << bytesText(report.normAllReduce) << "\n";
  // The tensor-parallel regions' sums, forward and backward, and with
  // sequence parallelism the gathers and scatters of sequence blocks, as the
  // compiled step makes them (fsdp-split-tensors, fsdp-split-sequence).
  auto tensorLine = [&](StringRef name, double bytes) {
    if (bytes > 0)
      os << "  " << name << bytesText(static_cast<int64_t>(bytes)) << "\n";
  };
  if (report.cost) {
    tensorLine("all-reduce, tensor-parallel    ", report.cost->tensorAllReduceBytes);
    tensorLine("all-gather, tensor-parallel    ", report.cost->tensorAllGatherBytes);
    tensorLine("reduce-scatter, tensor-parallel", report.cost->tensorReduceScatterBytes);
  }
  os << "\n";
}

void printReportMicroBatches(raw_ostream &os, PlanAttr plan, const Report &report) {
  bool noSync = plan.getAccumulate() == Accumulation::NoSync;
  os << "micro-batches: " << plan.getMicroBatches()
     << " per step, accumulate = " << stringifyAccumulation(plan.getAccumulate())
     << " (every gather runs once per micro-batch)\n";
  os << "  accumulate                     kept across micro-batches   reduced per step\n";
  auto row = [&](StringRef name, StringRef what, const AccumulationCost &cost, bool chosen) {
    os << llvm::format("  %-15s%-15s %18lld %18lld%s\n", name.str().c_str(), what.str().c_str(),
                       static_cast<long long>(cost.accumulatorBytes),
                       static_cast<long long>(cost.reduceBytes), chosen ? "  <- plan" : "");
  };
  row("reduce_scatter", "(f32 shards)", report.reduceScatter, !noSync);
  row("no_sync", "(flat grads)", report.noSync, noSync);
  os << "\n";
}

void printReportUnits(raw_ostream &os, const ShardingLayout &layout, const Report &report) {
  os << llvm::format("%-24s %8s %16s %16s %16s %16s\n", "unit", "params", "elements", "shard bytes",
                     "gather bytes", "reduce bytes");
  for (auto [unit, traffic] : llvm::zip_equal(layout.units, report.traffic))
    os << llvm::format("%-24s %8zu %16lld %16lld %16lld %16lld\n", unit.name.str().c_str(),
                       unit.params.size(), static_cast<long long>(unit.numel),
                       static_cast<long long>(unit.shardNumel * unit.elementBytes),
                       static_cast<long long>(traffic.gatherForward),
                       static_cast<long long>(traffic.reduceScatter + traffic.allReduce));
}

void printTable(raw_ostream &os, const ShardingLayout &layout, const Report &report) {
  PlanAttr plan = layout.plan;
  printReportHeading(os, layout, report);
  printReportPerRank(os, layout, report);
  if (const std::optional<Report::Offload> &offload = report.offload)
    printReportOffload(os, plan, *offload);
  if (const std::optional<ArenaFigures> &arena = report.arena)
    printReportArena(os, plan, *arena);
  else
    os << "  activations, workspace         (planned by fsdpc --report)\n\n";
  if (const std::optional<CostFigures> &cost = report.cost)
    printReportCost(os, plan, *cost);
  printReportTraffic(os, report);
  if (plan.getMicroBatches() > 1)
    printReportMicroBatches(os, plan, report);
  printReportUnits(os, layout, report);
}

llvm::json::Object costJson(const AccumulationCost &cost) {
  return llvm::json::Object{{"accumulator_bytes", cost.accumulatorBytes},
                            {"reduce_bytes", cost.reduceBytes}};
}

void printJson(raw_ostream &os, const ShardingLayout &layout, const Report &report) {
  namespace json = llvm::json;
  PlanAttr plan = layout.plan;
  json::Array units;
  for (auto [unit, traffic] : llvm::zip_equal(layout.units, report.traffic)) {
    json::Array params;
    for (const ParamSlice &slice : unit.params)
      params.push_back(json::Object{{"name", ParamOp(slice.param).getSymName()},
                                    {"offset", slice.offset},
                                    {"elements", slice.numel}});
    units.push_back(json::Object{{"name", unit.name},
                                 {"params", std::move(params)},
                                 {"elements", unit.numel},
                                 {"padded_elements", unit.paddedNumel},
                                 {"shard_elements", unit.shardNumel},
                                 {"trainable", unit.trainable},
                                 {"all_gather_forward_bytes", traffic.gatherForward},
                                 {"all_gather_backward_bytes", traffic.gatherBackward},
                                 {"reduce_scatter_bytes", traffic.reduceScatter},
                                 {"all_reduce_bytes", traffic.allReduce}});
  }
  json::Array grid;
  for (int64_t size : plan.getGrid())
    grid.push_back(size);
  json::Object stateDtypes;
  for (const auto &[dtype, bytes] : report.stateDtypeBytes)
    stateDtypes[dtype] = bytes;
  int64_t k = 4 + 4 * report.optimizerSlots;
  json::Object perRank{{"parameter_shards", report.params},
                       {"gradient_shards", report.grads},
                       {"optimizer_state", report.optimizer},
                       {"sharded_state_dtype_bytes", std::move(stateDtypes)},
                       {"textbook_bytes", (4 + k) * report.numParams / layout.shardRanks},
                       {"textbook_k", k},
                       {"gathered_parameters_peak", report.gatheredPeak}};
  if (const std::optional<Report::Offload> &offload = report.offload)
    perRank["offload"] = json::Object{{"device_parameter_bytes", offload->deviceParams},
                                      {"host_master_bytes", offload->masters},
                                      {"host_optimizer_bytes", offload->state},
                                      {"host_gradient_bytes", offload->gradients},
                                      {"host_rounded_bytes", offload->rounded},
                                      {"host_bytes", offload->host()}};
  if (const std::optional<ArenaFigures> &arena = report.arena)
    perRank["arena"] = json::Object{{"arena_bytes", arena->arenaBytes},
                                    {"host_arena_bytes", arena->hostArenaBytes},
                                    {"to_host_bytes", arena->toHostBytes},
                                    {"to_device_bytes", arena->toDeviceBytes},
                                    {"persistent_bytes", arena->persistentBytes},
                                    {"transient_peak_bytes", arena->transientPeak},
                                    {"transient_live_bytes", arena->liveBytes},
                                    {"activation_bytes", arena->activations},
                                    {"gathered_bytes", arena->gathered},
                                    {"gradient_bytes", arena->gradients},
                                    {"gradient_shard_bytes", arena->gradientShards},
                                    {"buffers", arena->buffers},
                                    {"recompute", recomputeJson(arena->recompute)},
                                    {"dtype_bytes", [&] {
                                       json::Object dtypes;
                                       for (const auto &[dtype, bytes] : arena->dtypeBytes)
                                         dtypes[dtype] = bytes;
                                       return dtypes;
                                     }()}};
  os << json::Value(
            json::Object{{"grid", std::move(grid)},
                         {"strategy", stringifyStrategy(plan.getStrategy())},
                         {"parameters", report.numParams},
                         {"shard_ranks", layout.shardRanks},
                         {"replicas", layout.replicas},
                         {"tensor_ranks", plan.getTensorParallel()},
                         {"per_rank_bytes", std::move(perRank)},
                         {"gradient_norm_all_reduce_bytes", report.normAllReduce},
                         {"predicted", report.cost ? report.cost->json : nullptr},
                         {"micro_batches",
                          json::Object{{"count", plan.getMicroBatches()},
                                       {"accumulate", stringifyAccumulation(plan.getAccumulate())},
                                       {"reduce_scatter", costJson(report.reduceScatter)},
                                       {"no_sync", costJson(report.noSync)}}},
                         {"units", std::move(units)}})
     << "\n";
}

struct FSDPReportPass : public fsdp::impl::FSDPReportPassBase<FSDPReportPass> {
  using Base::Base;

  void runOnOperation() override {
    if (format != "table" && format != "json") {
      getOperation().emitError("fsdp-report: format must be table or json, got '") << format << "'";
      return signalPassFailure();
    }
    FailureOr<ShardingLayout> layout = ShardingLayout::build(getOperation());
    if (failed(layout))
      return signalPassFailure();
    Report report{accountPlan(*layout)};
    if (auto manifest =
            getOperation()->getAttrOfType<ManifestAttr>(FSDPDialect::getManifestAttrName())) {
      report.arena = ArenaFigures::fromManifest(manifest);
      if (!report.arena) {
        getOperation().emitError("fsdp-report: the module's fsdp.manifest has no buffer plan "
                                 "(fsdp-assign-buffers)");
        return signalPassFailure();
      }
    }
    if (!cost.empty()) {
      FailureOr<CostFigures> figures = parseCost(cost, getOperation());
      if (failed(figures))
        return signalPassFailure();
      report.cost = std::move(*figures);
    }
    if (format == "json")
      printJson(llvm::outs(), *layout, report);
    else
      printTable(llvm::outs(), *layout, report);
    markAllAnalysesPreserved();
  }
};

} // namespace
