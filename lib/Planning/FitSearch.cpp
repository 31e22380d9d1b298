//===- FitSearch.cpp - the cheapest plan changes that fit a budget --------===//

#include "Planning/FitSearch.h"

#include "CandidateErrors.h"

#include "Analysis/ShardingLayout.h"
#include "fsdp/IR/FSDPDialect.h"
#include "fsdp/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/ThreadPool.h"

#include <atomic>
#include <functional>
#include <map>
#include <set>

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// The knobs a change turns; a candidate turns each at most once.
enum Axis {
  Remat,
  MicroBatches,
  Prefetch,
  Ranks,
  TensorRanks,
  Sharding,
  Precision,
  Reduction,
  Accumulate,
  OffloadAxis
};

struct Change {
  Axis axis;
  std::string text;
  std::function<void(PlanFields &)> apply;
};

std::string gridText(ArrayRef<int64_t> grid) {
  std::string text = "grid = [";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(grid, os);
  os << "]";
  return text;
}

/// The single changes that can lower a plan's memory, from the plan as given,
/// for `target`.
SmallVector<Change> changesFrom(const PlanFields &plan, const PipelineTarget &target) {
  SmallVector<Change> changes;
  bool partialRemat =
      plan.remat != RematPolicy::None && (plan.rematEvery != 1 || plan.rematUnits);
  if (plan.remat == RematPolicy::None)
    changes.push_back({Remat, "remat = selective", [](PlanFields &p) {
                         p.remat = RematPolicy::Selective;
                       }});
  if (plan.remat != RematPolicy::Unit || partialRemat)
    changes.push_back({Remat, "remat = unit", [](PlanFields &p) {
                         p.remat = RematPolicy::Unit;
                         p.rematEvery = 1;
                         p.rematUnits = nullptr;
                       }});
  for (int64_t factor : {2, 4}) {
    int64_t k = plan.microBatches * factor;
    changes.push_back({MicroBatches, "micro_batches = " + std::to_string(k),
                       [k](PlanFields &p) { p.microBatches = k; }});
  }
  if (plan.strategy != Strategy::NoShard)
    for (int64_t depth = plan.prefetch - 1; depth >= 0; --depth)
      changes.push_back({Prefetch, "prefetch = " + std::to_string(depth),
                         [depth](PlanFields &p) { p.prefetch = depth; }});
  // More ranks: the shard axis twice or four times as long.
  for (int64_t factor : {2, 4}) {
    SmallVector<int64_t> grid = plan.grid;
    grid.back() *= factor;
    changes.push_back({Ranks, gridText(grid), [grid](PlanFields &p) { p.grid = grid; }});
  }
  // The same ranks, half of them tensor ranks more: the shard axis half as
  // long and twice the tensor ranks, with sequence parallelism (the
  // activations of a data index's rows split, where more shards would only
  // split the state).
  if (plan.grid.back() % 2 == 0) {
    SmallVector<int64_t> grid = plan.grid;
    grid.back() /= 2;
    int64_t tensor = plan.tensorParallel * 2;
    changes.push_back({Ranks,
                       gridText(grid) + ", tensor_parallel = " + std::to_string(tensor) +
                           ", sequence_parallel = true",
                       [grid, tensor](PlanFields &p) {
                         p.grid = grid;
                         p.tensorParallel = tensor;
                         p.sequenceParallel = true;
                       }});
  }
  // Twice the tensor ranks beside each data-parallel rank (twice the ranks),
  // with sequence parallelism: a tensor rank holds half the blocks and half
  // the tokens between them. Or sequence parallelism on the tensor ranks the
  // plan has. Models the layout cannot cut more are named impossible.
  int64_t tensor = plan.tensorParallel * 2;
  changes.push_back({TensorRanks,
                     "tensor_parallel = " + std::to_string(tensor) + ", sequence_parallel = true",
                     [tensor](PlanFields &p) {
                       p.tensorParallel = tensor;
                       p.sequenceParallel = true;
                     }});
  if (plan.tensorParallel > 1 && !plan.sequenceParallel)
    changes.push_back({TensorRanks, "sequence_parallel = true",
                       [](PlanFields &p) { p.sequenceParallel = true; }});
  if (plan.strategy == Strategy::ShardGradOp || plan.strategy == Strategy::NoShard)
    changes.push_back({Sharding, "strategy = full_shard",
                       [](PlanFields &p) { p.strategy = Strategy::FullShard; }});
  if (plan.strategy == Strategy::HybridShard && plan.grid[0] > 1) {
    // Half the replica groups, each sharded twice as wide; one group is
    // full_shard.
    int64_t replicas = plan.grid[0] / 2, shards = plan.grid[1] * (plan.grid[0] / replicas);
    SmallVector<int64_t> grid = replicas > 1 ? SmallVector<int64_t>{replicas, shards}
                                             : SmallVector<int64_t>{replicas * shards};
    std::string text = gridText(grid) + (replicas > 1 ? "" : ", strategy = full_shard");
    changes.push_back({Sharding, text, [grid](PlanFields &p) {
                         p.grid = grid;
                         if (grid.size() == 1)
                           p.strategy = Strategy::FullShard;
                       }});
  }
  if (plan.paramDtype == DType::F32)
    changes.push_back(
        {Precision, "param_dtype = bf16", [](PlanFields &p) { p.paramDtype = DType::BF16; }});
  if (plan.reduceDtype == DType::F32)
    changes.push_back(
        {Reduction, "reduce_dtype = bf16", [](PlanFields &p) { p.reduceDtype = DType::BF16; }});
  if (plan.accumulate == Accumulation::NoSync)
    changes.push_back({Accumulate, "accumulate = reduce_scatter",
                       [](PlanFields &p) { p.accumulate = Accumulation::ReduceScatter; }});
  // Only a GPU's memory is spared by moving the optimizer to the host.
  if (plan.offload == Offload::None && target.hasDeviceArena())
    changes.push_back({OffloadAxis, "offload = optimizer",
                       [](PlanFields &p) { p.offload = Offload::Optimizer; }});
  return changes;
}

