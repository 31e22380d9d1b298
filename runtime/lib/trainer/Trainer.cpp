//===- Trainer.cpp - The trainer: flags, set-up and the step loop ---------===//

#include "trainer/Trainer.h"

#include "abi/Arena.h"
#include "abi/CollectiveTimeout.h"
#include "abi/Collectives.h"
#include "abi/Device.h"
#include "abi/DeviceScalars.h"
#include "abi/Error.h"
#include "abi/Manifest.h"
#include "abi/StreamEvents.h"
#include "io/Checkpoint.h"
#include "io/DataFile.h"
#include "io/OutputFile.h"
#include "io/SafeTensors.h"
#include "io/TokenFile.h"
#include "trace/HeapUsage.h"
#include "trace/HighWater.h"
#include "trace/StateTrace.h"
#include "trace/StepTimeline.h"
#include "trainer/Evaluation.h"
#include "trainer/Flags.h"
#include "trainer/Init.h"
#include "trainer/Ranks.h"
#include "trainer/SyntheticData.h"
#include "trainer/Throughput.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

namespace fsdprt {

/// The shortest decimal that reads back as the same float: the JSON log keeps
/// the exact loss.
static std::string formatLoss(float loss) {
  char buffer[32];
  std::to_chars_result result = std::to_chars(buffer, buffer + sizeof(buffer), loss);
  return std::string(buffer, result.ptr);
}

static double secondsBetween(std::chrono::steady_clock::time_point start,
                             std::chrono::steady_clock::time_point end) {
  // A clock tick of zero would make the rate infinite, which JSON cannot hold.
  return std::max(std::chrono::duration<double>(end - start).count(), 1e-9);
}

static std::string plural(int64_t count, const char *noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

/// The plan's collectives assume exactly its grid's ranks (times its tensor
/// ranks).
static void checkWorldSize(const Manifest &manifest) {
  int64_t planned = manifest.worldSize();
  int64_t started = worldSize();
  if (planned == started)
    return;
  std::string how = started == 1 ? "it was started as 1 rank (without mpirun or with mpirun -np 1)"
                                 : "mpirun started " + plural(started, "rank");
  std::string plan = "grid " + formatShape(manifest.grid);
  if (manifest.tensorRanks > 1)
    plan += " x " + plural(manifest.tensorRanks, "tensor rank");
  // A recompiled plan keeps its tensor ranks: only a multiple of them fits.
  std::string recompile;
  if (started % manifest.tensorRanks == 0)
    recompile =
        ", or recompile with fsdpc --grid=" + std::to_string(started / manifest.tensorRanks);
  fatal("the model was compiled for " + plan + " (" + plural(planned, "rank") + "), but " + how +
        ": run it with mpirun -np " + std::to_string(planned) + recompile);
}

float callStep(TrainStepFn stepFn, const Manifest &manifest, void *arena, uint8_t *hostArena,
               int64_t step, float lr) {
  beginStepCollectives(manifest.collectives);
  beginStepKernels(manifest.kernelOrigins);
  if (!hostArena)
    return stepFn(arena, step, lr);
  // The generated object defines the symbol with the other type; the cast
  // goes through void (*)(), C++'s generic function pointer.
  auto offloaded =
      reinterpret_cast<OffloadedTrainStepFn>(reinterpret_cast<void (*)()>(stepFn));
  return offloaded(arena, hostArena, step, lr);
}

/// Whether `path` is a token file: one that can be read and does not start
/// with the FSDPDATA magic. (The FSDPDATA reader reports a file it cannot
/// open.)
static bool isTokenFile(const std::string &path) {
  char magic[8] = {};
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    return false;
  size_t got = std::fread(magic, 1, sizeof(magic), file);
  std::fclose(file);
  return got != sizeof(magic) || std::memcmp(magic, "FSDPDATA", sizeof(magic)) != 0;
}

/// The data file `path` of `flag`: FSDPDATA or tokens, the latter in the
/// seed's order for training (`shuffle`), in file order for evaluation.
static std::unique_ptr<BatchSource> openDataFile(const char *flag, const std::string &path,
                                                 const TrainerOptions &options,
                                                 const Manifest &manifest, int64_t dataIndex,
                                                 uint64_t seed, bool shuffle) {
  if (isTokenFile(path))
    return TokenFile::open(flag, path, options.tokenDType, manifest, dataIndex, seed, shuffle);
  std::unique_ptr<DataFile> file = DataFile::open(path, manifest, dataIndex);
  if (options.tokenDType)
    fatal("--token-dtype: '" + path + "' is an FSDPDATA file, not a token file");
  return file;
}

static std::unique_ptr<BatchSource> openBatchSource(const TrainerOptions &options,
                                                    const Manifest &manifest, int64_t dataIndex,
                                                    uint64_t seed) {
  if (options.dataPath.empty())
    return std::make_unique<SyntheticData>(manifest, seed, dataIndex);
  return openDataFile("--data", options.dataPath, options, manifest, dataIndex, seed,
                      /*shuffle=*/true);
}

/// The schedule of this run: the checkpoint's when resuming (else the plan's
/// rate, constant, with a decay over --steps), with what the flags give.
static LrSchedule scheduleOf(const TrainerOptions &options, const Manifest &manifest,
                             const std::optional<TrainingPosition> &resumed) {
  LrSchedule schedule;
  if (resumed) {
    schedule = resumed->schedule;
  } else {
    schedule.peak = static_cast<float>(manifest.optimizer.lr);
    schedule.decaySteps = options.steps;
  }
  const ScheduleFlags &flags = options.schedule;
  if (options.lr)
    schedule.peak = *options.lr;
  schedule.warmupSteps = flags.warmupSteps.value_or(schedule.warmupSteps);
  schedule.decay = flags.decay.value_or(schedule.decay);
  schedule.decaySteps = flags.decaySteps.value_or(schedule.decaySteps);
  schedule.floor = flags.floor.value_or(schedule.floor);
  if (std::string problem = schedule.problem(); !problem.empty())
    fatal(problem);
  return schedule;
}

/// Checks the flags that only make sense together.
static void checkFlagCombinations(const TrainerOptions &options) {
  if (options.saveEvery != 0 && options.saveDir.empty())
    fatal("--save-every needs --save DIR");
  if (options.keep != 0 && options.saveDir.empty())
    fatal("--keep needs --save DIR");
  if (options.tokenDType && options.dataPath.empty() && options.evalDataPath.empty())
    fatal("--token-dtype needs --data FILE or --eval-data FILE");
  if ((options.evalEvery != 0 || options.evalBatches != 0) && options.evalDataPath.empty())
    fatal(std::string(options.evalEvery != 0 ? "--eval-every" : "--eval-batches") +
          " needs --eval-data FILE");
  if (!options.initFromPath.empty() && !options.resumeDir.empty())
    fatal("--init-from and --resume exclude each other: a resumed run starts from its "
          "checkpoint's parameters");
}

/// The parameter shards are what the trainer writes before the first step
/// and reads after the last. An offloaded unit's are in the host arena: the
/// device gets its copy in param_dtype (as the step's update leaves it).
static void uploadParamShards(const Manifest &manifest, Arena &arena, const uint8_t *hostArena) {
  for (const UnitSpec &unit : manifest.units) {
    if (!unit.offloaded) {
      arena.upload(unit.paramOffset, unit.shardBytes());
      continue;
    }
    const uint8_t *master = hostArena + unit.paramOffset;
    uint8_t *copy = arena.host() + unit.deviceParamOffset;
    size_t from = dtypeSize(unit.dtype), to = dtypeSize(unit.deviceParamDType);
    for (int64_t i = 0; i < unit.shardNumel; ++i)
      storeReal(loadReal(unit.dtype, master + from * i), unit.deviceParamDType, copy + to * i);
    arena.upload(unit.deviceParamOffset, unit.shardNumel * static_cast<int64_t>(to));
  }
}

static void downloadParamShards(const Manifest &manifest, Arena &arena) {
  for (const UnitSpec &unit : manifest.units)
    if (!unit.offloaded)
      arena.download(unit.paramOffset, unit.shardBytes());
}

/// A resumed run's optimizer state, read into the host view.
static void uploadStateShards(const Manifest &manifest, Arena &arena) {
  for (const UnitSpec &unit : manifest.units)
    if (!unit.offloaded && unit.trainable)
      for (const SlotSpec &slot : unit.state)
        arena.upload(slot.offset, unit.shardBytes());
}

/// --help, --version and --print-manifest, which need neither MPI nor a
/// device: the exit status when one of them was given.
static std::optional<int> answerInfoFlag(const TrainerOptions &options,
                                         const char *manifestText) {
  if (options.help) {
    std::fputs(usageText(), stdout);
    return 0;
  }
  if (options.version) {
    std::fputs(backendVersion().c_str(), stdout);
    return 0;
  }
  if (options.printManifest) {
    // As embedded, without parsing: this is how a broken manifest gets looked at.
    std::fputs(manifestText, stdout);
    size_t length = std::strlen(manifestText);
    if (length == 0 || manifestText[length - 1] != '\n')
      std::fputc('\n', stdout);
    return 0;
  }
  return std::nullopt;
}

/// The training step's manifest and, with --eval-data, the evaluation
/// step's, checked against each other and the flags on every rank alike.
struct RunManifests {
  Manifest training, evaluation;
};

static RunManifests readManifests(const TrainerOptions &options, bool evaluating,
                                  const char *manifestText, const char *kernelOrigins,
                                  const char *evalManifestText, TrainStepFn evalStep,
                                  const char *evalKernelOrigins) {
  SameErrorOnEveryRank same;
  RunManifests manifests;
  Manifest &manifest = manifests.training;
  manifest = parseManifest(manifestText);
  manifest.kernelOrigins = parseKernelOrigins(kernelOrigins);
  checkWorldSize(manifest);
  checkFlagCombinations(options);
  if (evaluating && !evalStep)
    fatal("--eval-data: this trainer has no evaluation step (its object was not compiled "
          "by fsdpc, which links one beside the training step)");
  if (evaluating) {
    Manifest &evalManifest = manifests.evaluation;
    evalManifest = parseManifest(evalManifestText);
    evalManifest.kernelOrigins = parseKernelOrigins(evalKernelOrigins);
    // The evaluation step runs on the training step's arena.
    if (std::string what = persistentLayoutDifference(manifest, evalManifest); !what.empty())
      fatal("the evaluation step's manifest differs from the training step's in " + what +
            " (the trainer's object is inconsistent: recompile it with fsdpc)");
    // The arena holds either step's transient buffers.
    manifest.arenaBytes = std::max(manifest.arenaBytes, evalManifest.arenaBytes);
  }
  return manifests;
}

/// Rank 0's first lines (a manifest with step_flops): what the step's
/// products run on, then what a step holds.
static void printFirstLines(const Manifest &manifest, const Throughput &throughput) {
  if (!manifest.stepFlops)
    return;
  for (const std::string &line :
       {productKernels(manifest.stepFlops->bf16Products > 0), throughput.describe()})
    if (!line.empty())
      std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

/// The files rank 0 writes, opened before the first step so that a bad path
/// stops the run at once; the other ranks only take part in gathering them.
struct RunOutputs {
  std::unique_ptr<OutputFile> logJson, exported, trace, stepTrace;
};

static RunOutputs openOutputs(const TrainerOptions &options, bool leader) {
  RunOutputs outputs;
  if (leader && !options.logJsonPath.empty())
    outputs.logJson = std::make_unique<OutputFile>("--log-json", options.logJsonPath);
  if (leader && !options.exportPath.empty())
    outputs.exported = std::make_unique<OutputFile>("--export", options.exportPath);
  if (leader && !options.traceStatePath.empty())
    outputs.trace = std::make_unique<OutputFile>("--trace-state", options.traceStatePath);
  if (!options.tracePath.empty() && !hostTimesStep())
    fatal("--trace: this backend cannot time its step from the host yet (a GPU's work "
          "runs after the calls that enqueue it); fsdpc --timeline predicts it");
  if (leader && !options.tracePath.empty())
    outputs.stepTrace = std::make_unique<OutputFile>("--trace", options.tracePath);
  return outputs;
}

/// The shards' first values: a resumed run's checkpoint (its position
/// returned, checked against the flags, its optimizer state uploaded), else
/// the initial values or --init-from's.
static std::optional<TrainingPosition> startShards(const TrainerOptions &options,
                                                   const Manifest &manifest,
                                                   const RankPlace &place, HostShards &shards,
                                                   Arena &arena) {
  if (options.resumeDir.empty()) {
    uint64_t seed = options.seed.value_or(0);
    if (options.initFromPath.empty())
      initializeShards(manifest, seed, place.shardIndex, shards, place.tensorIndex);
    else
      initFromSafetensors(manifest, options.initFromPath, place, shards);
    return std::nullopt;
  }
  TrainingPosition position = loadCheckpoint(options.resumeDir, manifest, place, shards);
  SameErrorOnEveryRank same;
  if (options.seed && *options.seed != position.seed)
    fatal("--seed " + std::to_string(*options.seed) + " differs from the checkpoint's seed " +
          std::to_string(position.seed) + ": a resumed run keeps its data order");
  if (options.steps < position.step)
    fatal("--steps " + std::to_string(options.steps) + " is before the checkpoint's step " +
          std::to_string(position.step) + " (--steps is the last step to run)");
  uploadStateShards(manifest, arena);
  return position;
}

/// Rank 0's last line, the planned arena beside every rank's measured
/// high-water mark, and its files completed and closed: `stepTrace` is the
/// --trace file's text.
static void finishOutputs(RunOutputs &outputs, int64_t plannedPeak,
                          const std::vector<int64_t> &marks, const std::string &stepTrace) {
  std::printf("%s\n", arenaLine(plannedPeak, marks).c_str());
  std::fflush(stdout);
  if (outputs.exported)
    outputs.exported->close();
  if (outputs.trace)
    outputs.trace->close();
  if (outputs.stepTrace) {
    outputs.stepTrace->write(stepTrace);
    outputs.stepTrace->close();
  }
  if (outputs.logJson) {
    outputs.logJson->write(arenaJson(plannedPeak, marks) + "\n");
    outputs.logJson->close();
  }
}

namespace {

using Clock = std::chrono::steady_clock;

/// A step whose work is enqueued, and whose loss is not read yet.
struct EnqueuedStep {
  int64_t step;
  float lr;
  Clock::time_point start;
  float returned; // the loss, without device_scalars
  int lossTicket; // with device_scalars (copyLossToHost)
};

/// One run once its manifests are read and its rank placed: the arena and
/// its shards, the step loop with what it logs, saves and evaluates, and the
/// run's last outputs. The loop's named steps share this state.
class TrainingRun {
public:
  TrainingRun(const TrainerOptions &options, const RunManifests &manifests, RankPlace place,
              const Throughput &throughput, RunOutputs outputs, TrainStepFn trainStep,
              TrainStepFn evalStep)
      : options(options), manifest(manifests.training), evalManifest(manifests.evaluation),
        place(place), leader(place.rank == 0), throughput(throughput),
        outputs(std::move(outputs)), trainStep(trainStep), evalStep(evalStep),
        evaluating(!options.evalDataPath.empty()), tracing(!options.traceStatePath.empty()),
        // Zero-filled: gradient and state shards, padding and inputs start at 0.
        arena(static_cast<size_t>(manifest.arenaBytes)),
        hostArena(static_cast<size_t>(manifest.hostArenaBytes)),
        shards(arena.host(), hostArena.data()),
        // A CUDA graph replays the step's device work as captured: only a
        // step that reads lr and step from the arena, and runs no host code
        // in its middle (offload's update), can run from one; --debug-sync
        // waits inside the step, which a capture refuses.
        replayable(manifest.deviceScalars && manifest.hostArenaBytes == 0 &&
                   !options.noCudaGraph && !options.debugSync),
        runAhead(stepsRunAhead()) {
    if (!options.tracePath.empty())
      StepTimeline::activate(&timeline);
  }

  /// The shards (initial, --init-from or a checkpoint's), the data, the
  /// uploads, and what --trace-state, --trace and --eval-data need first.
  void start();
  /// Every step from the first to --steps.
  void train();
  /// The last evaluation and checkpoint, the export, rank 0's last lines.
  void finish();

private:
  void openData();
  void uploadShards();
  void save();
  void evaluate(int64_t step);
  EnqueuedStep enqueue(int64_t step);
  /// Whether a step's loss may wait for the next step's work to be enqueued.
  bool mayRunAhead(int64_t step) const;
  /// The averaged loss of `enqueued` (its work done, or under way), checked.
  float lossOf(const EnqueuedStep &enqueued, Clock::time_point &lossRead);
  void logLoss(const EnqueuedStep &enqueued, float loss, Clock::time_point lossRead);
  void logStep(int64_t step, float loss, float lr, double stepSeconds, Clock::time_point stepEnd);
  /// Waits for `enqueued`'s work, then traces, logs, saves and evaluates it.
  void complete(const EnqueuedStep &enqueued);

  bool isSaveStep(int64_t step) const {
    return options.saveEvery != 0 && step % options.saveEvery == 0;
  }
  bool isEvalStep(int64_t step) const {
    return options.evalEvery != 0 && step % options.evalEvery == 0;
  }
  bool isProbeStep(int64_t step) const { return outputs.stepTrace && step == unitMarks.step; }

  const TrainerOptions &options;
  const Manifest &manifest;
  const Manifest &evalManifest;
  RankPlace place;
  bool leader;
  const Throughput &throughput;
  RunOutputs outputs;
  TrainStepFn trainStep, evalStep;
  bool evaluating, tracing;
  StepTimeline timeline;
  Arena arena;
  HostArena hostArena;
  HostShards shards;
  std::optional<TrainingPosition> resumed;
  TrainingPosition position;
  std::unique_ptr<BatchSource> batches;
  std::unique_ptr<HeldOutLoss> heldOut;
  int64_t firstStep = 1;
  // With --trace, rank 0's arena at the first step's unit boundaries.
  StepHighWater unitMarks;
  // The steps last saved and evaluated: a resumed run's checkpoint is saved.
  int64_t savedStep = -1, evaluatedStep = -1;
  Clock::time_point intervalStart;
  int64_t intervalSteps = 0;
  bool replayable, runAhead;
  std::optional<EnqueuedStep> unread;
  // When the last loss was read: with the steps running ahead, a step's time
  // runs from then (or from its own start, if later) to its loss.
  Clock::time_point lastLossRead = Clock::time_point::min();
};

void TrainingRun::start() {
  resumed = startShards(options, manifest, place, shards, arena);
  position = resumed.value_or(TrainingPosition{});
  if (!resumed)
    position.seed = options.seed.value_or(0);
  openData();
  uploadShards();
  firstStep = position.step + 1;
  // The first step is the one the trace does not keep when more run, and
  // the marker just laid shows what the step writes from its start.
  unitMarks = StepHighWater{firstStep, manifest.persistentBytes, manifest.arenaBytes, {}, 0};
  if (outputs.stepTrace)
    timeline.probeGatherWaits(unitMarks.step, [&] {
      unitMarks.afterGatherWaits.push_back(highWaterMark(manifest, arena));
    });
  if (tracing)
    writeStateRecord(manifest, place, arena, hostArena.data(), outputs.trace.get(),
                     /*afterStep=*/false);
  savedStep = resumed ? resumed->step : -1;
  if (evaluating)
    heldOut = std::make_unique<HeldOutLoss>(openDataFile("--eval-data", options.evalDataPath,
                                                         options, manifest, place.dataIndex,
                                                         position.seed, /*shuffle=*/false),
                                            options.evalBatches, manifest, evalManifest, evalStep);
}

/// The training data, its schedule, and where a resumed run goes on in it.
void TrainingRun::openData() {
  position.data = options.dataPath.empty() ? "synthetic" : options.dataPath;
  {
    SameErrorOnEveryRank same;
    position.schedule = scheduleOf(options, manifest, resumed);
  }
  // The tensor ranks of a data index read the same rows.
  batches = openBatchSource(options, manifest, place.dataIndex, position.seed);
  if (!resumed)
    return;
  batches->resumeAfter(position.step, position.samplesSeen);
  if (leader)
    std::printf("resumed from step %" PRId64 " (%s, %" PRId64 " samples seen)\n", position.step,
                resumed->data.c_str(), position.samplesSeen);
}

void TrainingRun::uploadShards() {
  uploadParamShards(manifest, arena, hostArena.data());
  markTransient(manifest, arena);
  // On a GPU the uploads and the marker are still under way on the compute
  // stream, and the first step's all-gathers read the shards on another:
  // they must be done before it starts. (Each step's inputs need no wait:
  // only the step's compute-stream work reads them.)
  finishUploads();
}

void TrainingRun::save() {
  saveCheckpoint(options.saveDir, manifest, place, arena, hostArena.data(), position,
                 options.keep);
  savedStep = position.step;
}

/// Rank 0 prints and logs the held-out loss after step `step`.
void TrainingRun::evaluate(int64_t step) {
  // The trace is of training steps.
  StepTimeline::activate(nullptr);
  double loss = heldOut->compute(manifest, arena, hostArena.data(), step);
  evaluatedStep = step;
  if (!options.tracePath.empty())
    StepTimeline::activate(&timeline);
  if (!leader)
    return;
  std::printf("eval step %" PRId64 " | held-out loss %.6f | %" PRId64 " samples\n", step, loss,
              heldOut->samples());
  std::fflush(stdout);
  if (outputs.logJson) {
    char line[160];
    std::snprintf(line, sizeof(line),
                  "{\"eval_step\": %" PRId64 ", \"eval_loss\": %.17g, \"eval_samples\": %" PRId64
                  "}\n",
                  step, loss, heldOut->samples());
    outputs.logJson->write(std::string(line));
    outputs.logJson->flush();
  }
}

/// Rank 0's JSON line of every step and progress line of every
/// --log-every-th.
void TrainingRun::logStep(int64_t step, float loss, float lr, double stepSeconds,
                          Clock::time_point stepEnd) {
  uint64_t heapBytes = heapBytesInUse();
  if (outputs.logJson) {
    char line[384];
    std::snprintf(line, sizeof(line),
                  "{\"step\": %" PRId64 ", \"loss\": %s, \"lr\": %s, %s, "
                  "\"bytes_in_use\": %" PRIu64 "}\n",
                  step, formatLoss(loss).c_str(), formatLoss(lr).c_str(),
                  Throughput::jsonFields(throughput.over(1, stepSeconds)).c_str(), heapBytes);
    outputs.logJson->write(std::string(line));
    outputs.logJson->flush();
  }
  if (step % options.logEvery == 0) {
    StepRates rates = throughput.over(intervalSteps, secondsBetween(intervalStart, stepEnd));
    std::printf("step %" PRId64 " | loss %.6f | lr %.3e | %s | mem %.1f MiB\n", step,
                static_cast<double>(loss), static_cast<double>(lr),
                Throughput::progressFields(rates).c_str(),
                static_cast<double>(heapBytes) / (1024.0 * 1024.0));
    std::fflush(stdout);
    intervalStart = Clock::now();
    intervalSteps = 0;
  }
}

float TrainingRun::lossOf(const EnqueuedStep &enqueued, Clock::time_point &lossRead) {
  float localLoss = manifest.deviceScalars ? takeLoss(enqueued.lossTicket) : enqueued.returned;
  // Each rank's loss covers local_batch rows: their mean is the loss of the
  // global batch.
  float loss = static_cast<float>(averageOverWorld(localLoss));
  lossRead = Clock::now();
  if (!std::isfinite(loss)) {
    SameErrorOnEveryRank same;
    fatal("step " + std::to_string(enqueued.step) + ": the loss is " +
          (std::isnan(loss) ? "NaN" : "infinite") + " (training diverged)");
  }
  return loss;
}

void TrainingRun::logLoss(const EnqueuedStep &enqueued, float loss, Clock::time_point lossRead) {
  position.step = enqueued.step;
  position.samplesSeen += manifest.batch;
  ++intervalSteps;
  Clock::time_point from = std::max(enqueued.start, lastLossRead);
  lastLossRead = lossRead;
  if (leader)
    logStep(enqueued.step, loss, enqueued.lr, secondsBetween(from, lossRead), lossRead);
}

/// Step `step`'s batch written and its work enqueued (run, on the CPU).
EnqueuedStep TrainingRun::enqueue(int64_t step) {
  float lr = static_cast<float>(position.schedule.at(step));
  setCurrentStep(step, step == firstStep);
  Clock::time_point stepStart = Clock::now();
  loadBatch(*batches, step, manifest, arena, {lr, step});
  startStepEvents();
  timeline.beginStep(step);
  float returned = enqueueStep(
      [&] { return callStep(trainStep, manifest, arena.stepData(), hostArena.data(), step, lr); },
      replayable);
  timeline.endStep();
  return EnqueuedStep{step, lr, stepStart, returned,
                      manifest.deviceScalars ? copyLossToHost(deviceLoss(manifest, arena)) : -1};
}

bool TrainingRun::mayRunAhead(int64_t step) const {
  // What needs this step's state on the host, or its loss now, waits for
  // all of its work and logs it first.
  return runAhead && !tracing && !isSaveStep(step) && !isEvalStep(step) && !isProbeStep(step) &&
         step != options.steps;
}

void TrainingRun::complete(const EnqueuedStep &enqueued) {
  int64_t step = enqueued.step;
  finishStep();
  if (isProbeStep(step))
    unitMarks.endOfStep = highWaterMark(manifest, arena);
  Clock::time_point lossRead;
  float loss = lossOf(enqueued, lossRead);
  if (tracing)
    writeStateRecord(manifest, place, arena, hostArena.data(), outputs.trace.get(),
                     /*afterStep=*/true);
  logLoss(enqueued, loss, lossRead);
  // Saves and evaluations are not part of the step's rate.
  Clock::time_point asideStart = Clock::now();
  if (isSaveStep(step))
    save();
  if (isEvalStep(step))
    evaluate(step);
  intervalStart += Clock::now() - asideStart;
}

void TrainingRun::train() {
  intervalStart = Clock::now();
  for (int64_t step = firstStep; step <= options.steps; ++step) {
    EnqueuedStep enqueued = enqueue(step);
    // The previous step's loss, now that this step keeps the device busy
    // (and before this step's errors, as if each step had been waited for).
    if (unread) {
      Clock::time_point lossRead;
      float loss = lossOf(*unread, lossRead);
      logLoss(*unread, loss, lossRead);
      unread.reset();
    }
    if (int pending = pendingCollectives())
      fatal("step " + std::to_string(step) + " returned with " + plural(pending, "collective") +
            " not waited for (every *_start needs its fsdprt_wait)");
    if (mayRunAhead(step))
      unread = enqueued;
    else
      complete(enqueued);
  }
}

void TrainingRun::finish() {
  // The held-out loss and the checkpoint of the last step, unless already
  // there.
  if (evaluating && evaluatedStep != position.step)
    evaluate(position.step);
  if (!options.saveDir.empty() && savedStep != position.step)
    save();
  std::vector<int64_t> marks = gatherToRankZero(highWaterMark(manifest, arena));
  // The planned peak of the steps that ran: a run that evaluated reached the
  // evaluation step's plan, one that trained the training step's.
  int64_t plannedPeak =
      evaluating && position.step < firstStep ? evalManifest.arenaBytes : manifest.arenaBytes;
  if (!options.exportPath.empty()) {
    downloadParamShards(manifest, arena);
    exportSafetensors(manifest, place, shards, outputs.exported.get(), options.exportDType,
                      {{"producer", "fsdp-mlir"}, {"step", std::to_string(position.step)}});
  }
  if (leader) {
    std::string stepTrace;
    if (outputs.stepTrace)
      stepTrace = timeline.chromeTrace(
          place.rank, options.steps - firstStep + 1, "cpu",
          options.steps >= unitMarks.step ? unitMarks.traceMember() : std::string());
    finishOutputs(outputs, plannedPeak, marks, stepTrace);
  }
  StepTimeline::activate(nullptr);
}

} // namespace

int runTrainer(int argc, const char *const *argv, const char *manifestText,
               TrainStepFn trainStep, const char *evalManifestText, TrainStepFn evalStep,
               const char *kernelOrigins, const char *evalKernelOrigins) {
  TrainerOptions options = parseFlags(argc, argv);
  if (std::optional<int> status = answerInfoFlag(options, manifestText))
    return *status;

  startMpi();
  // Before anything else touches the device: a CUDA trainer on a machine
  // without a GPU stops here.
  DeviceSession device;
  RunManifests manifests =
      readManifests(options, !options.evalDataPath.empty(), manifestText, kernelOrigins,
                    evalManifestText, evalStep, evalKernelOrigins);
  const Manifest &manifest = manifests.training;
  // The device was opened before the manifest was read: its products' math
  // is set now, before anything runs on it.
  setAllowTf32(manifest.allowTf32);
  setDebugSync(options.debugSync);
  RankPlace place = setUpGroups(manifest.shardRanks, manifest.tensorRanks);
  setCollectiveTimeout(options.collectiveTimeout);
  connectDevice(place);
  bool leader = place.rank == 0;
  PeakRates peak = options.peakTflops ? PeakRates{"--peak-tflops", *options.peakTflops * 1e12,
                                                  *options.peakTflops * 1e12}
                                      : devicePeak(manifest);
  Throughput throughput(manifest, std::move(peak));
  if (leader)
    printFirstLines(manifest, throughput);
  RunOutputs outputs = openOutputs(options, leader);
  keepFreedMemoryForReuse();
  TrainingRun run(options, manifests, place, throughput, std::move(outputs), trainStep, evalStep);
  run.start();
  run.train();
  run.finish();
  return 0;
}

} // namespace fsdprt
