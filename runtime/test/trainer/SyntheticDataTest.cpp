//===- SyntheticDataTest.cpp - The seeded synthetic task ------------------===//

#include "abi/DType.h"
#include "support/TestManifest.h"
#include "trainer/Philox.h"
#include "trainer/SyntheticData.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace fsdprt;
using json = nlohmann::json;
using testing::ExitedWithCode;
using testing::HasSubstr;

namespace {

/// A manifest with the test classifier's header and just the given inputs.
Manifest withInputs(const char *inputs, int64_t arenaBytes = 4096) {
  json m = test::classifierManifest();
  m["units"] = json::array();
  m["params"] = json::array();
  m["inputs"] = json::parse(inputs);
  m["arena_bytes"] = arenaBytes;
  m["persistent_bytes"] = arenaBytes;
  return parseManifest(m.dump());
}

template <typename T> T element(const std::vector<uint8_t> &arena, const InputSpec &input,
                                int64_t row, int64_t j) {
  T value;
  std::memcpy(&value, arena.data() + input.offset + row * input.sampleBytes() + j * sizeof(T),
              sizeof(T));
  return value;
}

/// The contract's synthetic-data draw for element j of sample n of input k.
PhiloxBlock dataBlock(uint64_t seed, uint64_t j, uint32_t n, uint32_t k) {
  return philox4x32_10({lo32(j), hi32(j), n, k}, {lo32(seed), hi32(seed) ^ 0x5EED5EEDu});
}

/// The contract's teacher weight W[j, c] for C outputs.
double teacher(uint64_t seed, uint64_t j, uint64_t c, uint64_t outputs) {
  uint64_t e = j * outputs + c;
  return standardNormal(
      philox4x32_10({lo32(e), hi32(e), 0, 0}, {lo32(seed), hi32(seed) ^ 0x7EAC7EACu}));
}

TEST(SyntheticData, FeaturesAreStandardNormalDraws) {
  Manifest manifest = withInputs(R"([
    {"index": 0, "shape": [4, 3], "dtype": "f32", "role": "features", "offset": 384, "bytes": 48},
    {"index": 1, "shape": [4, 2], "dtype": "bf16", "role": "features", "offset": 448, "bytes": 16}])");
  uint64_t seed = 0x500000007ULL;
  SyntheticData data(manifest, seed);
  std::vector<uint8_t> arena(manifest.arenaBytes, 0);
  data.writeBatch(3, arena.data()); // samples 8 .. 11
  for (int b = 0; b < 4; ++b) {
    uint32_t n = 8 + b;
    for (int j = 0; j < 3; ++j)
      EXPECT_EQ(element<float>(arena, manifest.inputs[0], b, j),
                static_cast<float>(standardNormal(dataBlock(seed, j, n, 0))));
    for (int j = 0; j < 2; ++j)
      EXPECT_EQ(element<uint16_t>(arena, manifest.inputs[1], b, j),
                roundToBF16(standardNormal(dataBlock(seed, j, n, 1))));
  }
}

TEST(SyntheticData, FeatureStatistics) {
  Manifest manifest = withInputs(R"([
    {"index": 0, "shape": [4, 250], "dtype": "f32", "role": "features", "offset": 0, "bytes": 4000}])");
  SyntheticData data(manifest, 1);
  std::vector<uint8_t> arena(manifest.arenaBytes, 0);
  double sum = 0, sumSquares = 0;
  int count = 0;
  for (int step = 1; step <= 100; ++step) {
    data.writeBatch(step, arena.data());
    for (int b = 0; b < 4; ++b)
      for (int j = 0; j < 250; ++j) {
        double x = element<float>(arena, manifest.inputs[0], b, j);
        sum += x;
        sumSquares += x * x;
        ++count;
      }
  }
  EXPECT_NEAR(sum / count, 0.0, 0.02);
  EXPECT_NEAR(sumSquares / count, 1.0, 0.03);
}

