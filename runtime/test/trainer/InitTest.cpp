//===- InitTest.cpp - Initial parameter values ----------------------------===//

#include "trainer/Init.h"
#include "abi/DType.h"
#include "trainer/Philox.h"
#include "trainer/TensorBlocks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace fsdprt;

namespace {

ParamSpec makeParam(std::string name, std::vector<int64_t> shape, InitSpec init,
                    DType dtype = DType::F32) {
  ParamSpec param;
  param.name = std::move(name);
  param.shape = std::move(shape);
  param.dtype = dtype;
  param.init = init;
  return param;
}

std::vector<float> initialize(const ParamSpec &param, uint64_t seed) {
  std::vector<float> values(static_cast<size_t>(param.numElements()));
  initializeRange(param, seed, 0, param.numElements(), values.data());
  return values;
}

struct Moments {
  double mean, std, min, max;
};

Moments momentsOf(const std::vector<float> &values) {
  double sum = 0, sumSquares = 0;
  for (float v : values) {
    sum += v;
    sumSquares += double(v) * v;
  }
  double mean = sum / values.size();
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return {mean, std::sqrt(sumSquares / values.size() - mean * mean), *lo, *hi};
}

InitSpec normal(double mean, double std) {
  InitSpec init;
  init.kind = InitKind::Normal;
  init.mean = mean;
  init.std = std;
  return init;
}

InitSpec uniform(double low, double high) {
  InitSpec init;
  init.kind = InitKind::Uniform;
  init.low = low;
  init.high = high;
  return init;
}

InitSpec fanInInit(InitKind kind, double scale) {
  InitSpec init;
  init.kind = kind;
  init.scale = scale;
  return init;
}

TEST(Init, FanInIsEveryDimensionButTheLast) {
  EXPECT_EQ(fanIn(std::vector<int64_t>{784, 256}), 784.0);
  EXPECT_EQ(fanIn(std::vector<int64_t>{4, 8, 16}), 32.0);
  EXPECT_EQ(fanIn(std::vector<int64_t>{7}), 1.0);
}

TEST(Init, Constants) {
  InitSpec init;
  init.kind = InitKind::Zeros;
  EXPECT_EQ(initialize(makeParam("z", {3, 2}, init), 1), std::vector<float>(6, 0.0f));
  init.kind = InitKind::Ones;
  EXPECT_EQ(initialize(makeParam("o", {5}, init), 1), std::vector<float>(5, 1.0f));
  init.kind = InitKind::Constant;
  init.value = 0.1;
  EXPECT_EQ(initialize(makeParam("c", {4}, init), 1), std::vector<float>(4, 0.1f));
}

TEST(Init, NormalStatistics) {
  std::vector<float> values = initialize(makeParam("big.normal", {1000, 1000}, normal(0.5, 2.0)), 3);
  Moments m = momentsOf(values);
  // Standard error of the mean is 2 / 1000; of the std about 2 / sqrt(2e6).
  EXPECT_NEAR(m.mean, 0.5, 0.01);
  EXPECT_NEAR(m.std, 2.0, 0.01);
  EXPECT_LT(m.min, 0.5 - 4 * 2.0);
  EXPECT_GT(m.max, 0.5 + 4 * 2.0);
}

TEST(Init, UniformStatistics) {
  std::vector<float> values = initialize(makeParam("big.uniform", {1000, 1000}, uniform(-1, 3)), 3);
  Moments m = momentsOf(values);
  EXPECT_NEAR(m.mean, 1.0, 0.01);
  EXPECT_NEAR(m.std, 4.0 / std::sqrt(12.0), 0.01);
  EXPECT_GE(m.min, -1.0);
  EXPECT_LE(m.max, 3.0);
  EXPECT_LT(m.min, -0.999);
  EXPECT_GT(m.max, 2.999);
}

TEST(Init, FanInUniformBounds) {
  // fan_in = 256: values lie in [-scale / 16, scale / 16] and fill it.
  std::vector<float> values =
      initialize(makeParam("fc.w", {256, 512}, fanInInit(InitKind::FanInUniform, 2.0)), 0);
  Moments m = momentsOf(values);
  double bound = 2.0 / 16;
  EXPECT_GE(m.min, -bound);
  EXPECT_LE(m.max, bound);
  EXPECT_LT(m.min, -0.999 * bound);
  EXPECT_GT(m.max, 0.999 * bound);
  EXPECT_NEAR(m.mean, 0.0, 0.002);
  EXPECT_NEAR(m.std, bound / std::sqrt(3.0), 0.002);
}

TEST(Init, FanInNormalStd) {
  // fan_in = 4 * 8 = 32 for a rank-3 parameter.
  std::vector<float> values =
      initialize(makeParam("conv.w", {4, 8, 32768}, fanInInit(InitKind::FanInNormal, 1.5)), 9);
  Moments m = momentsOf(values);
  EXPECT_NEAR(m.mean, 0.0, 0.003);
  EXPECT_NEAR(m.std, 1.5 / std::sqrt(32.0), 0.003);
}

TEST(Init, MatchesTheFormulaOfTheContract) {
  uint64_t seed = 0x0123456789abcdefULL;
  uint64_t id = fnv1a64("layer.w");
  uint64_t index = 0x100000005ULL; // both halves of the counter matter
  PhiloxBlock w = philox4x32_10({5, 1, lo32(id), hi32(id)}, {0x89abcdef, 0x01234567});
  double u1 = ((w[0] >> 5) * 67108864.0 + (w[1] >> 6) + 0.5) / 9007199254740992.0;
  double u2 = ((w[2] >> 5) * 67108864.0 + (w[3] >> 6) + 0.5) / 9007199254740992.0;
  double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  EXPECT_EQ(initialValue(normal(1, 3), 1, seed, id, index), 1 + 3 * z);
  EXPECT_EQ(initialValue(uniform(-2, 2), 1, seed, id, index), -2 + 4 * u1);
  EXPECT_EQ(initialValue(fanInInit(InitKind::FanInNormal, 2), 64, seed, id, index), (2 / 8.0) * z);
  EXPECT_EQ(initialValue(fanInInit(InitKind::FanInUniform, 2), 64, seed, id, index),
            (2 * u1 - 1) * 2 / 8.0);
}

TEST(Init, ElementAloneEqualsBulkFill) {
  // Independence from ranks: any element, computed on its own, equals the
  // bulk fill; so does any split of the index range.
  ParamSpec param = makeParam("enc.attn.w", {48, 33}, normal(0, 0.02));
  std::vector<float> bulk = initialize(param, 77);
  uint64_t id = fnv1a64(param.name);
  for (int64_t i = 0; i < param.numElements(); ++i) {
    float alone = static_cast<float>(initialValue(param.init, 48, 77, id, static_cast<uint64_t>(i)));
    ASSERT_EQ(alone, bulk[i]) << "element " << i;
  }
  for (int64_t split : {1, 7, 500, 1583}) {
    std::vector<float> pieces(bulk.size());
    initializeRange(param, 77, 0, split, pieces.data());
    initializeRange(param, 77, split, param.numElements(), pieces.data() + split);
    EXPECT_EQ(pieces, bulk) << "split at " << split;
  }
}

TEST(Init, ThreadsShareALargeRangeWithoutChangingIt) {
  // A range of many chunks (HostParallel.h), from an odd start, filled by four
  // threads: every element is still the one computed alone.
  setenv("FSDPRT_HOST_THREADS", "4", 1);
  ParamSpec param = makeParam("blocks.0.mlp.w1", {96, 4099}, normal(0, 0.02), DType::BF16);
  int64_t begin = 333, end = param.numElements() - 5;
  std::vector<uint16_t> filled(static_cast<size_t>(end - begin), 0xffff);
  initializeRange(param, 5, begin, end, filled.data());
  uint64_t id = fnv1a64(param.name);
  for (int64_t i = begin; i < end; ++i) {
    uint16_t alone;
    storeReal(initialValue(param.init, 96, 5, id, static_cast<uint64_t>(i)), DType::BF16, &alone);
    ASSERT_EQ(filled[i - begin], alone) << "element " << i;
  }
}

TEST(Init, DependsOnSeedNameAndIndexOnly) {
  std::vector<float> a = initialize(makeParam("p", {10, 10}, normal(0, 1)), 5);
  EXPECT_EQ(initialize(makeParam("p", {100}, normal(0, 1)), 5), a) << "shape changed values";
  EXPECT_NE(initialize(makeParam("p", {10, 10}, normal(0, 1)), 6), a) << "seed ignored";
  EXPECT_NE(initialize(makeParam("q", {10, 10}, normal(0, 1)), 5), a) << "name ignored";
  // Seeds differing only in the high 32 bits give different keys.
  EXPECT_NE(initialize(makeParam("p", {10, 10}, normal(0, 1)), 5 + (uint64_t(1) << 32)), a);
}

TEST(Init, BF16RoundsTheDoubleValue) {
  ParamSpec param = makeParam("emb", {16, 16}, normal(0, 1), DType::BF16);
  std::vector<uint16_t> values(256);
  initializeRange(param, 1, 0, 256, values.data());
  uint64_t id = fnv1a64("emb");
  for (int i = 0; i < 256; ++i)
    ASSERT_EQ(values[i], roundToBF16(initialValue(param.init, 16, 1, id, i))) << "element " << i;
}

/// One unit holding `w` [3, 5] then `b` [5] (20 elements) in shards of
/// `shardNumel` elements at arena offset 64, of dtype `dtype`.
Manifest unitManifest(int64_t shardNumel, DType dtype = DType::F32) {
  Manifest manifest;
  UnitSpec unit;
  unit.name = "fc";
  unit.dtype = dtype;
  unit.numel = 20;
  unit.shardNumel = shardNumel;
  unit.paramOffset = 64;
  manifest.units.push_back(unit);
  manifest.params.push_back(makeParam("fc.w", {3, 5}, fanInInit(InitKind::FanInUniform, 1), dtype));
  manifest.params.push_back(makeParam("fc.b", {5}, normal(0, 0.1), dtype));
  manifest.params[1].unitOffset = 15;
  return manifest;
}

/// The bytes of shard `k`'s parameter shard after initialisation; the rest
/// of its arena must be untouched.
std::vector<uint8_t> shardBytes(const Manifest &manifest, int64_t k, uint64_t seed) {
  const UnitSpec &unit = manifest.units[0];
  std::vector<uint8_t> arena(static_cast<size_t>(64 + unit.shardBytes() + 64), 0);
  initializeShards(manifest, seed, k, arena.data());
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(arena[i], 0) << "byte " << i << " before the shard";
    EXPECT_EQ(arena[arena.size() - 1 - i], 0) << "byte " << i << " from the end";
  }
  return std::vector<uint8_t>(arena.begin() + 64, arena.begin() + 64 + unit.shardBytes());
}

