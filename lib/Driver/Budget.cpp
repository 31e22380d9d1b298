//===- Budget.cpp - A plan's memory against a rank's ----------------------===//

#include "Budget.h"

#include "Diagnostics.h"
#include "Utils/ByteCounts.h"
#include "fsdp/IR/FSDPOps.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;

FailureOr<std::optional<fsdp::MemoryBudget>>
mlir::fsdp::memoryBudget(const CompilerOptions &options, ModuleOp model,
                         const fsdp::DeviceProfile &profile) {
  fsdp::MemoryBudget budget;
  budget.runtime = profile.runtime;
  if (!options.runtimeMemory.empty()) {
    std::optional<int64_t> bytes = options.runtimeMemory == "0"
                                       ? std::optional<int64_t>(0)
                                       : fsdp::parseByteSize(options.runtimeMemory);
    if (!bytes) {
      (void)fail("--runtime-memory=" + options.runtimeMemory +
                 ": expected a size such as 2GiB or 0");
      return failure();
    }
    budget.runtime = {0, 0, 0};
    budget.runtime.context = *bytes;
  }
  auto plan = model->getAttrOfType<fsdp::PlanAttr>(fsdp::FSDPDialect::getPlanAttrName());
  if (!options.deviceMemory.empty()) {
    std::optional<int64_t> bytes = fsdp::parseByteSize(options.deviceMemory);
    if (!bytes) {
      (void)fail("--device-memory=" + options.deviceMemory +
                 ": expected a size such as 80GB or 79.5GiB");
      return failure();
    }
    budget.deviceBytes = *bytes;
    budget.origin = "--device-memory=" + options.deviceMemory;
  } else if (std::optional<int64_t> bytes = plan ? plan.getDeviceMemoryBytes() : std::nullopt) {
    budget.deviceBytes = *bytes;
    budget.origin = "device_memory = \"" + plan.getDeviceMemory().str() + "\"";
  } else {
    return std::optional<fsdp::MemoryBudget>();
  }
  return std::optional<fsdp::MemoryBudget>(budget);
}

std::string mlir::fsdp::costJson(const fsdp::PlanEvaluation &planned,
                                 const fsdp::DeviceProfile &profile,
                                 const std::optional<fsdp::MemoryBudget> &budget) {
  const fsdp::StepCost &cost = planned.cost;
  llvm::json::Object object{{"profile", profile.name},
                            {"step_seconds", cost.stepSeconds},
                            {"matmul_seconds", cost.matmulSeconds},
                            {"matmul_flops", cost.matmulFlops},
                            {"attention_seconds", cost.attentionSeconds},
                            {"attention_flops", cost.attentionFlops},
                            {"other_compute_seconds", cost.otherComputeSeconds},
                            {"launch_seconds", cost.launchSeconds},
                            {"communication_seconds", cost.communicationSeconds},
                            {"exposed_communication_seconds", cost.exposedCommunicationSeconds},
                            {"copy_seconds", cost.copySeconds},
                            {"exposed_copy_seconds", cost.exposedCopySeconds},
                            {"host_seconds", cost.hostSeconds},
                            {"tensor_communication_seconds", cost.tensorCommunicationSeconds},
                            {"tensor_all_reduce_bytes", cost.tensorAllReduceBytes},
                            {"tensor_all_gather_bytes", cost.tensorAllGatherBytes},
                            {"tensor_reduce_scatter_bytes", cost.tensorReduceScatterBytes}};
  if (budget)
    object["budget"] = llvm::json::Object{{"device_bytes", budget->deviceBytes},
                                          {"runtime_bytes", budget->runtime.total()},
                                          {"needed_bytes", budget->needed(planned)},
                                          {"origin", budget->origin}};
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(object));
  return text;
}

FailureOr<fsdp::PlanFix> mlir::fsdp::handleOverBudget(const CompilerOptions &flags, ModuleOp model,
                                                      const fsdp::PlanEvaluation &planned,
                                                      const fsdp::MemoryBudget &budget,
                                                      const fsdp::DeviceProfile &profile,
                                                      const fsdp::PipelineTarget &target) {
  fsdp::FitOptions options;
  options.budget = budget;
  options.target = &target;
  options.profile = &profile;
  fsdp::FitSearchResult search = fsdp::searchFits(model, planned, options);
  if (flags.fit && !search.fits.empty())
    return search.fits.front();

  std::string text;
  llvm::raw_string_ostream os(text);
  int64_t needed = budget.needed(planned);
  int64_t over = needed - budget.deviceBytes;
  os << "the plan needs " << fsdp::groupedBytes(needed) << " B per rank, "
     << fsdp::groupedBytes(over) << " B (" << fsdp::gibText(over) << ") more than " << budget.origin
     << "\n";
  fsdp::printMemoryBreakdown(os, planned, budget);
  double baseSeconds = planned.cost.stepSeconds;
  if (search.fits.empty()) {
    os << "no plan within 3 changes of recompute, micro-batches, prefetch, ranks, tensor ranks, "
          "sharding"
       << (target.hasDeviceArena() ? ", precision and offload" : " and precision") << " fits ("
       << search.evaluated << " compiled, " << search.skipped << " skipped)";
  } else {
    os << "changes that fit, best first (predicted on " << profile.name
       << "; fsdpc --fit compiles the first):\n";
    for (auto [index, fix] : llvm::enumerate(search.fits)) {
      int64_t spare = budget.deviceBytes - budget.needed(fix.evaluation);
      double seconds = fix.evaluation.cost.stepSeconds;
      double change = 100.0 * (seconds / baseSeconds - 1.0);
      os << llvm::formatv("  {0}. {1}: needs {2} B ({3} B spare); step {4} s predicted "
                          "({5}{6:F1}%), {7} ranks\n",
                          index + 1, fix.changes, fsdp::groupedBytes(budget.needed(fix.evaluation)),
                          fsdp::groupedBytes(spare), llvm::formatv("{0:F4}", seconds),
                          change < 0 ? "" : "+", change, fix.evaluation.worldSize());
    }
    os << "(" << search.evaluated << " plans compiled, " << search.skipped << " skipped)";
  }
  for (const auto &[change, reason] : search.impossible)
    os << "\n  not possible for this model: " << change << ": " << reason;
  mlir::emitError(model.getLoc()) << text;
  return failure();
}