TEST(SyntheticData, ClassesOfTheFeatureTeacher) {
  Manifest manifest = withInputs(R"([
    {"index": 0, "shape": [4, 3], "dtype": "f32", "role": "features", "offset": 384, "bytes": 48},
    {"index": 1, "shape": [4], "dtype": "i32", "role": "classes", "bound": 5, "offset": 448, "bytes": 16}])");
  SyntheticData data(manifest, 11);
  std::vector<uint8_t> arena(manifest.arenaBytes, 0);
  std::vector<int> histogram(5, 0);
  for (int step = 1; step <= 50; ++step) {
    data.writeBatch(step, arena.data());
    for (int b = 0; b < 4; ++b) {
      double best = -INFINITY;
      int expected = -1;
      for (int c = 0; c < 5; ++c) {
        double sum = 0;
        for (int j = 0; j < 3; ++j)
          sum += double(element<float>(arena, manifest.inputs[0], b, j)) * teacher(11, j, c, 5);
        if (sum > best) {
          best = sum;
          expected = c;
        }
      }
      int32_t label = element<int32_t>(arena, manifest.inputs[1], b, 0);
      ASSERT_EQ(label, expected) << "step " << step << " row " << b;
      ++histogram[label];
    }
  }
  // A random linear teacher uses every class on normal inputs.
  for (int c = 0; c < 5; ++c)
    EXPECT_GT(histogram[c], 0) << "class " << c;
}

TEST(SyntheticData, TokensAndNextTokenTargets) {
  Manifest manifest = withInputs(R"([
    {"index": 0, "shape": [4, 6], "dtype": "i32", "role": "tokens", "bound": 50, "offset": 0, "bytes": 96},
    {"index": 1, "shape": [4, 6], "dtype": "i64", "role": "classes", "bound": 50, "offset": 128, "bytes": 192}])");
  uint64_t seed = 3;
  SyntheticData data(manifest, seed);
  std::vector<uint8_t> arena(manifest.arenaBytes, 0);
  for (int step = 1; step <= 20; ++step) {
    data.writeBatch(step, arena.data());
    for (int b = 0; b < 4; ++b) {
      uint32_t n = (step - 1) * 4 + b;
      int64_t x0 = static_cast<int64_t>(std::floor(uniform1(dataBlock(seed, 0, n, 0)) * 50));
      EXPECT_EQ(element<int32_t>(arena, manifest.inputs[0], b, 0), x0);
      for (int t = 0; t < 6; ++t) {
        int32_t token = element<int32_t>(arena, manifest.inputs[0], b, t);
        ASSERT_GE(token, 0);
        ASSERT_LT(token, 50);
        EXPECT_EQ(token, (x0 + 7 * t) % 50) << "arithmetic sequence";
        EXPECT_EQ(element<int64_t>(arena, manifest.inputs[1], b, t), (token + 7) % 50)
            << "bigram target";
      }
    }
  }
}

TEST(SyntheticData, ClassesMayHaveMoreClassesThanTokens) {
  Manifest manifest = withInputs(R"([
    {"index": 0, "shape": [4, 2], "dtype": "i64", "role": "tokens", "bound": 3, "offset": 0, "bytes": 64},
    {"index": 1, "shape": [4, 2], "dtype": "i32", "role": "classes", "bound": 8, "offset": 64, "bytes": 32}])");
  SyntheticData data(manifest, 0);
  std::vector<uint8_t> arena(manifest.arenaBytes, 0);
  data.writeBatch(1, arena.data());
  for (int b = 0; b < 4; ++b)
    for (int t = 0; t < 2; ++t) {
      int64_t token = element<int64_t>(arena, manifest.inputs[0], b, t);
      EXPECT_LT(token, 3);
      EXPECT_EQ(element<int32_t>(arena, manifest.inputs[1], b, t), (token + 7) % 3);
    }
}