/// A set of changes, by index, in increasing order.
using Choice = SmallVector<unsigned, 4>;

struct Outcome {
  bool compiled = false;
  std::optional<PlanEvaluation> evaluation;
  int64_t needed = 0;
};

/// Bytes a rank keeps across steps for `plan`'s sharded state: a lower bound
/// of its arena that needs no compile (the units' layout only).
FailureOr<int64_t> shardedStateBytes(ModuleOp model, PlanAttr plan) {
  OwningOpRef<ModuleOp> copy = model.clone();
  (*copy)->setAttr(FSDPDialect::getPlanAttrName(), plan);
  PassManager pm(model.getContext());
  pm.addPass(createFSDPFormUnitsPass());
  pm.addPass(createFSDPSplitTensorsPass());
  if (failed(pm.run(*copy)))
    return failure();
  FailureOr<ShardingLayout> layout = ShardingLayout::build(*copy);
  if (failed(layout))
    return failure();
  int64_t slots = plan.getOptimizer().getStateSlots().size(), bytes = 0;
  bool offload = plan.getOffload() == Offload::Optimizer;
  int64_t offloadedBytes = dtypeBytes(plan.getParamDtype());
  for (const UnitLayout &unit : layout->units) {
    if (unit.trainable && offload)
      bytes += unit.shardNumel * offloadedBytes; // the device's copy only
    else
      bytes += unit.shardNumel * unit.elementBytes * (1 + (unit.trainable ? slots : 0));
  }
  return bytes;
}

/// Runs `task(0..count-1)` on the context's threads (each candidate's
/// compile on one thread, whole). Not mlir::parallelForEach: its diagnostic
/// handler holds the threads' diagnostics back until all are done, where the
/// search wants each on the thread of its candidate.
void onThreads(MLIRContext *context, size_t count, llvm::function_ref<void(size_t)> task) {
  if (!context->isMultithreadingEnabled() || count <= 1) {
    for (size_t i = 0; i < count; ++i)
      task(i);
    return;
  }
  llvm::ThreadPoolInterface &pool = context->getThreadPool();
  llvm::ThreadPoolTaskGroup group(pool);
  std::atomic<size_t> next{0};
  context->enterMultiThreadedExecution();
  for (size_t t = 0, e = std::min<size_t>(pool.getMaxConcurrency(), count); t < e; ++t)
    group.async([&] {
      for (size_t i = next++; i < count; i = next++)
        task(i);
    });
  group.wait();
  context->exitMultiThreadedExecution();
}

/// A candidate with the effect of its changes added up from their single
/// evaluations: what to skip, and the order to try the rest in.
struct FitCandidate {
  Choice choice;
  int64_t estimatedNeeded;
  double estimatedSeconds;
};

