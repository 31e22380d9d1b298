//===- TrainerTest.cpp - The step loop with an in-process model -----------===//
//
// The end-to-end tests (trainer_test.py) run a linked trainer; these call
// runTrainer directly with a step function that records what the runtime
// passes it.
//
//===----------------------------------------------------------------------===//

#include "fsdprt/fsdprt.h"
#include "support/TestManifest.h"
#include "trainer/Trainer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace fsdprt;
using json = nlohmann::json;
using testing::ExitedWithCode;
using testing::HasSubstr;

namespace {

struct StepCall {
  uintptr_t arena;
  int64_t step;
  float lr;
  int32_t firstLabel;
};

std::vector<StepCall> calls;

float recordingStep(void *arena, int64_t step, float lr) {
  int32_t label;
  std::memcpy(&label, static_cast<uint8_t *>(arena) + 448, sizeof(label));
  calls.push_back({reinterpret_cast<uintptr_t>(arena), step, lr, label});
  return 1.0f / static_cast<float>(step);
}

float nanStep(void *, int64_t step, float) { return step == 3 ? NAN : 1.0f; }

int run(std::vector<const char *> args, const std::string &manifest,
        TrainStepFn step = recordingStep) {
  args.insert(args.begin(), "trainer");
  return runTrainer(static_cast<int>(args.size()), args.data(), manifest.c_str(), step);
}

TEST(Trainer, CallsTheStepWithCountedStepsAndTheLearningRate) {
  std::string manifest = test::classifierManifest().dump();
  calls.clear();
  EXPECT_EQ(run({"--steps", "4", "--log-every", "100"}, manifest), 0);
  ASSERT_EQ(calls.size(), 4u);
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].step, static_cast<int64_t>(i + 1));
    EXPECT_EQ(calls[i].lr, 0.001f) << "the manifest's lr";
    EXPECT_EQ(calls[i].arena % 64, 0u) << "arena alignment";
    EXPECT_GE(calls[i].firstLabel, 0);
    EXPECT_LT(calls[i].firstLabel, 5);
  }
  calls.clear();
  EXPECT_EQ(run({"--steps", "2", "--lr", "0.25"}, manifest), 0);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].lr, 0.25f);
}

/// What the transient part [640, 768) of the test arena holds at step 1.
std::vector<uint8_t> transientAtStep1;

float transientStep(void *arena, int64_t step, float) {
  auto *bytes = static_cast<uint8_t *>(arena);
  if (step == 1)
    transientAtStep1.assign(bytes + 640, bytes + 768);
  // The step's temporaries: it writes up to byte 700.
  std::memset(bytes + 640, 0, 60);
  return 1.0f;
}

TEST(Trainer, MarksTheTransientPartAndMeasuresItsHighWaterMark) {
  std::string manifest = test::classifierManifest().dump();
  testing::internal::CaptureStdout();
  EXPECT_EQ(run({"--steps", "2"}, manifest, transientStep), 0);
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(transientAtStep1, std::vector<uint8_t>(128, 0xA5));
  EXPECT_THAT(out, HasSubstr("arena: planned peak 768 bytes, measured high-water mark 700 bytes "
                             "on every rank\n"));
}

/// What fsdpc's CUDA step does with device_scalars, on the CPU's arena: it
/// reads lr and step there, leaves its loss there (lr x step), and returns
/// NaN.
struct ScalarCall {
  int64_t step;
  float lr;
  float scalarLr;
  int64_t scalarStep;
};
std::vector<ScalarCall> scalarCalls;

float scalarStep(void *arena, int64_t step, float lr) {
  auto *scalars = static_cast<uint8_t *>(arena) + 464;
  ScalarCall call{step, lr, 0.0f, 0};
  std::memcpy(&call.scalarLr, scalars, sizeof(float));
  std::memcpy(&call.scalarStep, scalars + 8, sizeof(int64_t));
  scalarCalls.push_back(call);
  float loss = call.scalarLr * static_cast<float>(call.scalarStep);
  std::memcpy(scalars + 4, &loss, sizeof(loss));
  return NAN;
}