TEST(SyntheticData, RegressionTargetsOfTheTeacher) {
  Manifest manifest = withInputs(R"([
    {"index": 0, "shape": [4, 5], "dtype": "bf16", "role": "features", "offset": 0, "bytes": 40},
    {"index": 1, "shape": [4, 2], "dtype": "f32", "role": "regression_target", "offset": 64, "bytes": 32}])");
  SyntheticData data(manifest, 21);
  std::vector<uint8_t> arena(manifest.arenaBytes, 0);
  data.writeBatch(2, arena.data());
  for (int b = 0; b < 4; ++b)
    for (int c = 0; c < 2; ++c) {
      // The teacher sees the features as stored (bf16), summed over j in order.
      double sum = 0;
      for (int j = 0; j < 5; ++j)
        sum += bf16ToDouble(element<uint16_t>(arena, manifest.inputs[0], b, j)) *
               teacher(21, j, c, 2);
      EXPECT_EQ(element<float>(arena, manifest.inputs[1], b, c), static_cast<float>(sum));
    }
}

TEST(SyntheticData, ADataSetOfWholeGlobalBatchesReplayed) {
  // 1024 / 4 batches of 4: step 257 replays step 1.
  Manifest manifest = withInputs(R"([
    {"index": 0, "shape": [4, 2], "dtype": "f32", "role": "features", "offset": 0, "bytes": 32}])");
  SyntheticData data(manifest, 5);
  EXPECT_EQ(data.numSamples(), 1024);
  std::vector<uint8_t> first(manifest.arenaBytes, 0), again(manifest.arenaBytes, 0);
  data.writeBatch(1, first.data());
  data.writeBatch(257, again.data());
  EXPECT_EQ(first, again);
  // A global batch of 48 gives 22 batches: 1056 samples.
  json m = test::classifierManifest();
  m["units"] = json::array();
  m["params"] = json::array();
  m["batch"] = 48;
  m["local_batch"] = 24;
  m["grid"] = {2};
  m["shard_ranks"] = 2;
  m["inputs"] = json::parse(R"([
    {"index": 0, "shape": [24, 1], "dtype": "f32", "role": "features", "offset": 0, "bytes": 96}])");
  EXPECT_EQ(SyntheticData(parseManifest(m.dump()), 5).numSamples(), 1056);
}

TEST(SyntheticData, EachRankGetsItsRowsOfTheGlobalBatch) {
  // Global batch 8 on 2 ranks of 4 rows: rank r's row b of step s is sample
  // (s - 1) * 8 + 4 r + b of the one data set; tokens and their next-token
  // targets stay paired.
  json m = test::shardedClassifierManifest();
  m["units"] = json::array();
  m["params"] = json::array();
  m["inputs"] = json::parse(R"([
    {"index": 0, "shape": [4, 3], "dtype": "f32", "role": "features", "offset": 0, "bytes": 48},
    {"index": 1, "shape": [4, 5], "dtype": "i32", "role": "tokens", "bound": 9, "offset": 64, "bytes": 80},
    {"index": 2, "shape": [4, 5], "dtype": "i32", "role": "classes", "bound": 9, "offset": 192, "bytes": 80}])");
  m["arena_bytes"] = 512;
  m["persistent_bytes"] = 512;
  Manifest manifest = parseManifest(m.dump());
  uint64_t seed = 17;
  for (int rank = 0; rank < 2; ++rank) {
    SyntheticData data(manifest, seed, rank);
    std::vector<uint8_t> arena(manifest.arenaBytes, 0);
    for (int step : {1, 2, 128, 129}) {
      data.writeBatch(step, arena.data());
      for (int b = 0; b < 4; ++b) {
        uint32_t n = ((step - 1) * 8 + 4 * rank + b) % 1024;
        for (int j = 0; j < 3; ++j)
          ASSERT_EQ(element<float>(arena, manifest.inputs[0], b, j),
                    static_cast<float>(standardNormal(dataBlock(seed, j, n, 0))))
              << "rank " << rank << " step " << step << " row " << b;
        int64_t x0 = static_cast<int64_t>(std::floor(uniform1(dataBlock(seed, 0, n, 1)) * 9));
        for (int t = 0; t < 5; ++t) {
          EXPECT_EQ(element<int32_t>(arena, manifest.inputs[1], b, t), (x0 + 7 * t) % 9);
          EXPECT_EQ(element<int32_t>(arena, manifest.inputs[2], b, t), (x0 + 7 * t + 7) % 9);
        }
      }
    }
  }
}

