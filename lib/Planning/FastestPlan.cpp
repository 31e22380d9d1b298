//===- FastestPlan.cpp - the fastest plan near the user's that fits -------===//

#include "Planning/FastestPlan.h"

#include "CandidateErrors.h"

#include "fsdp/IR/FSDPDialect.h"

#include <functional>

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// A change that can make a step cheaper, and the plan field it turns.
struct SpeedChange {
  StringRef field;
  std::string text;
  std::function<void(PlanFields &)> apply;
};

/// The changes from `plan` that do less work, wait less or move less.
SmallVector<SpeedChange> speedChanges(const PlanFields &plan, bool deviceArena) {
  SmallVector<SpeedChange> changes;
  if (plan.remat != RematPolicy::None) {
    changes.push_back({"remat", "remat = none", [](PlanFields &p) {
                         p.remat = RematPolicy::None;
                         p.rematEvery = 1;
                         p.rematUnits = nullptr;
                       }});
    if (plan.remat == RematPolicy::Unit)
      changes.push_back({"remat", "remat = selective", [](PlanFields &p) {
                           p.remat = RematPolicy::Selective;
                           p.rematEvery = 1;
                           p.rematUnits = nullptr;
                         }});
  }
  if (plan.microBatches > 1) {
    changes.push_back({"micro_batches", "micro_batches = 1",
                       [](PlanFields &p) { p.microBatches = 1; }});
    if (plan.microBatches % 2 == 0 && plan.microBatches > 2) {
      int64_t half = plan.microBatches / 2;
      changes.push_back({"micro_batches", "micro_batches = " + std::to_string(half),
                         [half](PlanFields &p) { p.microBatches = half; }});
    }
  }
  if (plan.offload == Offload::Optimizer && deviceArena)
    changes.push_back({"offload", "offload = none", [](PlanFields &p) { p.offload = Offload::None; }});
  if (plan.strategy != Strategy::NoShard) {
    int64_t depth = plan.prefetch + 1;
    changes.push_back({"prefetch", "prefetch = " + std::to_string(depth),
                       [depth](PlanFields &p) { p.prefetch = depth; }});
  }
  if (plan.reduceDtype == DType::F32 && plan.paramDtype == DType::BF16)
    changes.push_back(
        {"reduce_dtype", "reduce_dtype = bf16", [](PlanFields &p) { p.reduceDtype = DType::BF16; }});
  // The norms between the regions on 1/T of the tokens, for the same bytes.
  if (plan.tensorParallel > 1 && !plan.sequenceParallel)
    changes.push_back({"sequence_parallel", "sequence_parallel = true",
                       [](PlanFields &p) { p.sequenceParallel = true; }});
  return changes;
}

} // namespace

PlanFix mlir::fsdp::searchFastest(ModuleOp model, const PlanEvaluation &base,
                                  const FitOptions &options) {
  MLIRContext *context = model.getContext();
  CandidateErrors::Capture capture(context);
  PlanFix best{"", 0, base};
  // A field changes once: a climb does not undo or redo an earlier one.
  SmallVector<StringRef> taken;
  for (unsigned climb = 0; climb < options.maxChanges; ++climb) {
    PlanFields fields = best.evaluation.plan.getFields();
    std::optional<PlanFix> step;
    StringRef stepField;
    for (const SpeedChange &change :
         speedChanges(fields, options.target->hasDeviceArena())) {
      if (llvm::is_contained(taken, change.field))
        continue;
      PlanFields changed = fields;
      change.apply(changed);
      std::string error;
      CandidateErrors errors(error);
      PlanAttr plan = PlanAttr::get(context, changed, [&] { return emitError(model.getLoc()); });
      if (!plan)
        continue;
      FailureOr<PlanEvaluation> evaluation = evaluatePlan(
          model, plan, *options.target, *options.profile, /*verifyEachPass=*/false);
      if (failed(evaluation) || !options.budget.fits(*evaluation))
        continue;
      double seconds = evaluation->cost.stepSeconds;
      double bound = (step ? step->evaluation : best.evaluation).cost.stepSeconds;
      if (seconds < bound * (step ? 1.0 : 0.999)) {
        step = PlanFix{change.text, 1, std::move(*evaluation)};
        stepField = change.field;
      }
    }
    if (!step)
      break;
    taken.push_back(stepField);
    best.changes += (best.changes.empty() ? "" : ", ") + step->changes;
    best.numChanges += 1;
    best.evaluation = std::move(step->evaluation);
  }
  return best;
}