// The CPU backend honours device_scalars too (the arena is host memory), and
// accepts --no-cuda-graph, which changes nothing there.
TEST(Trainer, DeviceScalarsOnTheCpu) {
  json manifest = test::classifierManifest();
  manifest["device_scalars"] = {{"offset", 464}};
  for (bool graphless : {false, true}) {
    scalarCalls.clear();
    testing::internal::CaptureStdout();
    std::vector<const char *> args = {"--steps", "3",   "--log-every",    "1",
                                      "--lr",    "0.5", "--warmup-steps", "2"};
    if (graphless)
      args.push_back("--no-cuda-graph");
    EXPECT_EQ(run(args, manifest.dump(), scalarStep), 0);
    std::string out = testing::internal::GetCapturedStdout();
    ASSERT_EQ(scalarCalls.size(), 3u);
    for (const ScalarCall &call : scalarCalls) {
      EXPECT_EQ(call.scalarLr, call.lr);
      EXPECT_EQ(call.scalarStep, call.step);
    }
    // lr x step: 0.25 x 1, 0.5 x 2, 0.5 x 3.
    EXPECT_THAT(out, HasSubstr("step 1 | loss 0.250000 | lr 2.500e-01"));
    EXPECT_THAT(out, HasSubstr("step 2 | loss 1.000000 | lr 5.000e-01"));
    EXPECT_THAT(out, HasSubstr("step 3 | loss 1.500000 | lr 5.000e-01"));
  }
}

float silentScalarStep(void *, int64_t, float) { return 1.0f; }

// A step that leaves no loss there, whatever it returns, has a NaN loss.
TEST(TrainerError, DeviceScalarsWithoutALoss) {
  json manifest = test::classifierManifest();
  manifest["device_scalars"] = {{"offset", 464}};
  EXPECT_EXIT(run({"--steps", "2"}, manifest.dump(), silentScalarStep), ExitedWithCode(1),
              HasSubstr("trainer: error: step 1: the loss is NaN (training diverged)"));
}

TEST(Trainer, ZeroStepsNeverCallsTheStep) {
  calls.clear();
  EXPECT_EQ(run({"--steps", "0"}, test::classifierManifest().dump()), 0);
  EXPECT_TRUE(calls.empty());
}

TEST(Trainer, HelpNeedsNoValidManifest) { EXPECT_EQ(run({"--help"}, "not json"), 0); }

TEST(TrainerError, InvalidManifest) {
  EXPECT_EXIT(run({}, "{\"version\": 2}"), ExitedWithCode(1),
              HasSubstr("trainer: error: manifest: missing field 'arena_bytes'"));
}

TEST(TrainerError, WrongNumberOfRanks) {
  EXPECT_EXIT(run({}, test::shardedClassifierManifest().dump()), ExitedWithCode(1),
              HasSubstr("trainer: error: the model was compiled for grid [2] (2 ranks), but it was "
                        "started as 1 rank (without mpirun or with mpirun -np 1): run it with "
                        "mpirun -np 2, or recompile with fsdpc --grid=1"));
}

float pendingStep(void *arena, int64_t, float) {
  fsdprt_all_reduce_start(static_cast<float *>(arena), 1, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_SUM,
                          FSDPRT_GROUP_WORLD);
  return 1.0f;
}

TEST(TrainerError, StepLeavesACollectivePending) {
  EXPECT_EXIT(run({"--steps", "3"}, test::classifierManifest().dump(), pendingStep),
              ExitedWithCode(1),
              HasSubstr("trainer: error: step 1 returned with 1 collective not waited for (every "
                        "*_start needs its fsdprt_wait)"));
}