/// A candidate of a level on its way to an outcome.
struct FitTrial {
  const FitCandidate *candidate;
  enum { Impossible, Skipped, Compiled } status = Impossible;
  PlanAttr plan;
  FailureOr<PlanEvaluation> evaluation = failure();
  std::string error;
};

/// The search around one model's plan, level by level (one, two, three
/// changes), and what it has learnt of each choice so far.
class FitSearcher {
public:
  FitSearcher(ModuleOp model, const PlanEvaluation &base, const FitOptions &options)
      : model(model), base(base), options(options), context(model.getContext()),
        budget(options.budget), baseFields(base.plan.getFields()),
        changes(changesFrom(baseFields, *options.target)), baseNeeded(budget.needed(base)),
        baseSeconds(PlanFix{"", 0, base}.deviceSeconds()) {}

  FitSearchResult run() {
    SmallVector<Choice> level;
    for (unsigned i = 0; i < changes.size(); ++i)
      level.push_back({i});
    for (unsigned size = 1; size <= options.maxChanges && !level.empty(); ++size)
      level = searchLevel(level, size);
    rankFits();
    return std::move(result);
  }

private:
  ModuleOp model;
  const PlanEvaluation &base;
  const FitOptions &options;
  MLIRContext *context;
  const MemoryBudget &budget;
  PlanFields baseFields;
  SmallVector<Change> changes;
  int64_t baseNeeded;
  double baseSeconds;
  FitSearchResult result;
  std::map<Choice, Outcome> outcomes;

  std::string describe(const Choice &choice) const {
    std::string text;
    for (unsigned index : choice)
      text += (text.empty() ? "" : ", ") + changes[index].text;
    return text;
  }

  bool extendsAFit(const Choice &choice) const {
    // A subset that fits makes this choice only more change.
    for (const auto &[done, outcome] : outcomes)
      if (outcome.compiled && outcome.needed <= budget.deviceBytes && done.size() < choice.size() &&
          llvm::all_of(done, [&](unsigned i) { return llvm::is_contained(choice, i); }))
        return true;
    return false;
  }

  /// Tries the choices of one level (`size` changes each); returns the next.
  SmallVector<Choice> searchLevel(ArrayRef<Choice> level, unsigned size) {
    SmallVector<FitCandidate> candidates = levelCandidates(level, size);
    // Which candidates to compile (the cheap checks, in order), then their
    // compiles side by side on the context's threads (candidates of a level
    // do not depend on each other), then their outcomes in order.
    std::vector<FitTrial> trials;
    for (const FitCandidate &candidate : candidates)
      screenCandidate(trials.emplace_back(FitTrial{&candidate}));
    compileTrials(trials);
    recordOutcomes(trials, size);
    return nextLevel(candidates);
  }

  /// The choices of a level not skipped, the cheapest estimate first.
  SmallVector<FitCandidate> levelCandidates(ArrayRef<Choice> level, unsigned size) {
    SmallVector<FitCandidate> candidates;
    for (const Choice &choice : level) {
      if (extendsAFit(choice)) {
        ++result.skipped;
        continue;
      }
      std::optional<FitCandidate> candidate = estimateCandidate(choice, size);
      if (!candidate) {
        ++result.skipped;
        continue;
      }
      candidates.push_back(*candidate);
    }
    llvm::stable_sort(candidates, [](const FitCandidate &a, const FitCandidate &b) {
      return a.estimatedSeconds < b.estimatedSeconds;
    });
    return candidates;
  }

  /// `choice` with its changes' single effects added up; none when one of
  /// them did not compile or they would not fit.
  std::optional<FitCandidate> estimateCandidate(const Choice &choice, unsigned size) {
    int64_t needed = baseNeeded;
    double seconds = baseSeconds;
    bool known = true;
    if (size > 1) {
      for (unsigned index : choice) {
        const Outcome &single = outcomes[{index}];
        if (!single.compiled) {
          known = false;
          break;
        }
        needed += single.needed - baseNeeded;
        // A change whose sharded state alone was over was never compiled: its
        // time is not known, and counts as the base's.
        if (single.evaluation)
          seconds += PlanFix{"", 0, *single.evaluation}.deviceSeconds() - baseSeconds;
      }
      if (!known || needed > budget.deviceBytes)
        return std::nullopt;
    }
    return FitCandidate{choice, needed, seconds};
  }

