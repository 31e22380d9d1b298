//===- CudaTrainerTest.cpp - The trainer's loop on the CUDA backend -------===//
//
// runTrainer on the fake CUDA runtime (FakeCuda.h), with step functions that
// look at what the runtime did before them or that enqueue their work on
// the fake device the way fsdpc's step does: the manifest's allow_tf32 sets
// the fp32 products' math mode; the start-up's asynchronous uploads and
// marker fill are waited for once before the first step (its all-gathers
// read the shards on another stream), and from then on the host waits for
// no stream and not for the device until the run's end (or a save or an
// evaluation): each step's loss is read once the next step is enqueued.
// With device_scalars, the first step runs as called, the second is captured
// as a CUDA graph, and every later one is a replay of it, which must see its
// own step's inputs and learning rate.
//
//===----------------------------------------------------------------------===//

#include "abi/Manifest.h"
#include "cuda/FakeCuda.h"
#include "fsdprt/fsdprt.h"
#include "support/DataFileWriter.h"
#include "support/TempPath.h"
#include "support/TestManifest.h"
#include "trainer/SyntheticData.h"
#include "trainer/Trainer.h"

#include <cublas_v2.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace fsdprt;
using json = nlohmann::json;
using testing::ElementsAreArray;
using testing::ExitedWithCode;
using testing::HasSubstr;
using testing::IsEmpty;
using testing::SizeIs;