TEST(InitShards, OwnedRanges) {
  Manifest manifest = unitManifest(16);
  const UnitSpec &unit = manifest.units[0];
  EXPECT_EQ(ownedRange(unit, 1).begin, 16);
  EXPECT_EQ(ownedRange(unit, 1).end, 32);
  // fc.b is elements [15, 20) of the unit: its element 0 on shard 0, 1..4 on shard 1.
  ShardRange first = ownedPart(manifest.params[1], ownedRange(unit, 0));
  ShardRange second = ownedPart(manifest.params[1], ownedRange(unit, 1));
  EXPECT_EQ(first.begin, 0);
  EXPECT_EQ(first.end, 1);
  EXPECT_EQ(second.begin, 1);
  EXPECT_EQ(second.end, 5);
  ShardRange none = ownedPart(manifest.params[0], ownedRange(unit, 2));
  EXPECT_EQ(none.begin, none.end);
}

TEST(InitShards, ShardsTogetherAreTheOneRankValues) {
  for (DType dtype : {DType::F32, DType::BF16}) {
    size_t size = dtypeSize(dtype);
    // One rank: the whole unit (20 elements) and 12 elements of padding.
    std::vector<uint8_t> whole = shardBytes(unitManifest(32, dtype), 0, 99);
    std::vector<uint8_t> expected(32 * size, 0);
    initializeRange(unitManifest(32, dtype).params[0], 99, 0, 15, expected.data());
    initializeRange(unitManifest(32, dtype).params[1], 99, 0, 5, expected.data() + 15 * size);
    EXPECT_EQ(whole, expected) << dtypeName(dtype);
    // Two and three ranks: the shards in order are the same bytes.
    for (int64_t ranks : {2, 3}) {
      Manifest manifest = unitManifest(16, dtype);
      std::vector<uint8_t> joined;
      for (int64_t k = 0; k < ranks; ++k) {
        std::vector<uint8_t> shard = shardBytes(manifest, k, 99);
        joined.insert(joined.end(), shard.begin(), shard.end());
      }
      joined.resize(whole.size());
      EXPECT_EQ(joined, whole) << dtypeName(dtype) << " on " << ranks << " ranks";
    }
    // The third rank of three owns only padding: it stays zero.
    EXPECT_EQ(shardBytes(unitManifest(16, dtype), 2, 99), std::vector<uint8_t>(16 * size, 0));
  }
}

