//===- ManifestTest.cpp - Manifest parsing and every validation error -----===//

#include "abi/Manifest.h"
#include "support/TestManifest.h"

#include <nlohmann/json.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <limits>

using namespace fsdprt;
using fsdprt::test::classifierManifest;
using json = nlohmann::json;
using testing::ExitedWithCode;
using testing::HasSubstr;

namespace {

TEST(Manifest, ParsesEveryField) {
  Manifest manifest = parseManifest(classifierManifest().dump());
  EXPECT_EQ(manifest.version, 2);
  EXPECT_EQ(manifest.arenaBytes, 768);
  EXPECT_EQ(manifest.persistentBytes, 640);
  EXPECT_EQ(manifest.batch, 4);
  EXPECT_EQ(manifest.localBatch, 4);
  EXPECT_EQ(manifest.grid, std::vector<int64_t>{1});
  EXPECT_EQ(manifest.worldSize(), 1);
  EXPECT_EQ(manifest.strategy, "full_shard");
  EXPECT_EQ(manifest.shardRanks, 1);
  EXPECT_EQ(manifest.replicas, 1);
  EXPECT_EQ(manifest.optimizer.kind, OptimizerKind::AdamW);
  EXPECT_EQ(manifest.optimizer.lr, 0.001);
  EXPECT_EQ(manifest.optimizer.beta1, 0.9);
  EXPECT_EQ(manifest.optimizer.beta2, 0.999);
  EXPECT_EQ(manifest.optimizer.eps, 1e-8);
  EXPECT_EQ(manifest.optimizer.weightDecay, 0.0);
  EXPECT_EQ(manifest.clipGradNorm, 0.0);
  EXPECT_FALSE(manifest.allowTf32) << "absent: exact fp32 products";

  ASSERT_EQ(manifest.units.size(), 1u);
  const UnitSpec &unit = manifest.units[0];
  EXPECT_EQ(unit.name, "fc");
  EXPECT_EQ(unit.dtype, DType::F32);
  EXPECT_TRUE(unit.trainable);
  EXPECT_EQ(unit.numel, 20);
  EXPECT_EQ(unit.shardNumel, 32);
  EXPECT_EQ(unit.shardBytes(), 128);
  EXPECT_EQ(unit.paramOffset, 0);
  EXPECT_EQ(unit.gradOffset, 128);
  ASSERT_EQ(unit.state.size(), 2u);
  EXPECT_EQ(unit.state[0].slot, "exp_avg");
  EXPECT_EQ(unit.state[0].offset, 256);
  EXPECT_EQ(unit.state[1].slot, "exp_avg_sq");
  EXPECT_EQ(unit.state[1].offset, 512);

  ASSERT_EQ(manifest.params.size(), 2u);
  const ParamSpec &w = manifest.params[0];
  EXPECT_EQ(w.name, "fc.w");
  EXPECT_EQ(w.shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(w.dtype, DType::F32);
  EXPECT_EQ(w.unit, "fc");
  EXPECT_EQ(w.unitIndex, 0u);
  EXPECT_TRUE(w.trainable);
  EXPECT_EQ(w.init.kind, InitKind::FanInUniform);
  EXPECT_EQ(w.init.scale, 1.0);
  EXPECT_EQ(w.unitOffset, 0);
  EXPECT_EQ(w.bytes(), 60);
  EXPECT_EQ(w.numElements(), 15);
  EXPECT_EQ(manifest.params[1].init.kind, InitKind::Zeros);
  EXPECT_EQ(manifest.params[1].unitOffset, 15);

  ASSERT_EQ(manifest.inputs.size(), 2u);
  const InputSpec &classes = manifest.inputs[1];
  EXPECT_EQ(classes.index, 1);
  EXPECT_EQ(classes.shape, std::vector<int64_t>{4});
  EXPECT_EQ(classes.dtype, DType::I32);
  EXPECT_EQ(classes.role, InputRole::Classes);
  EXPECT_EQ(classes.bound, 5);
  EXPECT_EQ(classes.sampleShape(), std::vector<int64_t>{});
  EXPECT_EQ(classes.sampleElements(), 1);
  EXPECT_EQ(manifest.inputs[0].sampleBytes(), 12);
}

TEST(Manifest, ParsesAShardedPlan) {
  Manifest manifest = parseManifest(test::shardedClassifierManifest().dump());
  EXPECT_EQ(manifest.worldSize(), 2);
  EXPECT_EQ(manifest.shardRanks, 2);
  EXPECT_EQ(manifest.batch, 8);
  EXPECT_EQ(manifest.localBatch, 4);
  EXPECT_EQ(manifest.units[0].shardNumel, 16);
}

TEST(Manifest, PersistentLayoutDifference) {
  nlohmann::json train = test::classifierManifest();
  nlohmann::json eval = train;
  // The evaluation step's transient part is its own.
  eval["arena_bytes"] = 700;
  EXPECT_EQ(persistentLayoutDifference(parseManifest(train.dump()), parseManifest(eval.dump())),
            "");
  nlohmann::json moved = eval;
  moved["units"][0]["param_offset"] = 128;
  moved["units"][0]["grad_offset"] = 0;
  EXPECT_EQ(persistentLayoutDifference(parseManifest(train.dump()), parseManifest(moved.dump())),
            "unit 'fc'");
  moved = eval;
  moved["inputs"][1]["offset"] = 480;
  EXPECT_EQ(persistentLayoutDifference(parseManifest(train.dump()), parseManifest(moved.dump())),
            "input 1");
  EXPECT_EQ(persistentLayoutDifference(parseManifest(train.dump()),
                                       parseManifest(test::shardedClassifierManifest().dump())),
            "the batch or the grid");
  // The evaluation step writes its loss where the training step does.
  train["device_scalars"] = {{"offset", 464}};
  EXPECT_EQ(persistentLayoutDifference(parseManifest(train.dump()), parseManifest(eval.dump())),
            "the device scalars");
  eval["device_scalars"] = {{"offset", 472}};
  EXPECT_EQ(persistentLayoutDifference(parseManifest(train.dump()), parseManifest(eval.dump())),
            "the device scalars");
  eval["device_scalars"]["offset"] = 464;
  EXPECT_EQ(persistentLayoutDifference(parseManifest(train.dump()), parseManifest(eval.dump())),
            "");
}

TEST(Manifest, ParsesFrozenUnitsAndOtherStrategies) {
  json m = classifierManifest();
  m["units"].push_back({{"name", ""}, {"dtype", "bf16"}, {"trainable", false}, {"numel", 4},
                        {"shard_numel", 16}, {"param_offset", 640}});
  m["params"].push_back({{"name", "rope"}, {"shape", {4}}, {"dtype", "bf16"}, {"unit", ""},
                         {"trainable", false}, {"init", {{"kind", "ones"}}}, {"unit_offset", 0}});
  m["persistent_bytes"] = 672;
  Manifest manifest = parseManifest(m.dump());
  ASSERT_EQ(manifest.units.size(), 2u);
  EXPECT_FALSE(manifest.units[1].trainable);
  EXPECT_TRUE(manifest.units[1].state.empty());
  EXPECT_EQ(manifest.params[2].unitIndex, 1u);

  m = classifierManifest();
  m["grid"] = {4};
  m["strategy"] = "no_shard";
  m["replicas"] = 4;
  m["batch"] = 16;
  EXPECT_EQ(parseManifest(m.dump()).replicas, 4);
  m["grid"] = {2, 2};
  m["strategy"] = "hybrid_shard";
  m["shard_ranks"] = 2;
  m["replicas"] = 2;
  manifest = parseManifest(m.dump());
  EXPECT_EQ(manifest.shardRanks, 2);
  EXPECT_EQ(manifest.worldSize(), 4);
}

TEST(Manifest, ParsesEveryInitKind) {
  json m = classifierManifest();
  auto initOf = [&](json init) {
    m["params"][0]["init"] = init;
    return parseManifest(m.dump()).params[0].init;
  };
  EXPECT_EQ(initOf({{"kind", "ones"}}).kind, InitKind::Ones);
  InitSpec constant = initOf({{"kind", "constant"}, {"value", -2.5}});
  EXPECT_EQ(constant.kind, InitKind::Constant);
  EXPECT_EQ(constant.value, -2.5);
  InitSpec normal = initOf({{"kind", "normal"}, {"mean", 1}, {"std", 0.02}});
  EXPECT_EQ(normal.kind, InitKind::Normal);
  EXPECT_EQ(normal.mean, 1.0);
  EXPECT_EQ(normal.std, 0.02);
  InitSpec uniform = initOf({{"kind", "uniform"}, {"low", -1}, {"high", 3}});
  EXPECT_EQ(uniform.kind, InitKind::Uniform);
  EXPECT_EQ(uniform.low, -1.0);
  EXPECT_EQ(uniform.high, 3.0);
  InitSpec fanInNormal = initOf({{"kind", "fan_in_normal"}, {"scale", 2}});
  EXPECT_EQ(fanInNormal.kind, InitKind::FanInNormal);
  EXPECT_EQ(fanInNormal.scale, 2.0);
}

TEST(Manifest, ParsesSgdAndTolerance) {
  json m = classifierManifest();
  m["optimizer"] = {{"kind", "sgd"}, {"lr", 1}, {"momentum", 0.9}, {"weight_decay", 0.01}};
  m["units"][0]["state"] = {{{"slot", "momentum"}, {"offset", 256}}};
  // Unknown keys are for later versions of the compiler: ignored.
  m["report"] = {{"peak_bytes", 1}};
  m["params"][0]["frozen_reason"] = "none";
  m["inputs"][0]["dtype"] = "bf16";
  m["inputs"][0]["bytes"] = 24;
  m["inputs"][1]["dtype"] = "i64";
  m["inputs"][1]["bytes"] = 32;
  m["inputs"][1]["bound"] = 9223372036854775807LL;
  Manifest manifest = parseManifest(m.dump());
  EXPECT_EQ(manifest.optimizer.kind, OptimizerKind::SGD);
  EXPECT_EQ(manifest.optimizer.lr, 1.0);
  EXPECT_EQ(manifest.optimizer.momentum, 0.9);
  EXPECT_EQ(manifest.optimizer.weightDecay, 0.01);
  EXPECT_EQ(manifest.units[0].state.size(), 1u);
  EXPECT_EQ(manifest.inputs[1].bound, 9223372036854775807LL);
  // SGD without momentum keeps no state.
  m["optimizer"]["momentum"] = 0.0;
  m["units"][0]["state"] = json::array();
  EXPECT_TRUE(parseManifest(m.dump()).units[0].state.empty());
}

TEST(Manifest, ParsesTheExampleOfTheContract) {
  // docs/Runtime.md, section 2, verbatim.
  Manifest manifest = parseManifest(R"({
  "version": 2,
  "arena_bytes": 2000000,
  "persistent_bytes": 1855744,
  "batch": 64,
  "local_batch": 32,
  "grid": [2],
  "strategy": "full_shard",
  "shard_ranks": 2,
  "replicas": 1,
  "optimizer": {"kind": "adamw", "lr": 0.001, "beta1": 0.9, "beta2": 0.999, "eps": 1e-08, "weight_decay": 0.0},
  "clip_grad_norm": 0.0,
  "units": [
    {"name": "fc1", "dtype": "f32", "trainable": true, "numel": 200960, "shard_numel": 100480,
     "param_offset": 0, "grad_offset": 401920,
     "state": [{"slot": "exp_avg", "offset": 803840}, {"slot": "exp_avg_sq", "offset": 1205760}]}
  ],
  "params": [
    {"name": "fc1.w", "shape": [784, 256], "dtype": "f32", "unit": "fc1", "trainable": true,
     "init": {"kind": "fan_in_uniform", "scale": 1.0}, "unit_offset": 0},
    {"name": "fc1.b", "shape": [256], "dtype": "f32", "unit": "fc1", "trainable": true,
     "init": {"kind": "zeros"}, "unit_offset": 200704}
  ],
  "inputs": [
    {"index": 0, "shape": [32, 784], "dtype": "f32", "role": "features", "offset": 1607680, "bytes": 100352},
    {"index": 1, "shape": [32], "dtype": "i32", "role": "classes", "bound": 10, "offset": 1708032, "bytes": 128}
  ]
})");
  EXPECT_EQ(manifest.worldSize(), 2);
  EXPECT_EQ(manifest.params[0].numElements(), 784 * 256);
  EXPECT_EQ(manifest.inputs[0].sampleElements(), 784);
}

TEST(Manifest, AllowTf32) {
  json m = classifierManifest();
  ASSERT_FALSE(m.contains("allow_tf32"));
  m["allow_tf32"] = true;
  EXPECT_TRUE(parseManifest(m.dump()).allowTf32);
  m["allow_tf32"] = false;
  EXPECT_FALSE(parseManifest(m.dump()).allowTf32);
}

// A CUDA trainer's step reads lr and step from the arena and leaves its loss
// there; without the field the step's return value is the loss.
TEST(Manifest, DeviceScalars) {
  json m = classifierManifest();
  EXPECT_FALSE(parseManifest(m.dump()).deviceScalars.has_value());
  // The 48 free bytes between the classes and exp_avg_sq hold the 32.
  m["device_scalars"] = {{"offset", 464}};
  Manifest manifest = parseManifest(m.dump());
  ASSERT_TRUE(manifest.deviceScalars.has_value());
  EXPECT_EQ(manifest.deviceScalars->offset, 464);
  m["device_scalars"]["offset"] = 480; // 8-byte aligned, just before exp_avg_sq
  EXPECT_EQ(parseManifest(m.dump()).deviceScalars->offset, 480);
}

TEST(Manifest, HybridGrid) {
  json m = classifierManifest();
  m["grid"] = {2, 4};
  m["strategy"] = "hybrid_shard";
  m["shard_ranks"] = 4;
  m["replicas"] = 2;
  m["batch"] = 32;
  EXPECT_EQ(parseManifest(m.dump()).worldSize(), 8);
}

/// The classifier on grid [2] x 2 tensor ranks: fc.w [3, 5] split along its
/// rows (each tensor rank holds a [3, 5] block of the whole [6, 5]), fc.b
/// replicated.
json tensorManifest() {
  json m = test::shardedClassifierManifest();
  m["tensor_ranks"] = 2;
  m["params"][0]["split_dim"] = 0;
  return m;
}

TEST(Manifest, TensorRanks) {
  Manifest plain = parseManifest(classifierManifest().dump());
  EXPECT_EQ(plain.tensorRanks, 1) << "absent: 1";
  EXPECT_FALSE(plain.params[0].splitDim);
  EXPECT_EQ(plain.params[0].wholeShape(), (std::vector<int64_t>{3, 5}));

  Manifest manifest = parseManifest(tensorManifest().dump());
  EXPECT_EQ(manifest.tensorRanks, 2);
  // The grid is the data-parallel one; the world holds the tensor ranks too.
  EXPECT_EQ(manifest.dataRanks(), 2);
  EXPECT_EQ(manifest.worldSize(), 4);
  const ParamSpec &w = manifest.params[0], &b = manifest.params[1];
  ASSERT_TRUE(w.splitDim);
  EXPECT_EQ(*w.splitDim, 0);
  EXPECT_EQ(w.tensorBlocks, 2);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{3, 5})) << "one block's";
  EXPECT_EQ(w.numElements(), 15);
  EXPECT_EQ(w.wholeShape(), (std::vector<int64_t>{6, 5}));
  EXPECT_EQ(w.wholeElements(), 30);
  EXPECT_FALSE(b.splitDim);
  EXPECT_EQ(b.tensorBlocks, 1);
  EXPECT_EQ(b.wholeShape(), (std::vector<int64_t>{5}));
  // Another tensor_ranks is another layout of the arena's world.
  EXPECT_EQ(
      persistentLayoutDifference(parseManifest(test::shardedClassifierManifest().dump()), manifest),
      "the batch or the grid");
  // A hybrid grid times tensor ranks.
  json hybrid = tensorManifest();
  hybrid["grid"] = {2, 2};
  hybrid["strategy"] = "hybrid_shard";
  hybrid["replicas"] = 2;
  hybrid["batch"] = 16;
  EXPECT_EQ(parseManifest(hybrid.dump()).worldSize(), 8);
}