namespace {

/// The fake's log when each step began.
std::vector<std::vector<std::string>> logAtStep;
/// The classes input (arena offset 448) each step saw.
std::vector<int32_t> firstClass;

float loggingStep(void *arena, int64_t, float) {
  logAtStep.push_back(fake_cuda::calls());
  int32_t label;
  std::memcpy(&label, static_cast<uint8_t *>(arena) + 448, sizeof(label));
  firstClass.push_back(label);
  return 1.0f;
}

int run(const json &manifest, const char *steps) {
  logAtStep.clear();
  firstClass.clear();
  fake_cuda::reset();
  std::string text = manifest.dump();
  const char *args[] = {"trainer", "--steps", steps};
  testing::internal::CaptureStdout();
  int status = runTrainer(3, args, text.c_str(), loggingStep);
  testing::internal::GetCapturedStdout();
  return status;
}

/// The position of the first call in `log` at or after `from` that starts
/// with `prefix`, or log.size().
size_t find(const std::vector<std::string> &log, const std::string &prefix, size_t from = 0) {
  for (size_t i = from; i < log.size(); ++i)
    if (log[i].compare(0, prefix.size(), prefix) == 0)
      return i;
  return log.size();
}

/// The position of the last call in `log` that starts with `prefix`, or
/// log.size().
size_t findLast(const std::vector<std::string> &log, const std::string &prefix) {
  size_t last = log.size();
  for (size_t i = 0; i < log.size(); ++i)
    if (log[i].compare(0, prefix.size(), prefix) == 0)
      last = i;
  return last;
}

std::vector<std::string> mathModes(const std::vector<std::string> &log) {
  std::vector<std::string> modes;
  for (const std::string &call : log)
    if (call.compare(0, 17, "cublasSetMathMode") == 0)
      modes.push_back(call.substr(call.rfind(", ") + 2));
  return modes;
}

TEST(CudaTrainer, AllowTf32SetsTheMathModeBeforeTheFirstStep) {
  json manifest = test::classifierManifest();
  ASSERT_EQ(run(manifest, "1"), 0);
  ASSERT_EQ(logAtStep.size(), 1u);
  std::string exact =
      std::to_string(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) + ")";
  EXPECT_THAT(mathModes(logAtStep[0]), testing::Each(exact)) << "absent: exact fp32";
  manifest["allow_tf32"] = true;
  ASSERT_EQ(run(manifest, "1"), 0);
  ASSERT_EQ(logAtStep.size(), 1u);
  std::vector<std::string> modes = mathModes(logAtStep[0]);
  ASSERT_FALSE(modes.empty());
  EXPECT_EQ(modes.back(), std::to_string(CUBLAS_TF32_TENSOR_OP_MATH) + ")");
}

/// Whether `call` waits for a stream or the device.
bool waitsForTheDevice(const std::string &call) {
  return call.rfind("cudaDeviceSynchronize", 0) == 0 || call.rfind("cudaStreamSynchronize", 0) == 0;
}

// The parameter shard [0, 128), then the marker over [640, 768): then one
// wait for the device, before the first step's inputs and the step. After
// it, nothing waits for the device until the last step is enqueued.
TEST(CudaTrainer, StartUpUploadsAreWaitedForOnceBeforeTheFirstStep) {
  ASSERT_EQ(run(test::classifierManifest(), "3"), 0);
  ASSERT_EQ(logAtStep.size(), 3u);
  const std::vector<std::string> &start = logAtStep[0];
  size_t shard = find(start, "cudaMemcpyAsync(device2+0 <- pinned");
  size_t marker = find(start, "cudaMemsetAsync(device2+640, 165, 128, ");
  ASSERT_LT(shard, start.size());
  ASSERT_LT(marker, start.size());
  EXPECT_LT(shard, marker);
  size_t wait = find(start, "cudaDeviceSynchronize()", marker);
  size_t inputs = find(start, "cudaMemcpyAsync(device2+384 <- pinned");
  ASSERT_LT(inputs, start.size()) << "the features";
  EXPECT_LT(wait, inputs) << "the start-up is done before the step's inputs and the step";
  // The steps' inputs, the steps and their losses: no wait for a stream or
  // the device in between (only, when a staging buffer comes round again,
  // for its last copy, long done).
  const std::vector<std::string> &third = logAtStep[2];
  EXPECT_TRUE(std::none_of(third.begin() + static_cast<ptrdiff_t>(wait) + 1, third.end(),
                           waitsForTheDevice));
  EXPECT_LT(find(third, "cudaMemcpyAsync(device2+448 <- pinned", start.size()), third.size());
  // The step sees its classes (in [0, 5)), copied from the staging buffers.
  for (int32_t label : firstClass) {
    EXPECT_GE(label, 0);
    EXPECT_LT(label, 5);
  }
  EXPECT_THAT(fake_cuda::callsTo("race"), IsEmpty());
}

// --- Steps that read lr and step from the arena (device_scalars) ---------

/// The classifier's 16 free bytes between the classes and exp_avg_sq.
constexpr int64_t kScalars = 464;
constexpr int64_t kLoss = kScalars + 4;
constexpr int64_t kFeatures = 384;

json scalarsManifest() {
  json manifest = test::classifierManifest();
  manifest["device_scalars"] = {{"offset", kScalars}};
  return manifest;
}

/// What each call of scalarStep saw: its arguments, the scalars the runtime
/// uploaded, and the loss its work will leave.
struct SeenStep {
  int64_t step;
  float lr;
  float scalarLr;
  int64_t scalarStep;
  float loss;
};
std::vector<SeenStep> seen;

/// fsdpc's CUDA step, reduced: its work is enqueued on the (fake) device, on
/// two streams ordered by an event and a collective's wait, and reads lr and
/// the inputs from the arena. The loss it leaves is the first feature times
/// the learning rate, a product on the compute stream after an all-gather
/// of the parameter shard on the all-gather stream, so that a replay that
/// saw another step's inputs or rate would leave another loss. Like fsdpc's
/// step, it returns NaN.
float scalarStep(void *arena, int64_t step, float lr) {
  auto *base = static_cast<uint8_t *>(arena);
  // Device memory is host memory here, and the uploads before the step are
  // done when they are enqueued: the host can see what the product will.
  SeenStep call{step, lr, 0.0f, 0, 0.0f};
  float feature;
  std::memcpy(&feature, base + kFeatures, sizeof(feature));
  std::memcpy(&call.scalarLr, base + kScalars, sizeof(call.scalarLr));
  std::memcpy(&call.scalarStep, base + kScalars + 8, sizeof(call.scalarStep));
  call.loss = feature * call.scalarLr;
  seen.push_back(call);
  fsdprt_event_record(0, FSDPRT_STREAM_COMPUTE);
  fsdprt_stream_wait_event(FSDPRT_STREAM_ALL_GATHER, 0);
  fsdprt_wait(fsdprt_all_gather_start(base, base + 640, 128, FSDPRT_GROUP_SHARD));
  fsdprt_sgemm(0, 0, 1, 1, 1, 1.0f, reinterpret_cast<const float *>(base + kFeatures), 1,
               reinterpret_cast<const float *>(base + kScalars), 1, 0.0f,
               reinterpret_cast<float *>(base + kLoss), 1);
  return NAN;
}

/// The same step with offload's type (a host arena).
float offloadedScalarStep(void *arena, void *, int64_t step, float lr) {
  return scalarStep(arena, step, lr);
}

/// The evaluation step: its loss is the first feature of the batch, copied on
/// the compute stream. It returns NaN too.
std::vector<float> evalSeen;
float scalarEvalStep(void *arena, int64_t, float) {
  auto *base = static_cast<uint8_t *>(arena);
  float feature;
  std::memcpy(&feature, base + kFeatures, sizeof(feature));
  evalSeen.push_back(feature);
  cudaMemcpyAsync(base + kLoss, base + kFeatures, sizeof(float), cudaMemcpyDeviceToDevice,
                  static_cast<cudaStream_t>(fsdprt_stream(FSDPRT_STREAM_COMPUTE)));
  return NAN;
}

/// What a run logged (--log-json): each step's loss, each evaluation's, and
/// the order of its lines on stdout and in the log (`step 3`, `eval 4`).
struct Logged {
  std::vector<float> losses;
  std::vector<double> evalLosses;
  std::vector<std::string> printed, records;
};

/// Runs `manifest` with `scalarStep` (or `step`) and `flags` for 5 steps
/// whose learning rate rises every step (warmup), and returns what it
/// logged.
Logged runScalars(const json &manifest, std::vector<const char *> flags,
                  TrainStepFn step = scalarStep, const char *evalManifest = nullptr,
                  TrainStepFn evalStep = nullptr) {
  seen.clear();
  evalSeen.clear();
  test::TempPath log(".jsonl");
  std::vector<const char *> args = {"trainer", "--steps", "5", "--warmup-steps", "5"};
  args.insert(args.end(), {"--log-every", "1", "--log-json", log.c_str()});
  args.insert(args.end(), flags.begin(), flags.end());
  std::string text = manifest.dump();
  testing::internal::CaptureStdout();
  int status = runTrainer(static_cast<int>(args.size()), args.data(), text.c_str(), step,
                          evalManifest, evalStep);
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(status, 0);
  Logged logged;
  // Each line up to its second field: what a line is, not its timing.
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    logged.printed.push_back(line.substr(0, line.find(" | ", line.find(" | ") + 1)));
  std::ifstream in(log.c_str());
  for (std::string line; std::getline(in, line);) {
    json record = json::parse(line);
    if (record.contains("loss")) {
      logged.losses.push_back(static_cast<float>(record["loss"].get<double>()));
      logged.records.push_back("step " + record["step"].dump());
    }
    if (record.contains("eval_loss")) {
      logged.evalLosses.push_back(record["eval_loss"].get<double>());
      logged.records.push_back("eval " + record["eval_step"].dump());
    }
  }
  return logged;
}

/// What every run's step `step` must leave: the first feature of the step's
/// synthetic batch (seed 0), from the data's own generator, times the step's
/// learning rate (warmup over 5 steps to the manifest's 0.001).
float expectedLoss(int64_t step) {
  Manifest manifest = parseManifest(scalarsManifest().dump());
  SyntheticData data(manifest, 0);
  std::vector<uint8_t> batch(static_cast<size_t>(manifest.arenaBytes));
  data.writeBatch(step, batch.data());
  float feature;
  std::memcpy(&feature, batch.data() + kFeatures, sizeof(feature));
  return feature * (0.001f * static_cast<float>(step) / 5.0f);
}

std::vector<float> expectedLosses() {
  std::vector<float> losses;
  for (int64_t step = 1; step <= 5; ++step)
    losses.push_back(expectedLoss(step));
  return losses;
}

/// The losses scalarStep's calls will leave.
std::vector<float> seenLosses() {
  std::vector<float> losses;
  for (const SeenStep &call : seen)
    losses.push_back(call.loss);
  return losses;
}

class CudaGraphTrainer : public testing::Test {
protected:
  void SetUp() override { fake_cuda::reset(); }
  void TearDown() override {
    EXPECT_THAT(fake_cuda::callsTo("capture:"), IsEmpty());
    EXPECT_THAT(fake_cuda::callsTo("race:"), IsEmpty());
  }
};

// Called for every step, the step reads the rate and step the runtime
// uploaded, and leaves a different loss every step: what a replay must
// reproduce.
TEST_F(CudaGraphTrainer, WithoutAGraphEveryStepIsCalled) {
  Logged logged = runScalars(scalarsManifest(), {"--no-cuda-graph"});
  ASSERT_THAT(seen, SizeIs(5));
  for (const SeenStep &call : seen) {
    EXPECT_EQ(call.scalarLr, call.lr) << "step " << call.step;
    EXPECT_EQ(call.scalarStep, call.step);
    EXPECT_EQ(call.lr, 0.001f * static_cast<float>(call.step) / 5.0f) << "warmup";
  }
  EXPECT_THAT(seenLosses(), ElementsAreArray(expectedLosses()));
  EXPECT_THAT(logged.losses, ElementsAreArray(expectedLosses()));
  std::vector<float> distinct = logged.losses;
  std::sort(distinct.begin(), distinct.end());
  EXPECT_EQ(std::unique(distinct.begin(), distinct.end()), distinct.end());
  EXPECT_THAT(fake_cuda::callsTo("cudaStreamBeginCapture"), IsEmpty());
  EXPECT_THAT(fake_cuda::callsTo("cudaGraphLaunch"), IsEmpty());
}

// Step 1 as called, step 2 captured, steps 2 to 5 launches of the graph:
// the losses are the called run's, so each replay saw its own inputs and
// rate.
TEST_F(CudaGraphTrainer, TheSecondStepIsCapturedAndReplayed) {
  std::vector<float> expected = runScalars(scalarsManifest(), {"--no-cuda-graph"}).losses;
  fake_cuda::reset();
  Logged logged = runScalars(scalarsManifest(), {});
  ASSERT_THAT(seen, SizeIs(2)) << "the step function runs for step 1 and for the capture";
  EXPECT_EQ(seen[1].step, 2);
  EXPECT_THAT(logged.losses, ElementsAreArray(expected));
  EXPECT_THAT(logged.losses, ElementsAreArray(expectedLosses()));
  std::string compute = fake_cuda::results("cudaStreamCreateWithPriority").at(0);
  EXPECT_THAT(fake_cuda::callsTo("cudaStreamBeginCapture"),
              ElementsAreArray({"cudaStreamBeginCapture(" + compute + ", thread-local)"}));
  std::vector<std::string> graphs = fake_cuda::results("cudaStreamEndCapture");
  std::vector<std::string> execs = fake_cuda::results("cudaGraphInstantiate");
  ASSERT_THAT(graphs, SizeIs(1));
  ASSERT_THAT(execs, SizeIs(1));
  EXPECT_THAT(fake_cuda::callsTo("cudaGraphLaunch"),
              testing::Each("cudaGraphLaunch(" + execs[0] + ", " + compute + ")"));
  EXPECT_THAT(fake_cuda::callsTo("cudaGraphLaunch"), SizeIs(4));
  // Released with the device.
  EXPECT_THAT(fake_cuda::callsTo("cudaGraphExecDestroy"),
              ElementsAreArray({"cudaGraphExecDestroy(" + execs[0] + ")"}));
  EXPECT_THAT(fake_cuda::callsTo("cudaGraphDestroy"),
              ElementsAreArray({"cudaGraphDestroy(" + graphs[0] + ")"}));
}

// From the start-up's wait to the last step's launch, the host waits for no
// stream and not for the device; each step's loss is read (its copy's event)
// only once the next step is enqueued (its loss copy follows its launch), the
// last one's after the run's final wait.
TEST_F(CudaGraphTrainer, EachLossIsReadOnceTheNextStepIsEnqueued) {
  runScalars(scalarsManifest(), {});
  const std::vector<std::string> &log = fake_cuda::calls();
  size_t marker = find(log, "cudaMemsetAsync(device2+640, 165, 128, ");
  size_t startUp = find(log, "cudaDeviceSynchronize()", marker);
  size_t lastLaunch = findLast(log, "cudaGraphLaunch");
  ASSERT_LT(startUp, log.size());
  ASSERT_LT(lastLaunch, log.size());
  EXPECT_TRUE(std::none_of(log.begin() + static_cast<ptrdiff_t>(startUp) + 1,
                           log.begin() + static_cast<ptrdiff_t>(lastLaunch), waitsForTheDevice));
  // Each step's loss copy, its event, and the wait for that event.
  std::vector<size_t> copies, reads;
  for (size_t i = 0; i < log.size(); ++i) {
    if (log[i].find(" <- device2+" + std::to_string(kLoss) + ", 4, device to host") ==
        std::string::npos)
      continue;
    copies.push_back(i);
    ASSERT_LT(i + 1, log.size());
    // Its event: created there at its first use, then recorded.
    const std::string &next = log[i + 1];
    std::string event = next.rfind("cudaEventRecord(", 0) == 0
                            ? next.substr(16, next.find(',') - 16)
                            : next.substr(next.rfind("-> ") + 3);
    reads.push_back(find(log, "cudaEventSynchronize(" + event + ")", i));
  }
  ASSERT_THAT(copies, SizeIs(5));
  for (size_t step = 0; step + 1 < copies.size(); ++step) {
    EXPECT_LT(copies[step + 1], reads[step]) << "step " << step + 1;
    ASSERT_LT(reads[step], log.size());
  }
  size_t finalWait = find(log, "cudaDeviceSynchronize()", lastLaunch);
  EXPECT_LT(lastLaunch, copies.back());
  EXPECT_LT(finalWait, reads.back());
  EXPECT_LT(reads.back(), log.size());
}

// Evaluations run the evaluation step as called, between the replays, after
// waiting for the step they follow: the training losses stay the called
// run's, and the held-out loss is the evaluation step's.
TEST_F(CudaGraphTrainer, EvaluationsRunAsCalledBetweenReplays) {
  test::TempPath data;
  test::Bytes bytes;
  bytes.text("FSDPDATA").put<uint32_t>(1).put<uint32_t>(2).tensor(0, {3}).tensor(1, {});
  bytes.put<uint64_t>(8);
  for (int sample = 0; sample < 8; ++sample)
    bytes.put<float>(0.5f * static_cast<float>(sample) - 0.75f)
        .put<float>(0.0f)
        .put<float>(1.0f)
        .put<int32_t>(sample % 5);
  bytes.writeTo(data);
  std::string evalManifest = scalarsManifest().dump();
  std::vector<float> expected = runScalars(scalarsManifest(), {"--no-cuda-graph"}).losses;
  fake_cuda::reset();
  Logged logged = runScalars(scalarsManifest(), {"--eval-data", data.c_str(), "--eval-every", "2"},
                             scalarStep, evalManifest.c_str(), scalarEvalStep);
  EXPECT_THAT(seen, SizeIs(2));
  EXPECT_THAT(logged.losses, ElementsAreArray(expected));
  EXPECT_THAT(logged.losses, ElementsAreArray(expectedLosses()));
  // After steps 2, 4 and 5, each the mean of the first feature of batch 1
  // (samples 0 to 3) and batch 2 (samples 4 to 7).
  ASSERT_THAT(evalSeen, SizeIs(6));
  EXPECT_EQ(evalSeen[0], -0.75f);
  EXPECT_EQ(evalSeen[1], 1.25f);
  EXPECT_THAT(logged.evalLosses, ElementsAreArray({0.25, 0.25, 0.25}));
  // Each step's lines before the evaluation that follows it, as when every
  // step was waited for.
  EXPECT_THAT(logged.records, ElementsAreArray({"step 1", "step 2", "eval 2", "step 3", "step 4",
                                                "eval 4", "step 5", "eval 5"}));
  std::vector<std::string> printed;
  for (int64_t step = 1; step <= 5; ++step) {
    char line[64];
    std::snprintf(line, sizeof(line), "step %d | loss %.6f", static_cast<int>(step),
                  static_cast<double>(expectedLoss(step)));
    printed.push_back(line);
    if (step % 2 == 0 || step == 5)
      printed.push_back("eval step " + std::to_string(step) + " | held-out loss 0.250000");
  }
  printed.push_back("arena: planned peak 768 bytes, measured high-water mark 768 bytes on every "
                    "rank");
  EXPECT_THAT(logged.printed, ElementsAreArray(printed));
  EXPECT_THAT(fake_cuda::callsTo("cudaGraphLaunch"), SizeIs(4));
}

// Offload's step runs host code in its middle, and a step without
// device_scalars takes its rate and step as arguments: neither is captured.
TEST_F(CudaGraphTrainer, NoGraphWithOffloadOrWithoutDeviceScalars) {
  json offloaded = scalarsManifest();
  offloaded["host_arena_bytes"] = 64;
  std::vector<float> expected = runScalars(scalarsManifest(), {"--no-cuda-graph"}).losses;
  fake_cuda::reset();
  // The runtime calls it through the offloaded type (callStep): the cast
  // goes through void (*)(), C++'s generic function pointer.
  Logged logged = runScalars(
      offloaded, {},
      reinterpret_cast<TrainStepFn>(reinterpret_cast<void (*)()>(offloadedScalarStep)));
  EXPECT_THAT(seen, SizeIs(5));
  EXPECT_THAT(logged.losses, ElementsAreArray(expected));
  EXPECT_THAT(logged.losses, ElementsAreArray(expectedLosses()));
  EXPECT_THAT(fake_cuda::callsTo("cudaStreamBeginCapture"), IsEmpty());
  EXPECT_THAT(fake_cuda::callsTo("cudaGraphLaunch"), IsEmpty());

  fake_cuda::reset();
  ASSERT_EQ(run(test::classifierManifest(), "4"), 0);
  EXPECT_THAT(logAtStep, SizeIs(4));
  EXPECT_THAT(fake_cuda::callsTo("cudaStreamBeginCapture"), IsEmpty());
  EXPECT_THAT(fake_cuda::callsTo("cudaGraphLaunch"), IsEmpty());
}

TEST(CudaGraphTrainerError, AFailedCaptureStopsTheRun) {
  std::string expected = std::string("trainer: error: capturing the training step as a CUDA "
                                     "graph: cudaStreamEndCapture: ") +
                         cudaGetErrorString(cudaErrorStreamCaptureInvalidated) +
                         " (--no-cuda-graph runs every step without a graph)\n";
  EXPECT_EXIT(
      {
        fake_cuda::reset();
        fake_cuda::failNext("cudaStreamEndCapture", cudaErrorStreamCaptureInvalidated);
        runScalars(scalarsManifest(), {});
      },
      ExitedWithCode(1), HasSubstr(expected));
  EXPECT_EXIT(
      {
        fake_cuda::reset();
        fake_cuda::failNext("cudaGraphInstantiate", cudaErrorInvalidValue);
        runScalars(scalarsManifest(), {});
      },
      ExitedWithCode(1),
      HasSubstr("capturing the training step as a CUDA graph: cudaGraphInstantiate: "));
}

} // namespace