/// Element `index` (row-major) of a tensor of shape `shape`, as coordinates.
std::vector<int64_t> coordinates(const std::vector<int64_t> &shape, int64_t index) {
  std::vector<int64_t> at(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    at[d] = index % shape[d];
    index /= shape[d];
  }
  return at;
}

TEST(TensorBlocks, BlockElementsAreTheWholesAlongTheSplitDimension) {
  std::vector<int64_t> whole = {4, 6, 3};
  for (int64_t blocks : {1, 2, 3})
    for (int64_t dim = 0; dim < 3; ++dim) {
      if (whole[dim] % blocks != 0)
        continue;
      std::vector<int64_t> block = whole;
      block[dim] /= blocks;
      BlockLayout layout = BlockLayout::of(block, dim, blocks);
      for (int64_t t = 0; t < blocks; ++t)
        for (int64_t e = 0; e < layout.blockElements; ++e) {
          // Block t holds coordinates [t x block, (t + 1) x block) of `dim`.
          std::vector<int64_t> at = coordinates(block, e);
          at[dim] += t * block[dim];
          int64_t w = layout.wholeIndex(t, e);
          ASSERT_EQ(coordinates(whole, w), at) << "block " << t << ", element " << e;
          BlockLayout::Place place = layout.locate(w);
          ASSERT_EQ(place.block, t);
          ASSERT_EQ(place.element, e);
          // The run left is contiguous in both the block and the whole.
          ASSERT_GE(place.runLeft, 1);
          ASSERT_EQ(layout.wholeIndex(t, e + place.runLeft - 1), w + place.runLeft - 1);
        }
    }
  // Unsplit: one block, the whole, whatever the tensor index.
  BlockLayout unsplit = BlockLayout::of(whole, std::nullopt, 2);
  EXPECT_EQ(unsplit.wholeIndex(1, 17), 17);
  EXPECT_EQ(unsplit.locate(17).block, 0);
  EXPECT_EQ(unsplit.locate(17).runLeft, 72 - 17);
}