TEST(TrainerError, NanLossNamesTheStep) {
  EXPECT_EXIT(run({"--steps", "10"}, test::classifierManifest().dump(), nanStep),
              ExitedWithCode(1),
              HasSubstr("trainer: error: step 3: the loss is NaN (training diverged)"));
}

TEST(TrainerError, UnwritableLogJson) {
  EXPECT_EXIT(run({"--log-json", "/nonexistent-dir/log.jsonl"}, test::classifierManifest().dump()),
              ExitedWithCode(1),
              HasSubstr("trainer: error: --log-json '/nonexistent-dir/log.jsonl': cannot open: No "
                        "such file or directory"));
}

TEST(TrainerError, UnwritableExport) {
  EXPECT_EXIT(
      run({"--export", "/nonexistent-dir/p.safetensors"}, test::classifierManifest().dump()),
      ExitedWithCode(1),
      HasSubstr("trainer: error: --export '/nonexistent-dir/p.safetensors': cannot open"));
}

struct FlagCombinationCase {
  const char *name;
  std::vector<const char *> args;
  const char *message;
};

void PrintTo(const FlagCombinationCase &c, std::ostream *os) { *os << c.name; }

class FlagCombinationTest : public testing::TestWithParam<FlagCombinationCase> {};

TEST_P(FlagCombinationTest, IsRefused) {
  EXPECT_EXIT(run(GetParam().args, test::classifierManifest().dump()), ExitedWithCode(1),
              HasSubstr(std::string("trainer: error: ") + GetParam().message));
}

const FlagCombinationCase kFlagCombinations[] = {
    {"SaveEveryWithoutSave", {"--save-every", "2"}, "--save-every needs --save DIR"},
    {"KeepWithoutSave", {"--keep", "2"}, "--keep needs --save DIR"},
    {"InitFromAndResume", {"--init-from", "a.safetensors", "--resume", "ckpt"},
     "--init-from and --resume exclude each other"},
    {"MinLrWithoutDecay", {"--min-lr", "0.001"}, "--min-lr needs --lr-decay cosine or linear"},
    {"MinLrAbovePeak", {"--lr", "0.01", "--lr-decay", "cosine", "--min-lr", "0.1"},
     "--min-lr must not exceed the peak learning rate"},
    {"DecayEndsInWarmup", {"--lr-decay", "linear", "--warmup-steps", "10", "--decay-steps", "10"},
     "--decay-steps (10) must be greater than --warmup-steps (10)"},
    {"DecayOverNoSteps", {"--steps", "0", "--lr-decay", "cosine"},
     "--decay-steps (0) must be greater than --warmup-steps (0)"},
    {"ResumeFromNothing", {"--resume", "/nonexistent-dir"},
     "--resume '/nonexistent-dir': no such directory"},
    {"EvalEveryWithoutData", {"--eval-every", "5"}, "--eval-every needs --eval-data FILE"},
    {"EvalBatchesWithoutData", {"--eval-batches", "5"}, "--eval-batches needs --eval-data FILE"},
    {"TokenDTypeWithoutData", {"--token-dtype", "uint32"},
     "--token-dtype needs --data FILE or --eval-data FILE"},
    // The test's trainer has a training step only, like a hand-written object.
    {"EvalWithoutEvalStep", {"--eval-data", "val.bin"},
     "--eval-data: this trainer has no evaluation step"},
};

INSTANTIATE_TEST_SUITE_P(TrainerError, FlagCombinationTest, testing::ValuesIn(kFlagCombinations),
                         [](const testing::TestParamInfo<FlagCombinationCase> &info) {
                           return std::string(info.param.name);
                         });

TEST(TrainerError, SyntheticDataImpossible) {
  json manifest = test::classifierManifest();
  manifest["inputs"][0]["role"] = "regression_target";
  EXPECT_EXIT(run({}, manifest.dump()), ExitedWithCode(1),
              HasSubstr("trainer: error: synthetic data: cannot produce input 0 "
                        "(regression_target [4, 3]): the teacher needs a features input"));
}

} // namespace
