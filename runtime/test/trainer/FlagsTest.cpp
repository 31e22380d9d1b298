//===- FlagsTest.cpp - The trainer's command line -------------------------===//

#include "trainer/Flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include <vector>

using namespace fsdprt;
using testing::ExitedWithCode;
using testing::HasSubstr;

namespace {

TrainerOptions parse(std::vector<const char *> args) {
  args.insert(args.begin(), "trainer");
  return parseFlags(static_cast<int>(args.size()), args.data());
}

TEST(Flags, Defaults) {
  TrainerOptions options = parse({});
  EXPECT_EQ(options.steps, 100);
  EXPECT_FALSE(options.seed.has_value());
  EXPECT_EQ(options.dataPath, "");
  EXPECT_FALSE(options.lr.has_value());
  EXPECT_EQ(options.logEvery, 10);
  EXPECT_EQ(options.logJsonPath, "");
  EXPECT_EQ(options.exportPath, "");
  EXPECT_EQ(options.exportDType, DType::F32);
  EXPECT_EQ(options.initFromPath, "");
  EXPECT_EQ(options.saveDir, "");
  EXPECT_EQ(options.saveEvery, 0);
  EXPECT_EQ(options.keep, 0);
  EXPECT_EQ(options.resumeDir, "");
  EXPECT_FALSE(options.schedule.any());
  EXPECT_EQ(options.evalDataPath, "");
  EXPECT_EQ(options.evalEvery, 0);
  EXPECT_EQ(options.evalBatches, 0);
  EXPECT_FALSE(options.tokenDType.has_value());
  EXPECT_EQ(options.traceStatePath, "");
  EXPECT_FALSE(options.noCudaGraph);
  EXPECT_EQ(options.collectiveTimeout, std::chrono::minutes(10));
  EXPECT_FALSE(options.debugSync);
  EXPECT_FALSE(options.printManifest);
  EXPECT_FALSE(options.version);
  EXPECT_FALSE(options.help);
}

TEST(Flags, EveryFlag) {
  TrainerOptions options = parse({"--steps",
                                  "7",
                                  "--seed",
                                  "18446744073709551615",
                                  "--data",
                                  "train.bin",
                                  "--lr",
                                  "3e-4",
                                  "--log-every",
                                  "2",
                                  "--log-json",
                                  "log.jsonl",
                                  "--export",
                                  "p.safetensors",
                                  "--export-dtype",
                                  "bf16",
                                  "--init-from",
                                  "i.safetensors",
                                  "--save",
                                  "ckpt",
                                  "--save-every",
                                  "5",
                                  "--keep",
                                  "2",
                                  "--resume",
                                  "old",
                                  "--warmup-steps",
                                  "10",
                                  "--lr-decay",
                                  "cosine",
                                  "--decay-steps",
                                  "90",
                                  "--min-lr",
                                  "3e-5",
                                  "--eval-data",
                                  "val.bin",
                                  "--eval-every",
                                  "50",
                                  "--eval-batches",
                                  "4",
                                  "--token-dtype",
                                  "uint32",
                                  "--trace-state",
                                  "t.bin",
                                  "--no-cuda-graph",
                                  "--collective-timeout",
                                  "2.5",
                                  "--debug-sync",
                                  "--peak-tflops",
                                  "989.4",
                                  "--print-manifest",
                                  "--version"});
  EXPECT_EQ(options.steps, 7);
  EXPECT_EQ(options.seed, 18446744073709551615ULL);
  EXPECT_EQ(options.dataPath, "train.bin");
  EXPECT_EQ(options.lr, 3e-4f);
  EXPECT_EQ(options.logEvery, 2);
  EXPECT_EQ(options.logJsonPath, "log.jsonl");
  EXPECT_EQ(options.exportPath, "p.safetensors");
  EXPECT_EQ(options.exportDType, DType::BF16);
  EXPECT_EQ(options.initFromPath, "i.safetensors");
  EXPECT_EQ(options.saveDir, "ckpt");
  EXPECT_EQ(options.saveEvery, 5);
  EXPECT_EQ(options.keep, 2);
  EXPECT_EQ(options.resumeDir, "old");
  EXPECT_EQ(options.schedule.warmupSteps, 10);
  EXPECT_EQ(options.schedule.decay, LrDecay::Cosine);
  EXPECT_EQ(options.schedule.decaySteps, 90);
  EXPECT_EQ(options.schedule.floor, 3e-5);
  EXPECT_EQ(options.evalDataPath, "val.bin");
  EXPECT_EQ(options.evalEvery, 50);
  EXPECT_EQ(options.evalBatches, 4);
  EXPECT_EQ(options.tokenDType, TokenDType::U32);
  EXPECT_EQ(options.traceStatePath, "t.bin");
  EXPECT_TRUE(options.noCudaGraph);
  EXPECT_EQ(options.collectiveTimeout, std::chrono::milliseconds(2500));
  EXPECT_TRUE(options.debugSync);
  EXPECT_EQ(options.peakTflops, 989.4);
  EXPECT_TRUE(options.printManifest);
  EXPECT_TRUE(options.version);
}

TEST(Flags, ValueAfterEquals) {
  TrainerOptions options = parse({"--steps=0", "--lr=0.5", "--data=a=b.bin"});
  EXPECT_EQ(options.steps, 0);
  EXPECT_EQ(options.lr, 0.5f);
  EXPECT_EQ(options.dataPath, "a=b.bin");
}

TEST(Flags, LastValueWins) { EXPECT_EQ(parse({"--steps", "3", "--steps", "4"}).steps, 4); }

TEST(Flags, HelpStopsParsing) {
  TrainerOptions options = parse({"--steps", "3", "--help", "--bogus"});
  EXPECT_TRUE(options.help);
  EXPECT_EQ(options.steps, 3);
}

TEST(Flags, UsageNamesEveryFlag) {
  std::string usage = usageText();
  for (const char *flag : {"--steps N", "--seed S", "--data FILE", "--lr X", "--log-every K",
                           "--log-json FILE", "--export FILE", "--export-dtype f32|bf16",
                           "--init-from FILE", "--save DIR", "--save-every K", "--keep N",
                           "--resume DIR", "--warmup-steps N", "--lr-decay none|cosine|linear",
                           "--decay-steps N", "--min-lr X", "--trace-state FILE",
                           "--eval-data FILE", "--eval-every K", "--eval-batches N",
                           "--token-dtype T", "--no-cuda-graph",
                           "--print-manifest", "--version", "--help"})
    EXPECT_THAT(usage, HasSubstr(flag));
}

struct FlagErrorCase {
  const char *name;
  std::vector<const char *> args;
  const char *message;
};

void PrintTo(const FlagErrorCase &c, std::ostream *os) { *os << c.name; }

class FlagErrorTest : public testing::TestWithParam<FlagErrorCase> {};

TEST_P(FlagErrorTest, NamesTheFlag) {
  EXPECT_EXIT(parse(GetParam().args), ExitedWithCode(1),
              HasSubstr(std::string("trainer: error: ") + GetParam().message));
}

const FlagErrorCase kFlagErrors[] = {
    {"UnknownFlag", {"--bogus"}, "unknown flag '--bogus' (see --help)"},
    {"UnknownFlagWithValue", {"--bogus=3"}, "unknown flag '--bogus'"},
    {"SingleDash", {"-h"}, "unknown flag '-h'"},
    {"Positional", {"train.bin"}, "unexpected argument 'train.bin'"},
    {"DoubleDashAlone", {"--"}, "unexpected argument '--'"},
    {"MissingValue", {"--steps"}, "--steps needs a value"},
    {"StepsNotANumber", {"--steps", "ten"}, "--steps: 'ten' is not a non-negative integer"},
    {"NegativeSteps", {"--steps", "-1"}, "--steps: '-1' is not a non-negative integer"},
    {"StepsWithSign", {"--steps", "+5"}, "--steps: '+5' is not a non-negative integer"},
    {"StepsTooLarge",
     {"--steps", "9223372036854775808"},
     "--steps: '9223372036854775808' is not a non-negative integer"},
    {"EmptySteps", {"--steps="}, "--steps: '' is not a non-negative integer"},
    {"SeedTooLarge",
     {"--seed", "18446744073709551616"},
     "--seed: '18446744073709551616' is not an integer in [0, 2^64)"},
    {"SeedHex", {"--seed", "0x10"}, "--seed: '0x10' is not an integer in [0, 2^64)"},
    {"LrNotANumber", {"--lr", "fast"}, "--lr: 'fast' is not a positive finite number"},
    {"LrZero", {"--lr", "0"}, "--lr: '0' is not a positive finite number"},
    {"LrNegative", {"--lr", "-0.1"}, "--lr: '-0.1' is not a positive finite number"},
    {"LrNan", {"--lr", "nan"}, "--lr: 'nan' is not a positive finite number"},
    {"LrInf", {"--lr", "inf"}, "--lr: 'inf' is not a positive finite number"},
    {"LrTrailing", {"--lr", "0.1x"}, "--lr: '0.1x' is not a positive finite number"},
    {"LrBeyondFloat", {"--lr", "1e39"}, "--lr: '1e39' is out of range for a float learning rate"},
    {"LrBelowFloat", {"--lr", "1e-50"}, "--lr: '1e-50' is out of range for a float learning rate"},
    {"LogEveryZero", {"--log-every", "0"}, "--log-every: '0' is not a positive integer"},
    {"EmptyData", {"--data", ""}, "--data needs a file name"},
    {"EmptyLogJson", {"--log-json="}, "--log-json needs a file name"},
    {"MissingExportPath", {"--export"}, "--export needs a value"},
    {"EvalEveryZero", {"--eval-every", "0"}, "--eval-every: '0' is not a positive integer"},
    {"EvalBatchesZero", {"--eval-batches", "0"}, "--eval-batches: '0' is not a positive integer"},
    {"EmptyEvalData", {"--eval-data="}, "--eval-data needs a file name"},
    {"TokenDType", {"--token-dtype", "int8"}, "--token-dtype: 'int8' is not uint16 or uint32"},
    {"ExportDType", {"--export-dtype", "f16"}, "--export-dtype: 'f16' is not f32 or bf16"},
    {"EmptySave", {"--save="}, "--save needs a file name"},
    {"SaveEveryZero", {"--save-every", "0"}, "--save-every: '0' is not a positive integer"},
    {"KeepZero", {"--keep", "0"}, "--keep: '0' is not a positive integer"},
    {"LrDecayUnknown", {"--lr-decay", "step"}, "--lr-decay: 'step' is not none, cosine or linear"},
    {"DecayStepsZero", {"--decay-steps", "0"}, "--decay-steps: '0' is not a positive integer"},
    {"WarmupNegative",
     {"--warmup-steps", "-3"},
     "--warmup-steps: '-3' is not a non-negative integer"},
    {"MinLrNegative",
     {"--min-lr", "-1e-5"},
     "--min-lr: '-1e-5' is not a non-negative finite number"},
    {"MinLrNan", {"--min-lr", "nan"}, "--min-lr: 'nan' is not a non-negative finite number"},
    {"MinLrEmpty", {"--min-lr="}, "--min-lr: '' is not a non-negative finite number"},
    {"PrintManifestValue", {"--print-manifest=yes"}, "--print-manifest takes no value"},
    {"VersionValue", {"--version=2"}, "--version takes no value"},
    {"NoCudaGraphValue", {"--no-cuda-graph=1"}, "--no-cuda-graph takes no value"},
    {"PeakWord",
     {"--peak-tflops", "fast"},
     "--peak-tflops: 'fast' is not a positive number of TFLOP/s"},
    {"PeakZero", {"--peak-tflops=0"}, "--peak-tflops: '0' is not a positive number of TFLOP/s"},
    {"CollectiveTimeoutZero",
     {"--collective-timeout", "0"},
     "--collective-timeout: '0' is not a number of seconds in [0.001, 31536000]"},
    {"CollectiveTimeoutWord",
     {"--collective-timeout=never"},
     "--collective-timeout: 'never' is not a number of seconds in [0.001, 31536000]"},
    {"DebugSyncValue", {"--debug-sync=1"}, "--debug-sync takes no value"},
    {"TraceStateEmpty", {"--trace-state="}, "--trace-state needs a file name"},
    {"HelpValue", {"--help=1"}, "--help takes no value"},
    {"ErrorBeforeHelp", {"--steps", "x", "--help"}, "--steps: 'x' is not a non-negative integer"},
};

INSTANTIATE_TEST_SUITE_P(Flags, FlagErrorTest, testing::ValuesIn(kFlagErrors),
                         [](const testing::TestParamInfo<FlagErrorCase> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