TEST(Init, BlocksOfASplitParameterAreTheWholeParametersValues) {
  // Split along dimension 0, fan_in (the product of all dimensions but the
  // last) is the whole's, not the block's: 8 x 6, not 4 x 6.
  for (InitSpec init : {fanInInit(InitKind::FanInUniform, 1.5), normal(0.5, 2)})
    for (int64_t dim : {0, 1, 2}) {
      ParamSpec whole = makeParam("blocks.w", {8, 6, 4}, init);
      std::vector<float> values = initialize(whole, 31);
      ParamSpec block = whole;
      block.shape[static_cast<size_t>(dim)] /= 2;
      block.splitDim = dim;
      block.tensorBlocks = 2;
      EXPECT_EQ(block.wholeShape(), whole.shape);
      BlockLayout layout = BlockLayout::of(block);
      for (int64_t t = 0; t < 2; ++t) {
        std::vector<float> mine(static_cast<size_t>(block.numElements()));
        // In two pieces, as a rank's shard would take them.
        initializeRange(block, 31, 0, 5, mine.data(), t);
        initializeRange(block, 31, 5, block.numElements(), mine.data() + 5, t);
        for (int64_t e = 0; e < block.numElements(); ++e)
          ASSERT_EQ(mine[e], values[layout.wholeIndex(t, e)])
              << "split_dim " << dim << ", block " << t << ", element " << e;
      }
    }
}

/// `unitManifest` with fc.w [3, 5] a block of [3, 10], split along dimension
/// 1 over 2 tensor ranks.
Manifest splitManifest(int64_t shardNumel) {
  Manifest manifest = unitManifest(shardNumel);
  manifest.tensorRanks = 2;
  manifest.params[0].splitDim = 1;
  manifest.params[0].tensorBlocks = 2;
  return manifest;
}

TEST(InitShards, TensorRanksHoldTheirBlocks) {
  ParamSpec whole = makeParam("fc.w", {3, 10}, fanInInit(InitKind::FanInUniform, 1));
  std::vector<float> values = initialize(whole, 5);
  for (int64_t t = 0; t < 2; ++t) {
    // Two shards of 16 of the unit's 20: fc.w's block is elements [0, 15).
    std::vector<float> block;
    Manifest manifest = splitManifest(16);
    for (int64_t k = 0; k < 2; ++k) {
      std::vector<uint8_t> arena(static_cast<size_t>(64 + manifest.units[0].shardBytes()), 0);
      initializeShards(manifest, 5, k, arena.data(), t);
      const float *shard = reinterpret_cast<const float *>(arena.data() + 64);
      block.insert(block.end(), shard, shard + 16);
    }
    for (int64_t row = 0; row < 3; ++row)
      for (int64_t col = 0; col < 5; ++col)
        ASSERT_EQ(block[row * 5 + col], values[row * 10 + t * 5 + col])
            << "tensor index " << t << ", [" << row << ", " << col << "]";
    // fc.b is replicated: the same on both tensor ranks, the unsplit values.
    std::vector<float> bias(5);
    initializeRange(unitManifest(32).params[1], 5, 0, 5, bias.data());
    EXPECT_EQ(std::vector<float>(block.begin() + 15, block.begin() + 20), bias);
  }
}

} // namespace