  /// The cheap checks of one candidate: whether its plan builds, and whether
  /// its sharded state leaves room; marks it to compile when both hold.
  void screenCandidate(FitTrial &trial) {
    const FitCandidate &candidate = *trial.candidate;
    PlanFields fields = baseFields;
    for (unsigned index : candidate.choice)
      changes[index].apply(fields);
    FailureOr<int64_t> state = failure();
    {
      CandidateErrors errors(trial.error);
      trial.plan = PlanAttr::get(context, fields, [&] { return emitError(model.getLoc()); });
      if (trial.plan)
        state = shardedStateBytes(model, trial.plan);
    }
    if (failed(state))
      return;
    if (*state + budget.runtime.total() > budget.deviceBytes) {
      // Compiles, but its sharded state alone is over: no use combining.
      Outcome &outcome = outcomes[candidate.choice];
      outcome.compiled = true;
      outcome.needed = *state + budget.runtime.total();
      trial.status = FitTrial::Skipped;
      ++result.skipped;
      return;
    }
    if (result.evaluated >= options.maxEvaluations) {
      trial.status = FitTrial::Skipped;
      ++result.skipped;
      return;
    }
    ++result.evaluated;
    trial.status = FitTrial::Compiled;
  }

  void compileTrials(std::vector<FitTrial> &trials) {
    SmallVector<FitTrial *> compiles;
    for (FitTrial &trial : trials)
      if (trial.status == FitTrial::Compiled)
        compiles.push_back(&trial);
    onThreads(context, compiles.size(), [&](size_t i) {
      FitTrial &trial = *compiles[i];
      CandidateErrors errors(trial.error);
      trial.evaluation = evaluatePlan(model, trial.plan, *options.target, *options.profile,
                                      /*verifyEachPass=*/false);
    });
  }

  void recordOutcomes(std::vector<FitTrial> &trials, unsigned size) {
    for (FitTrial &trial : trials) {
      const Choice &choice = trial.candidate->choice;
      if (trial.status == FitTrial::Skipped)
        continue;
      if (failed(trial.evaluation)) {
        // A single change this model cannot take; no combination has it.
        if (size == 1)
          result.impossible.emplace_back(describe(choice), trial.error);
        continue;
      }
      Outcome &outcome = outcomes[choice];
      outcome.compiled = true;
      outcome.needed = budget.needed(*trial.evaluation);
      outcome.evaluation = std::move(*trial.evaluation);
      if (outcome.needed <= budget.deviceBytes)
        result.fits.push_back({describe(choice), size, *outcome.evaluation});
    }
  }

  /// The next level: each choice that did not fit, with one more change on
  /// another knob.
  SmallVector<Choice> nextLevel(ArrayRef<FitCandidate> candidates) {
    SmallVector<Choice> next;
    std::set<Choice> seen;
    for (const FitCandidate &candidate : candidates) {
      const Outcome &outcome = outcomes[candidate.choice];
      if (!outcome.compiled || outcome.needed <= budget.deviceBytes)
        continue;
      for (unsigned i = 0; i < changes.size(); ++i) {
        if (llvm::any_of(candidate.choice,
                         [&](unsigned j) { return changes[j].axis == changes[i].axis; }))
          continue;
        Choice extended = candidate.choice;
        extended.insert(llvm::upper_bound(extended, i), i);
        if (seen.insert(extended).second)
          next.push_back(extended);
      }
    }
    return next;
  }

  void rankFits() {
    // The ranks a user has come first: a fix on more ranks needs more devices.
    // Then the device time per step, then the fewest changes.
    int64_t ranks = base.worldSize();
    llvm::stable_sort(result.fits, [&](const PlanFix &a, const PlanFix &b) {
      bool aMore = a.evaluation.worldSize() > ranks, bMore = b.evaluation.worldSize() > ranks;
      if (aMore != bMore)
        return bMore;
      if (a.deviceSeconds() != b.deviceSeconds())
        return a.deviceSeconds() < b.deviceSeconds();
      return a.numChanges < b.numChanges;
    });
    if (result.fits.size() > options.maxResults)
      result.fits.resize(options.maxResults);
  }
};

} // namespace

FitSearchResult mlir::fsdp::searchFits(ModuleOp model, const PlanEvaluation &base,
                                       const FitOptions &options) {
  CandidateErrors::Capture capture(model.getContext());
  return FitSearcher(model, base, options).run();
}