// A fused product's weight: the split dimension's parts, each cut into the
// tensor ranks' blocks (whole sizes, summing to the whole dimension).
TEST(Manifest, SplitParts) {
  EXPECT_TRUE(parseManifest(tensorManifest().dump()).params[0].splitParts.empty()) << "absent";
  json m = tensorManifest();
  m["params"][0]["split_parts"] = {2, 4};
  Manifest manifest = parseManifest(m.dump());
  EXPECT_EQ(manifest.params[0].splitParts, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(manifest.params[0].wholeShape(), (std::vector<int64_t>{6, 5})) << "as without";
  EXPECT_TRUE(manifest.params[1].splitParts.empty());
}

TEST(ManifestError, InvalidJson) {
  EXPECT_EXIT(parseManifest("{\"version\": 2,"), ExitedWithCode(1),
              HasSubstr("trainer: error: manifest: invalid JSON: parse error at line 1"));
}

TEST(ManifestError, NumberBeyondDouble) {
  EXPECT_EXIT(parseManifest(R"({"version": 2, "arena_bytes": 1e400})"), ExitedWithCode(1),
              HasSubstr("trainer: error: manifest: invalid JSON: number overflow parsing '1e400'"));
}

TEST(ManifestError, NotAnObject) {
  EXPECT_EXIT(parseManifest("[1, 2]"), ExitedWithCode(1),
              HasSubstr("trainer: error: manifest: expected a JSON object, got [1,2]"));
}

TEST(ManifestError, EmptyText) {
  EXPECT_EXIT(parseManifest(""), ExitedWithCode(1),
              HasSubstr("trainer: error: manifest: invalid JSON"));
}

/// One field changed in an otherwise valid manifest, and the message it gives.
struct ErrorCase {
  const char *name;
  std::function<void(json &)> mutate;
  const char *message;
};

void PrintTo(const ErrorCase &c, std::ostream *os) { *os << c.name; }

// The compiler plans each gradient shard as a buffer of the step, after the
// persistent region; the runtime reads it there after the step.
TEST(Manifest, GradientShardInTheStepsBuffers) {
  json m = classifierManifest();
  m["units"][0]["grad_offset"] = 640;
  Manifest manifest = parseManifest(m.dump());
  EXPECT_EQ(manifest.units[0].gradOffset, 640);
}

class ManifestErrorTest : public testing::TestWithParam<ErrorCase> {};

TEST_P(ManifestErrorTest, ReportsTheField) {
  json m = classifierManifest();
  GetParam().mutate(m);
  std::string text = m.dump();
  EXPECT_EXIT(parseManifest(text), ExitedWithCode(1),
              HasSubstr(std::string("trainer: error: manifest: ") + GetParam().message));
}

json &param(json &m, int i) { return m["params"][i]; }
json &input(json &m, int i) { return m["inputs"][i]; }
json &unit(json &m) { return m["units"][0]; }

const ErrorCase kErrorCases[] = {
    {"MissingVersion", [](json &m) { m.erase("version"); }, "missing field 'version'"},
    {"Version1", [](json &m) { m["version"] = 1; },
     "version: this runtime reads version 2, got 1 (recompile the model with this fsdpc)"},
    {"Version3", [](json &m) { m["version"] = 3; },
     "version: this runtime reads version 2, got 3"},
    {"VersionString", [](json &m) { m["version"] = "2"; },
     "version: expected an integer, got \"2\""},
    {"NegativeArena", [](json &m) { m["arena_bytes"] = -1; },
     "arena_bytes: must be at least 0, got -1"},
    {"FractionalArena", [](json &m) { m["arena_bytes"] = 512.5; },
     "arena_bytes: expected an integer, got 512.5"},
    {"HugeArena", [](json &m) { m["arena_bytes"] = 18446744073709551615ULL; },
     "arena_bytes: integer 18446744073709551615 does not fit in 64 bits"},
    {"MissingPersistent", [](json &m) { m.erase("persistent_bytes"); },
     "missing field 'persistent_bytes'"},
    {"PersistentBeyondArena", [](json &m) { m["persistent_bytes"] = 769; },
     "persistent_bytes: must be at most 768, got 769"},
    {"ZeroBatch", [](json &m) { m["batch"] = 0; }, "batch: must be at least 1, got 0"},
    {"MissingBatch", [](json &m) { m.erase("batch"); }, "missing field 'batch'"},
    {"EmptyGrid", [](json &m) { m["grid"] = json::array(); },
     "grid: expected [shard] or [replicate, shard], got []"},
    {"GridNotArray", [](json &m) { m["grid"] = 2; }, "grid: expected an array, got 2"},
    {"ThreeDGrid", [](json &m) { m["grid"] = {1, 1, 1}; },
     "grid: expected [shard] or [replicate, shard], got [1,1,1]"},
    {"ZeroGrid", [](json &m) { m["grid"] = {0}; }, "grid[0]: must be at least 1, got 0"},
    {"HugeGrid",
     [](json &m) {
       m["grid"] = {65536, 65536};
       m["strategy"] = "hybrid_shard";
     },
     "grid: grid holds more than 2^31 - 1 ranks"},
    {"UnknownStrategy", [](json &m) { m["strategy"] = "zero3"; },
     "strategy: unknown strategy 'zero3'"},
    {"HybridOnOneDGrid", [](json &m) { m["strategy"] = "hybrid_shard"; },
     "strategy: hybrid_shard needs a 2-D grid [replicate, shard], got [1]"},
    {"TwoDGridWithoutHybrid", [](json &m) { m["grid"] = {2, 2}; },
     "strategy: a 2-D grid [2, 2] needs strategy hybrid_shard, got full_shard"},
    {"MissingShardRanks", [](json &m) { m.erase("shard_ranks"); },
     "missing field 'shard_ranks'"},
    {"ZeroReplicas", [](json &m) { m["replicas"] = 0; }, "replicas: must be at least 1, got 0"},
    {"RanksNotTheGrid", [](json &m) { m["replicas"] = 2; },
     "replicas: shard_ranks 1 x replicas 2 must be the 1 ranks of grid [1]"},
    {"FullShardNotOverTheGrid",
     [](json &m) {
       m["grid"] = {2};
       m["replicas"] = 2;
       m["batch"] = 8;
     },
     "shard_ranks: strategy full_shard shards over the whole grid [2]: expected 2, got 1"},
    {"NoShardWithShards",
     [](json &m) {
       m["grid"] = {2};
       m["strategy"] = "no_shard";
       m["shard_ranks"] = 2;
       m["batch"] = 8;
     },
     "shard_ranks: strategy no_shard keeps a whole copy on every rank: expected 1, got 2"},
    {"HybridShardsOverTheFirstDimension",
     [](json &m) {
       m["grid"] = {2, 4};
       m["strategy"] = "hybrid_shard";
       m["shard_ranks"] = 2;
       m["replicas"] = 4;
       m["batch"] = 32;
     },
     "shard_ranks: strategy hybrid_shard shards over the second dimension of grid [2, 4]: "
     "expected 4, got 2"},
    {"MissingLocalBatch", [](json &m) { m.erase("local_batch"); },
     "missing field 'local_batch'"},
    {"LocalBatchNotBatchOverRanks",
     [](json &m) {
       json sharded = test::shardedClassifierManifest();
       sharded["batch"] = 9;
       m = sharded;
     },
     "local_batch: local_batch 4 on each of 2 ranks must make up batch 9"},
    {"UnknownOptimizer", [](json &m) { m["optimizer"]["kind"] = "adam"; },
     "optimizer.kind: unknown optimizer 'adam' (expected sgd or adamw)"},
    {"OptimizerNotObject", [](json &m) { m["optimizer"] = "adamw"; },
     "optimizer: expected an object, got \"adamw\""},
    {"MissingLr", [](json &m) { m["optimizer"].erase("lr"); }, "optimizer: missing field 'lr'"},
    {"ZeroLr", [](json &m) { m["optimizer"]["lr"] = 0; }, "optimizer.lr: must be positive, got 0"},
    {"Beta1One", [](json &m) { m["optimizer"]["beta1"] = 1.0; },
     "optimizer.beta1: must be in [0, 1), got 1"},
    {"Beta2Negative", [](json &m) { m["optimizer"]["beta2"] = -0.5; },
     "optimizer.beta2: must be in [0, 1), got -0.5"},
    {"ZeroEps", [](json &m) { m["optimizer"]["eps"] = 0.0; },
     "optimizer.eps: must be positive, got 0"},
    {"NegativeWeightDecay", [](json &m) { m["optimizer"]["weight_decay"] = -0.1; },
     "optimizer.weight_decay: must be non-negative, got -0.1"},
    {"SgdWithoutMomentum",
     [](json &m) { m["optimizer"] = {{"kind", "sgd"}, {"lr", 0.1}, {"weight_decay", 0}}; },
     "optimizer: missing field 'momentum'"},
    {"SgdMomentumOne",
     [](json &m) {
       m["optimizer"] = {{"kind", "sgd"}, {"lr", 0.1}, {"momentum", 1}, {"weight_decay", 0}};
     },
     "optimizer.momentum: must be in [0, 1), got 1"},
    {"NegativeClip", [](json &m) { m["clip_grad_norm"] = -1; },
     "clip_grad_norm: must be non-negative (0 disables clipping), got -1"},
    {"ClipNotNumber", [](json &m) { m["clip_grad_norm"] = nullptr; },
     "clip_grad_norm: expected a number, got null"},
    {"AllowTf32Number", [](json &m) { m["allow_tf32"] = 1; },
     "allow_tf32: expected true or false, got 1"},
    {"AllowTf32String", [](json &m) { m["allow_tf32"] = "true"; },
     "allow_tf32: expected true or false, got \"true\""},
    {"AllowTf32Null", [](json &m) { m["allow_tf32"] = nullptr; },
     "allow_tf32: expected true or false, got null"},
    {"DeviceScalarsNotObject", [](json &m) { m["device_scalars"] = 464; },
     "device_scalars: expected an object, got 464"},
    {"DeviceScalarsWithoutOffset", [](json &m) { m["device_scalars"] = json::object(); },
     "device_scalars: missing field 'offset'"},
    {"DeviceScalarsNegative", [](json &m) { m["device_scalars"] = {{"offset", -16}}; },
     "device_scalars.offset: must be at least 0, got -16"},
    {"DeviceScalarsMisaligned", [](json &m) { m["device_scalars"] = {{"offset", 468}}; },
     "device_scalars.offset: offset 468 is not a multiple of the element size 8"},
    {"DeviceScalarsPastThePersistentPart", [](json &m) { m["device_scalars"] = {{"offset", 632}}; },
     "device_scalars.offset: bytes [632, 664) lie outside the persistent region of 640 bytes"},
    {"DeviceScalarsOverAnInput", [](json &m) { m["device_scalars"] = {{"offset", 424}}; },
     "input 0 [384, 432) and device scalars [424, 456) overlap"},
    {"DeviceScalarsOverTheClasses", [](json &m) { m["device_scalars"] = {{"offset", 456}}; },
     "input 1 [448, 464) and device scalars [456, 488) overlap"},
    {"DeviceScalarsOverState", [](json &m) { m["device_scalars"] = {{"offset", 504}}; },
     "device scalars [504, 536) and state 'exp_avg_sq' of unit 'fc' [512, 640) overlap"},
    {"UnitsNotArray", [](json &m) { m["units"] = json::object(); },
     "units: expected an array, got {}"},
    {"UnitNotObject", [](json &m) { unit(m) = 3; }, "units[0]: expected an object, got 3"},
    {"DuplicateUnit", [](json &m) { m["units"].push_back(unit(m)); },
     "units[1].name: duplicate unit name 'fc'"},
    {"IntegerUnit", [](json &m) { unit(m)["dtype"] = "i64"; },
     "units[0].dtype: units are f32 or bf16, got i64"},
    {"ZeroNumel", [](json &m) { unit(m)["numel"] = 0; },
     "units[0].numel: must be at least 1, got 0"},
    {"ZeroShardNumel", [](json &m) { unit(m)["shard_numel"] = 0; },
     "units[0].shard_numel: must be at least 1, got 0"},
    {"ShardsTooSmall", [](json &m) { unit(m)["shard_numel"] = 19; },
     "units[0].shard_numel: shard_ranks 1 x shard_numel 19 elements cannot hold the unit's "
     "numel 20"},
    {"ShardOverflow", [](json &m) { unit(m)["shard_numel"] = 4611686018427387904LL; },
     "units[0].shard_numel: shard_numel 4611686018427387904 x shard_ranks 1 has more than 2^63 "
     "bytes"},
    {"MisalignedParamShard", [](json &m) { unit(m)["param_offset"] = 2; },
     "units[0].param_offset: offset 2 is not a multiple of the element size 4"},
    {"ParamShardOutsidePersistent", [](json &m) { unit(m)["param_offset"] = 600; },
     "units[0].param_offset: bytes [600, 728) lie outside the persistent region of 640 bytes"},
    {"MissingGradOffset", [](json &m) { unit(m).erase("grad_offset"); },
     "units[0]: missing field 'grad_offset'"},
    {"GradShardOutsideArena", [](json &m) { unit(m)["grad_offset"] = 704; },
     "units[0].grad_offset: bytes [704, 832) lie outside the arena of 768 bytes"},
    {"FrozenUnitWithGradient", [](json &m) { unit(m)["trainable"] = false; },
     "units[0].grad_offset: frozen unit 'fc' has no gradient"},
    {"FrozenUnitWithState",
     [](json &m) {
       unit(m)["trainable"] = false;
       unit(m).erase("grad_offset");
     },
     "units[0].state: frozen unit 'fc' has no optimizer state"},
    {"SgdSlotUnderAdamw", [](json &m) { unit(m)["state"][0]["slot"] = "momentum"; },
     "units[0].state[0].slot: unknown slot 'momentum' for adamw (expected exp_avg or exp_avg_sq)"},
    {"AdamwSlotUnderSgd",
     [](json &m) {
       m["optimizer"] = {{"kind", "sgd"}, {"lr", 0.1}, {"momentum", 0.9}, {"weight_decay", 0}};
     },
     "units[0].state[0].slot: unknown slot 'exp_avg' for sgd (expected momentum)"},
    {"DuplicateSlot", [](json &m) { unit(m)["state"][1]["slot"] = "exp_avg"; },
     "units[0].state[1].slot: duplicate slot 'exp_avg' of unit 'fc'"},
    {"MissingSlot", [](json &m) { unit(m)["state"].erase(1); },
     "units[0].state: adamw needs slot 'exp_avg_sq' for unit 'fc'"},
    {"MissingMomentum",
     [](json &m) {
       m["optimizer"] = {{"kind", "sgd"}, {"lr", 0.1}, {"momentum", 0.9}, {"weight_decay", 0}};
       unit(m)["state"] = json::array();
     },
     "units[0].state: sgd with momentum needs slot 'momentum' for unit 'fc'"},
    {"StateOutsidePersistent", [](json &m) { unit(m)["state"][1]["offset"] = 576; },
     "units[0].state[1].offset: bytes [576, 704) lie outside the persistent region of 640 bytes"},
    {"ParamsNotArray", [](json &m) { m["params"] = json::object(); },
     "params: expected an array, got {}"},
    {"ParamNotObject", [](json &m) { param(m, 0) = 3; },
     "params[0]: expected an object, got 3"},
    {"NameNotString", [](json &m) { param(m, 0)["name"] = 3; },
     "params[0].name: expected a string, got 3"},
    {"EmptyName", [](json &m) { param(m, 0)["name"] = ""; },
     "params[0].name: parameter names must not be empty"},
    {"DuplicateName", [](json &m) { param(m, 1)["name"] = "fc.w"; },
     "params[1].name: duplicate parameter name 'fc.w'"},
    {"ZeroDimension", [](json &m) { param(m, 0)["shape"] = {3, 0}; },
     "params[0].shape[1]: must be at least 1, got 0"},
    {"ShapeNotArray", [](json &m) { param(m, 0)["shape"] = "3x5"; },
     "params[0].shape: expected an array, got \"3x5\""},
    {"ShapeOverflow", [](json &m) { param(m, 0)["shape"] = {4611686018427387904LL, 4}; },
     "params[0].shape: tensor of shape [4611686018427387904, 4] has more than 2^63 bytes"},
    {"UnknownDType", [](json &m) { param(m, 0)["dtype"] = "f16"; },
     "params[0].dtype: unknown dtype 'f16' (expected f32, bf16, i32 or i64)"},
    {"IntegerParam", [](json &m) { param(m, 0)["dtype"] = "i32"; },
     "params[0].dtype: parameters are f32 or bf16, got i32"},
    {"ParamDTypeNotTheUnits", [](json &m) { param(m, 1)["dtype"] = "bf16"; },
     "params[1].dtype: unit 'fc' is f32, got bf16"},
    {"MissingUnit", [](json &m) { param(m, 0).erase("unit"); },
     "params[0]: missing field 'unit'"},
    {"UnknownUnit", [](json &m) { param(m, 1)["unit"] = "fc2"; },
     "params[1].unit: no unit named 'fc2'"},
    {"TrainableNotBool", [](json &m) { param(m, 0)["trainable"] = "yes"; },
     "params[0].trainable: expected true or false, got \"yes\""},
    {"FrozenParamInTrainableUnit", [](json &m) { param(m, 1)["trainable"] = false; },
     "params[1].trainable: unit 'fc' is trainable, got false"},
    {"UnknownInit", [](json &m) { param(m, 0)["init"] = {{"kind", "xavier"}}; },
     "params[0].init.kind: unknown init kind 'xavier'"},
    {"ConstantWithoutValue", [](json &m) { param(m, 0)["init"] = {{"kind", "constant"}}; },
     "params[0].init: missing field 'value'"},
    {"NormalZeroStd",
     [](json &m) { param(m, 0)["init"] = {{"kind", "normal"}, {"mean", 0}, {"std", 0}}; },
     "params[0].init.std: must be positive, got 0"},
    {"NormalMeanString",
     [](json &m) { param(m, 0)["init"] = {{"kind", "normal"}, {"mean", "0"}, {"std", 1}}; },
     "params[0].init.mean: expected a number, got \"0\""},
    {"UniformEmpty",
     [](json &m) { param(m, 0)["init"] = {{"kind", "uniform"}, {"low", 1}, {"high", 1}}; },
     "params[0].init: uniform needs low < high, got [1, 1)"},
    {"FanInScaleNegative",
     [](json &m) { param(m, 0)["init"] = {{"kind", "fan_in_normal"}, {"scale", -1}}; },
     "params[0].init.scale: must be positive, got -1"},
    {"FanInOnVector",
     [](json &m) { param(m, 1)["init"] = {{"kind", "fan_in_uniform"}, {"scale", 1}}; },
     "params[1].init.kind: fan_in_uniform needs a parameter of rank 2 or more, got shape [5]"},
    {"MissingUnitOffset", [](json &m) { param(m, 1).erase("unit_offset"); },
     "params[1]: missing field 'unit_offset'"},
    {"NegativeUnitOffset", [](json &m) { param(m, 1)["unit_offset"] = -1; },
     "params[1].unit_offset: must be at least 0, got -1"},
    {"ParamOutsideUnit", [](json &m) { param(m, 1)["unit_offset"] = 16; },
     "params[1].unit_offset: elements [16, 21) lie outside unit 'fc' of 20 elements"},
    {"OverlappingParams", [](json &m) { param(m, 1)["unit_offset"] = 14; },
     "parameters 'fc.w' [0, 15) and 'fc.b' [14, 19) of unit 'fc' overlap"},
    {"InputsOutOfOrder", [](json &m) { input(m, 0)["index"] = 1; },
     "inputs[0].index: inputs must be listed in order: expected index 0, got 1"},
    {"ScalarInput", [](json &m) { input(m, 0)["shape"] = json::array(); },
     "inputs[0].shape: expected at least 1 dimension(s), got []"},
    {"InputWithoutLocalBatch", [](json &m) { input(m, 0)["shape"] = {8, 3}; },
     "inputs[0].shape: dimension 0 is this rank's batch dimension and must be local_batch 4, "
     "got shape [8, 3]"},
    {"InputWithGlobalBatch",
     [](json &m) {
       m = test::shardedClassifierManifest();
       input(m, 1)["shape"] = {8};
       input(m, 1)["bytes"] = 32;
     },
     "inputs[1].shape: dimension 0 is this rank's batch dimension and must be local_batch 4, "
     "got shape [8]"},
    {"UnknownRole", [](json &m) { input(m, 1)["role"] = "labels"; },
     "inputs[1].role: unknown role 'labels'"},
    {"FloatClasses", [](json &m) { input(m, 1)["dtype"] = "f32"; },
     "inputs[1].dtype: role classes needs i32 or i64 data, got f32"},
    {"IntegerFeatures", [](json &m) { input(m, 0)["dtype"] = "i32"; },
     "inputs[0].dtype: role features needs f32 or bf16 data, got i32"},
    {"FloatTokens",
     [](json &m) {
       input(m, 1)["role"] = "tokens";
       input(m, 1)["dtype"] = "bf16";
     },
     "inputs[1].dtype: role tokens needs i32 or i64 data, got bf16"},
    {"MissingBound", [](json &m) { input(m, 1).erase("bound"); },
     "inputs[1]: missing field 'bound'"},
    {"ZeroBound", [](json &m) { input(m, 1)["bound"] = 0; },
     "inputs[1].bound: must be at least 1, got 0"},
    {"BoundBeyondI32", [](json &m) { input(m, 1)["bound"] = 2147483649LL; },
     "inputs[1].bound: must be at most 2147483648, got 2147483649"},
    {"WrongInputBytes", [](json &m) { input(m, 0)["bytes"] = 96; },
     "inputs[0].bytes: the shape and dtype need 48 bytes, got 96"},
    {"MisalignedInput", [](json &m) { input(m, 1)["offset"] = 450; },
     "inputs[1].offset: offset 450 is not a multiple of the element size 4"},
    {"InputInTransientRegion", [](json &m) { input(m, 1)["offset"] = 640; },
     "inputs[1].offset: bytes [640, 656) lie outside the persistent region of 640 bytes"},
    {"OverlappingShards", [](json &m) { unit(m)["grad_offset"] = 64; },
     "parameter shard of unit 'fc' [0, 128) and gradient shard of unit 'fc' [64, 192) overlap"},
    {"InputOverState", [](json &m) { input(m, 1)["offset"] = 508; },
     "input 1 [508, 524) and state 'exp_avg_sq' of unit 'fc' [512, 640) overlap"},
    {"CollectiveKind", [](json &m) { m["collectives"] = {{{"kind", "broadcast"}, {"unit", "fc"}}}; },
     "collectives[0].kind: expected all_gather, reduce_scatter or all_reduce, got 'broadcast'"},
    {"CollectiveUnit", [](json &m) { m["collectives"] = {{{"kind", "all_gather"}, {"unit", "fc2"}}}; },
     "collectives[0].unit: no unit is named 'fc2'"},
    {"NegativeFlops",
     [](json &m) {
       m["step_flops"] = {{"products", -1}, {"bf16_products", 0}, {"attention", 0},
                          {"recomputed", 0}, {"other", 0}};
     },
     "step_flops.products: must be non-negative, got -1"},
    {"Bf16OverProducts",
     [](json &m) {
       m["step_flops"] = {{"products", 10}, {"bf16_products", 11}, {"attention", 0},
                          {"recomputed", 0}, {"other", 0}};
     },
     "step_flops.bf16_products: exceeds products (10)"},
    {"RecomputedOverWork",
     [](json &m) {
       m["step_flops"] = {{"products", 10}, {"bf16_products", 0}, {"attention", 5},
                          {"recomputed", 16}, {"other", 0}};
     },
     "step_flops.recomputed: exceeds products and attention (15)"},
    {"FlopsWithoutOther",
     [](json &m) {
       m["step_flops"] = {{"products", 10}, {"bf16_products", 0}, {"attention", 0},
                          {"recomputed", 0}};
     },
     "step_flops: missing field 'other'"},
    {"NoTokens", [](json &m) { m["tokens_per_step"] = 0; }, "tokens_per_step:"},
    {"ZeroTensorRanks", [](json &m) { m["tensor_ranks"] = 0; },
     "tensor_ranks: must be at least 1, got 0"},
    {"FractionalTensorRanks", [](json &m) { m["tensor_ranks"] = 1.5; },
     "tensor_ranks: expected an integer, got 1.5"},
    {"TooManyRanks",
     [](json &m) {
       m["grid"] = {65536};
       m["shard_ranks"] = 65536;
       m["batch"] = 4 * 65536;
       m["tensor_ranks"] = 32768;
     },
     "tensor_ranks: grid [65536] x 32768 tensor ranks holds more than 2^31 - 1 ranks"},
    {"LocalBatchOfDataIndices",
     [](json &m) {
       m["tensor_ranks"] = 2;
       m["batch"] = 8;
     },
     "local_batch: local_batch 4 on each of 1 data indices (the tensor ranks of one read the "
     "same rows) must make up batch 8"},
    {"SplitDimBeyondShape", [](json &m) { param(m, 0)["split_dim"] = 2; },
     "params[0].split_dim: expected a dimension of shape [3, 5], in [0, 2), got 2"},
    {"NegativeSplitDim", [](json &m) { param(m, 0)["split_dim"] = -1; },
     "params[0].split_dim: expected a dimension of shape [3, 5], in [0, 2), got -1"},
    {"SplitDimString", [](json &m) { param(m, 1)["split_dim"] = "0"; },
     "params[1].split_dim: expected an integer, got \"0\""},
    {"SplitScalar",
     [](json &m) {
       param(m, 1)["shape"] = json::array();
       param(m, 1)["split_dim"] = 0;
     },
     "params[1].split_dim: a parameter of shape [] has no dimension to split, got 0"},
    {"SplitTooLarge",
     [](json &m) {
       m["tensor_ranks"] = 1 << 30;
       m["params"][0]["shape"] = {int64_t(1) << 40, 1};
       m["params"][0]["split_dim"] = 0;
     },
     "params[0].split_dim: the whole parameter's dimension 0 does not fit in 64 bits"},
    {"SplitWholeTooLarge",
     [](json &m) {
       m["tensor_ranks"] = 1 << 20;
       m["params"][0]["shape"] = {int64_t(1) << 40, 8};
       m["params"][0]["split_dim"] = 0;
     },
     "params[0].shape: tensor of shape [1152921504606846976, 8] has more than 2^63 bytes"},
    {"SplitPartsWithoutSplitDim", [](json &m) { param(m, 0)["split_parts"] = {2, 1}; },
     "params[0].split_parts: expected only with split_dim, got [2,1] without it"},
    {"SplitPartsNotArray",
     [](json &m) {
       param(m, 0)["split_dim"] = 1;
       param(m, 0)["split_parts"] = "qkv";
     },
     "params[0].split_parts: expected an array, got \"qkv\""},
    {"OneSplitPart",
     [](json &m) {
       param(m, 0)["split_dim"] = 1;
       param(m, 0)["split_parts"] = {5};
     },
     "params[0].split_parts: expected at least 2 parts, got [5]"},
    {"EmptySplitPart",
     [](json &m) {
       param(m, 0)["split_dim"] = 1;
       param(m, 0)["split_parts"] = {5, 0};
     },
     "params[0].split_parts[1]: must be at least 1, got 0"},
    {"SplitPartOfUnevenBlocks",
     [](json &m) {
       m["tensor_ranks"] = 2;
       param(m, 0)["split_dim"] = 1;
       param(m, 0)["split_parts"] = {4, 5, 1};
     },
     "params[0].split_parts[1]: expected a multiple of tensor_ranks 2, got 5"},
    {"SplitPartsShort",
     [](json &m) {
       m["tensor_ranks"] = 2;
       param(m, 0)["split_dim"] = 1;
       param(m, 0)["split_parts"] = {4, 4};
     },
     "params[0].split_parts: expected parts summing to 10 (dimension 1 of the whole [3, 10]), "
     "got [4,4]"},
    {"SplitPartsLong",
     [](json &m) {
       param(m, 0)["split_dim"] = 0;
       param(m, 0)["split_parts"] = {2, 2};
     },
     "params[0].split_parts: expected parts summing to 3 (dimension 0 of the whole [3, 5]), "
     "got [2,2]"},
    {"SplitPartsBeyond64Bits",
     [](json &m) {
       param(m, 0)["split_dim"] = 0;
       param(m, 0)["split_parts"] = {2, std::numeric_limits<int64_t>::max()};
     },
     "params[0].split_parts: expected parts summing to 3 (dimension 0 of the whole [3, 5]), "
     "got [2,9223372036854775807]"},
    {"ProfileWithoutBf16",
     [](json &m) { m["device_profile"] = {{"name", "cpu"}, {"matmul_flops", {{"f32", 1e9}}}}; },
     "device_profile.matmul_flops: missing field 'bf16'"},
};

// The object's table of the kernels' places in the model: a line each.
TEST(Manifest, ParsesKernelOrigins) {
  EXPECT_TRUE(parseKernelOrigins(nullptr).empty());
  EXPECT_TRUE(parseKernelOrigins("").empty());
  KernelOrigins origins =
      parseKernelOrigins("fsdp_kernel_0\tgpt.mlir:26:3\nfsdp_kernel_1\tgpt.mlir:1:2, gpt.mlir:3:4\n");
  EXPECT_EQ(origins, (KernelOrigins{{"fsdp_kernel_0", "gpt.mlir:26:3"},
                                    {"fsdp_kernel_1", "gpt.mlir:1:2, gpt.mlir:3:4"}}));
}

// The collectives the step starts, in order: a unit's, or none's.
TEST(Manifest, ParsesTheStepsCollectives) {
  json m = classifierManifest();
  EXPECT_TRUE(parseManifest(m.dump()).collectives.empty()) << "optional";
  m["collectives"] = {{{"kind", "all_gather"}, {"unit", "fc"}},
                      {{"kind", "reduce_scatter"}, {"unit", "fc"}},
                      {{"kind", "all_reduce"}, {"unit", ""}}};
  std::vector<CollectiveSpec> collectives = parseManifest(m.dump()).collectives;
  ASSERT_EQ(collectives.size(), 3u);
  EXPECT_EQ(collectives[0].kind, "all_gather");
  EXPECT_EQ(collectives[1].kind, "reduce_scatter");
  EXPECT_EQ(collectives[1].unit, "fc");
  EXPECT_EQ(collectives[2].kind, "all_reduce");
  EXPECT_EQ(collectives[2].unit, "");
}

// What throughput and MFU are computed from: optional, read as given.
TEST(Manifest, ParsesTheStepsFlopsTokensAndProfile) {
  json m = classifierManifest();
  Manifest bare = parseManifest(m.dump());
  EXPECT_FALSE(bare.stepFlops);
  EXPECT_EQ(bare.tokensPerStep, 0);
  EXPECT_FALSE(bare.deviceProfile);
  m["step_flops"] = {{"products", 3000},
                     {"bf16_products", 1000},
                     {"attention", 500},
                     {"recomputed", 700},
                     {"other", 40}};
  m["tokens_per_step"] = 128;
  m["device_profile"] = {{"name", "cpu"}, {"matmul_flops", {{"f32", 1e11}, {"bf16", 2e11}}}};
  Manifest manifest = parseManifest(m.dump());
  ASSERT_TRUE(manifest.stepFlops);
  EXPECT_EQ(manifest.stepFlops->products, 3000);
  EXPECT_EQ(manifest.stepFlops->bf16Products, 1000);
  EXPECT_EQ(manifest.stepFlops->attention, 500);
  EXPECT_EQ(manifest.stepFlops->recomputed, 700);
  EXPECT_EQ(manifest.stepFlops->other, 40);
  EXPECT_EQ(manifest.tokensPerStep, 128);
  ASSERT_TRUE(manifest.deviceProfile);
  EXPECT_EQ(manifest.deviceProfile->name, "cpu");
  EXPECT_EQ(manifest.deviceProfile->f32, 1e11);
  EXPECT_EQ(manifest.deviceProfile->bf16, 2e11);
}

INSTANTIATE_TEST_SUITE_P(Manifest, ManifestErrorTest, testing::ValuesIn(kErrorCases),
                         [](const testing::TestParamInfo<ErrorCase> &info) {
                           return std::string(info.param.name);
                         });

/// The classifier with its unit offloaded (offload = optimizer): the arena
/// keeps a bf16 copy of the shard at param_offset 64 ([64, 128)); the host
/// arena of 512 bytes holds the gradient shard [0, 128) (bf16, with room for
/// f32), the f32 master [128, 256), exp_avg [256, 384) and exp_avg_sq
/// [384, 512). Every offset differs from the one it replaces, so that a field
/// read from the wrong place shows. The host offsets also repeat device
/// offsets (exp_avg_sq and features both start at 384): the two arenas are
/// apart.
json offloadedClassifierManifest() {
  json m = classifierManifest();
  m["host_arena_bytes"] = 512;
  json &fc = m["units"][0];
  fc.erase("grad_offset");
  fc["param_offset"] = 64;
  fc["param_dtype"] = "bf16";
  fc["host"] = {{"master_offset", 128}, {"grad_offset", 0}, {"grad_dtype", "bf16"}};
  fc["state"] = {{{"slot", "exp_avg"}, {"offset", 256}}, {{"slot", "exp_avg_sq"}, {"offset", 384}}};
  return m;
}

TEST(OffloadManifest, AnOffloadedUnitLivesInTheHostArena) {
  Manifest manifest = parseManifest(offloadedClassifierManifest().dump());
  EXPECT_EQ(manifest.hostArenaBytes, 512);
  ASSERT_EQ(manifest.units.size(), 1u);
  const UnitSpec &unit = manifest.units[0];
  EXPECT_TRUE(unit.offloaded);
  EXPECT_EQ(unit.dtype, DType::F32);
  // paramOffset is the f32 master in the host arena, not the device copy.
  EXPECT_EQ(unit.paramOffset, 128);
  EXPECT_EQ(unit.gradOffset, 0);
  EXPECT_EQ(unit.gradDType, DType::BF16);
  EXPECT_EQ(unit.deviceParamOffset, 64);
  EXPECT_EQ(unit.deviceParamDType, DType::BF16);
  ASSERT_EQ(unit.state.size(), 2u);
  EXPECT_EQ(unit.state[0].slot, "exp_avg");
  EXPECT_EQ(unit.state[0].offset, 256);
  EXPECT_EQ(unit.state[1].slot, "exp_avg_sq");
  EXPECT_EQ(unit.state[1].offset, 384);
  // The shard, its state and the gradient's room keep the unit's size.
  EXPECT_EQ(unit.shardBytes(), 128);
}

TEST(OffloadManifest, AnF32GradientAndDeviceCopy) {
  json m = offloadedClassifierManifest();
  m["units"][0]["param_dtype"] = "f32";
  m["units"][0]["param_offset"] = 0; // [0, 128) in f32
  m["units"][0]["host"]["grad_dtype"] = "f32";
  Manifest manifest = parseManifest(m.dump());
  EXPECT_EQ(manifest.units[0].gradDType, DType::F32);
  EXPECT_EQ(manifest.units[0].deviceParamDType, DType::F32);
  EXPECT_EQ(manifest.units[0].deviceParamOffset, 0);
}

TEST(OffloadManifest, WithoutOffloadThereIsNoHostArena) {
  Manifest manifest = parseManifest(classifierManifest().dump());
  EXPECT_EQ(manifest.hostArenaBytes, 0);
  EXPECT_FALSE(manifest.units[0].offloaded);
  EXPECT_EQ(manifest.units[0].gradDType, DType::F32);
  // A host arena no unit uses is harmless (0 is what the compiler writes
  // without offload).
  json m = classifierManifest();
  m["host_arena_bytes"] = 0;
  EXPECT_EQ(parseManifest(m.dump()).hostArenaBytes, 0);
  m["host_arena_bytes"] = 4096;
  EXPECT_EQ(parseManifest(m.dump()).hostArenaBytes, 4096);
}

// An offloaded unit beside one that is not: each unit's regions are checked
// in its own arena, so the second unit's shards may sit at the same offsets
// of the device arena as the first unit's master and state in the host arena.
TEST(OffloadManifest, OffloadedAndDeviceUnitsSideBySide) {
  json m = offloadedClassifierManifest();
  m["units"].push_back({{"name", "head"}, {"dtype", "f32"}, {"trainable", true}, {"numel", 4},
                        {"shard_numel", 16}, {"param_offset", 128}, {"grad_offset", 192},
                        {"state", {{{"slot", "exp_avg"}, {"offset", 256}},
                                   {{"slot", "exp_avg_sq"}, {"offset", 320}}}}});
  m["params"].push_back({{"name", "head.b"}, {"shape", {4}}, {"dtype", "f32"}, {"unit", "head"},
                         {"trainable", true}, {"init", {{"kind", "zeros"}}}, {"unit_offset", 0}});
  Manifest manifest = parseManifest(m.dump());
  ASSERT_EQ(manifest.units.size(), 2u);
  EXPECT_TRUE(manifest.units[0].offloaded);
  EXPECT_FALSE(manifest.units[1].offloaded);
  EXPECT_EQ(manifest.units[0].paramOffset, 128);
  EXPECT_EQ(manifest.units[1].paramOffset, 128);
  EXPECT_EQ(manifest.units[1].gradOffset, 192);
  EXPECT_EQ(manifest.units[1].state[0].offset, 256);
}

class OffloadManifestErrorTest : public testing::TestWithParam<ErrorCase> {};

TEST_P(OffloadManifestErrorTest, ReportsTheField) {
  json m = offloadedClassifierManifest();
  GetParam().mutate(m);
  std::string text = m.dump();
  EXPECT_EXIT(parseManifest(text), ExitedWithCode(1),
              HasSubstr(std::string("trainer: error: manifest: ") + GetParam().message));
}

json &host(json &m) { return m["units"][0]["host"]; }

const ErrorCase kOffloadErrorCases[] = {
    {"HostOnAFrozenUnit",
     [](json &m) {
       unit(m)["trainable"] = false;
       param(m, 0)["trainable"] = false;
       param(m, 1)["trainable"] = false;
     },
     "units[0].host: frozen unit 'fc' has no optimizer to offload"},
    {"ParamDTypeWithoutHost",
     [](json &m) {
       m = classifierManifest();
       unit(m)["param_dtype"] = "bf16";
     },
     "units[0].param_dtype: only an offloaded unit (with \"host\") has a param_dtype"},
    {"HostWithoutParamDType", [](json &m) { unit(m).erase("param_dtype"); },
     "units[0]: missing field 'param_dtype'"},
    {"IntegerParamDType", [](json &m) { unit(m)["param_dtype"] = "i32"; },
     "units[0].param_dtype: expected f32 or bf16, got i32"},
    {"IntegerGradDType", [](json &m) { host(m)["grad_dtype"] = "i64"; },
     "units[0].host.grad_dtype: expected f32 or bf16, got i64"},
    {"MissingMasterOffset", [](json &m) { host(m).erase("master_offset"); },
     "units[0].host: missing field 'master_offset'"},
    {"MissingHostGradOffset", [](json &m) { host(m).erase("grad_offset"); },
     "units[0].host: missing field 'grad_offset'"},
    {"HostNotAnObject", [](json &m) { unit(m)["host"] = 1; },
     "units[0].host: expected an object, got 1"},
    {"NegativeHostArena", [](json &m) { m["host_arena_bytes"] = -1; },
     "host_arena_bytes: must be at least 0, got -1"},
    // 448 + 128 bytes fit the persistent region (640), not the host arena.
    {"MasterOutsideTheHostArena", [](json &m) { host(m)["master_offset"] = 448; },
     "units[0].host.master_offset: bytes [448, 576) lie outside the host arena of 512 bytes"},
    {"MisalignedMaster", [](json &m) { host(m)["master_offset"] = 130; },
     "units[0].host.master_offset: offset 130 is not a multiple of the element size 4"},
    // The bf16 gradient's 64 bytes would fit at 448: its place needs room
    // for the gradient widened to f32 (shard_numel x 4 = 128 bytes).
    {"GradRoomForF32OutsideTheHostArena", [](json &m) { host(m)["grad_offset"] = 448; },
     "units[0].host.grad_offset: bytes [448, 576) lie outside the host arena of 512 bytes"},
    {"StateOutsideTheHostArena", [](json &m) { unit(m)["state"][1]["offset"] = 448; },
     "units[0].state[1].offset: bytes [448, 576) lie outside the host arena of 512 bytes"},
    // The device copy is 32 bf16 elements: 64 bytes, not the master's 128.
    {"DeviceCopyOutsideThePersistentRegion", [](json &m) { unit(m)["param_offset"] = 600; },
     "units[0].param_offset: bytes [600, 664) lie outside the persistent region of 640 bytes"},
    {"MisalignedDeviceCopy", [](json &m) { unit(m)["param_offset"] = 65; },
     "units[0].param_offset: offset 65 is not a multiple of the element size 2"},
    // Without host_arena_bytes the host arena is empty: nothing fits.
    {"HostWithoutHostArenaBytes", [](json &m) { m.erase("host_arena_bytes"); },
     "units[0].host.master_offset: bytes [128, 256) lie outside the host arena of 0 bytes"},
    {"MasterOverState", [](json &m) { host(m)["master_offset"] = 320; },
     "state 'exp_avg' of unit 'fc' [256, 384) and parameter shard of unit 'fc' [320, 448) "
     "overlap in the host arena\n"},
    // A bf16 gradient at 0 takes [0, 64), but its room for f32 reaches 128.
    {"GradRoomOverMaster", [](json &m) { host(m)["master_offset"] = 64; },
     "gradient shard of unit 'fc' [0, 128) and parameter shard of unit 'fc' [64, 192) overlap "
     "in the host arena\n"},
    // In the device arena: the message does not name the host arena.
    {"DeviceCopyOverAnInput", [](json &m) { unit(m)["param_offset"] = 432; },
     "device copy of the parameter shard of unit 'fc' [432, 496) and input 1 [448, 464) "
     "overlap\n"},
};

INSTANTIATE_TEST_SUITE_P(OffloadManifest, OffloadManifestErrorTest,
                         testing::ValuesIn(kOffloadErrorCases),
                         [](const testing::TestParamInfo<ErrorCase> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