TEST(SyntheticData, SeedsAndStepsGiveDifferentSamples) {
  Manifest manifest = withInputs(R"([
    {"index": 0, "shape": [4, 8], "dtype": "f32", "role": "features", "offset": 0, "bytes": 128}])");
  auto batch = [&](uint64_t seed, int step) {
    std::vector<uint8_t> arena(manifest.arenaBytes, 0);
    SyntheticData(manifest, seed).writeBatch(step, arena.data());
    return arena;
  };
  EXPECT_EQ(batch(1, 1), batch(1, 1));
  EXPECT_NE(batch(1, 1), batch(2, 1));
  EXPECT_NE(batch(1, 1), batch(1 + (uint64_t(1) << 32), 1));
  EXPECT_NE(batch(1, 1), batch(1, 2));
}

TEST(SyntheticDataError, ClassesWithoutSource) {
  Manifest manifest = withInputs(R"([
    {"index": 0, "shape": [4], "dtype": "i32", "role": "classes", "bound": 5, "offset": 0, "bytes": 16}])");
  EXPECT_EXIT(SyntheticData(manifest, 0), ExitedWithCode(1),
              HasSubstr("trainer: error: synthetic data: cannot produce input 0 (classes [4]): "
                        "there is no tokens input of the same shape and no features input; "
                        "use --data"));
}

TEST(SyntheticDataError, PerPositionClassesFromFeatures) {
  Manifest manifest = withInputs(R"([
    {"index": 0, "shape": [4, 3], "dtype": "f32", "role": "features", "offset": 0, "bytes": 48},
    {"index": 1, "shape": [4, 2], "dtype": "i32", "role": "classes", "bound": 5, "offset": 64, "bytes": 32}])");
  EXPECT_EXIT(SyntheticData(manifest, 0), ExitedWithCode(1),
              HasSubstr("synthetic data: cannot produce input 1 (classes [4, 2]): the features "
                        "teacher gives one class per sample"));
}

TEST(SyntheticDataError, FewerClassesThanTokens) {
  Manifest manifest = withInputs(R"([
    {"index": 0, "shape": [4, 2], "dtype": "i32", "role": "tokens", "bound": 10, "offset": 0, "bytes": 32},
    {"index": 1, "shape": [4, 2], "dtype": "i32", "role": "classes", "bound": 5, "offset": 64, "bytes": 32}])");
  EXPECT_EXIT(SyntheticData(manifest, 0), ExitedWithCode(1),
              HasSubstr("synthetic data: input 1 (classes [4, 2]) has bound 5, but its "
                        "next-token targets come from input 0 (tokens [4, 2]) with bound 10"));
}

TEST(SyntheticDataError, RegressionWithoutFeatures) {
  Manifest manifest = withInputs(R"([
    {"index": 0, "shape": [4, 2], "dtype": "i32", "role": "tokens", "bound": 10, "offset": 0, "bytes": 32},
    {"index": 1, "shape": [4, 2], "dtype": "f32", "role": "regression_target", "offset": 64, "bytes": 32}])");
  EXPECT_EXIT(SyntheticData(manifest, 0), ExitedWithCode(1),
              HasSubstr("synthetic data: cannot produce input 1 (regression_target [4, 2]): the "
                        "teacher needs a features input"));
}

TEST(SyntheticDataError, TeacherTooLarge) {
  // 8192 x 8193 weights: just over 2^26.
  Manifest manifest = withInputs(R"([
    {"index": 0, "shape": [4, 8192], "dtype": "bf16", "role": "features", "offset": 0, "bytes": 65536},
    {"index": 1, "shape": [4, 8193], "dtype": "bf16", "role": "regression_target", "offset": 65536, "bytes": 65544}])",
                                 131136);
  EXPECT_EXIT(SyntheticData(manifest, 0), ExitedWithCode(1),
              HasSubstr("synthetic data: the teacher of input 1 (regression_target [4, 8193]) "
                        "would need 8192 x 8193 weights (at most 2^26); use --data"));
}

} // namespace
