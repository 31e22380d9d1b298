//===- Manifest.cpp - The manifest a generated trainer embeds -------------===//
//
// Validation mirrors the dialect's verifiers (lib/IR/FSDPAttrs.cpp) where the
// manifest repeats what the model said, and adds what only the compiler's
// layout decides: how the grid splits into shards and replicas, units and
// where their parameters lie, offsets inside the persistent region, sizes and
// disjointness. Unknown keys are ignored so that the compiler can add fields
// before the runtime reads them.
//
// Keys are looked up, and named in messages, through ManifestSchema.h, the
// table the compiler's writer spells them from too: a misspelt key fails to
// compile rather than reading as an absent field.
//
//===----------------------------------------------------------------------===//

#include "abi/Manifest.h"

#include "abi/Error.h"
#include "fsdprt/ManifestSchema.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

namespace fsdprt {

using json = nlohmann::json;
// An alias, not `using namespace`: `manifest` and its objects' namespaces
// (unit, param, input, init) are also the names of variables below.
namespace schema = manifest;

namespace {

/// A JSON value with the path that names it in messages (`params[0].shape`).
class Node {
public:
  Node(const json &value, std::string path) : value(value), path(std::move(path)) {}

  [[noreturn]] void fail(const std::string &what) const {
    fatal("manifest: " + (path.empty() ? std::string() : path + ": ") + what);
  }

  // Keys come only from the schema: there is no overload taking a string.
  bool has(const schema::Field &field) const {
    return value.is_object() && value.contains(field.key);
  }

  Node field(const schema::Field &field) const {
    if (!value.is_object())
      fail("expected an object, got " + excerpt());
    auto it = value.find(field.key);
    if (it == value.end())
      fail(std::string("missing field '") + field.key + "'");
    return Node(*it, path.empty() ? std::string(field.key) : path + "." + field.key);
  }

  size_t arraySize() const {
    if (!value.is_array())
      fail("expected an array, got " + excerpt());
    return value.size();
  }

  Node element(size_t i) const { return Node(value[i], path + "[" + std::to_string(i) + "]"); }

  int64_t integer(int64_t min = std::numeric_limits<int64_t>::min(),
                  int64_t max = std::numeric_limits<int64_t>::max()) const {
    int64_t result;
    if (value.is_number_unsigned()) {
      uint64_t wide = value.get<uint64_t>();
      if (wide > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail("integer " + value.dump() + " does not fit in 64 bits");
      result = static_cast<int64_t>(wide);
    } else if (value.is_number_integer()) {
      result = value.get<int64_t>();
    } else {
      fail("expected an integer, got " + excerpt());
    }
    if (result < min)
      fail("must be at least " + std::to_string(min) + ", got " + std::to_string(result));
    if (result > max)
      fail("must be at most " + std::to_string(max) + ", got " + std::to_string(result));
    return result;
  }

  double real() const {
    if (!value.is_number())
      fail("expected a number, got " + excerpt());
    // The parser rejects numbers beyond double, and JSON has no NaN: every
    // number is finite.
    return value.get<double>();
  }

  std::string string() const {
    if (!value.is_string())
      fail("expected a string, got " + excerpt());
    return value.get<std::string>();
  }

  bool boolean() const {
    if (!value.is_boolean())
      fail("expected true or false, got " + excerpt());
    return value.get<bool>();
  }

  /// The value as JSON text, shortened: enough to recognise it in a message.
  std::string excerpt() const {
    std::string text = value.dump();
    if (text.size() > 40)
      text = text.substr(0, 37) + "...";
    return text;
  }

  const json &value;
  std::string path;
};

/// A byte range of the arena, for the disjointness check.
struct Region {
  int64_t offset;
  int64_t bytes;
  std::string what;
};

} // namespace

/// The names of a schema table's entries, for messages: `a, b, c or d`.
template <typename Spec, size_t N> static std::string namesOf(const Spec (&table)[N]) {
  std::string names;
  for (size_t i = 0; i < N; ++i)
    names += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + table[i].name;
  return names;
}

static std::vector<int64_t> readShape(const Node &node, int64_t minRank) {
  size_t rank = node.arraySize();
  if (static_cast<int64_t>(rank) < minRank)
    node.fail("expected at least " + std::to_string(minRank) + " dimension(s), got " +
              node.excerpt());
  std::vector<int64_t> shape;
  for (size_t i = 0; i < rank; ++i)
    shape.push_back(node.element(i).integer(1));
  return shape;
}

/// The byte size of a tensor, or a failure when it does not fit in int64.
static int64_t tensorBytes(const Node &shapeNode, const std::vector<int64_t> &shape, DType dtype) {
  int64_t bytes = static_cast<int64_t>(dtypeSize(dtype));
  for (int64_t dim : shape)
    if (__builtin_mul_overflow(bytes, dim, &bytes))
      shapeNode.fail("tensor of shape " + formatShape(shape) + " has more than 2^63 bytes");
  return bytes;
}

static DType readDType(const Node &node) {
  std::string name = node.string();
  std::optional<DType> dtype = parseDType(name);
  if (!dtype)
    node.fail("unknown dtype '" + name + "' (expected " + namesOf(schema::kDTypes) + ")");
  return *dtype;
}

/// Checks that `bytes` bytes at `offset`, of elements of `alignment` bytes,
/// lie inside the persistent region (where everything the manifest places
/// lives); `node` is the offset's field, which messages name.
/// `bytes` at `offset` are aligned to `alignment` and within the first `limit`
/// bytes of the arena (`what` names that part).
static void checkWithin(const Node &node, int64_t limit, const char *what, int64_t offset,
                        int64_t bytes, size_t alignment) {
  if (offset % static_cast<int64_t>(alignment) != 0)
    node.fail("offset " + std::to_string(offset) + " is not a multiple of the element size " +
              std::to_string(alignment));
  if (bytes > limit || offset < 0 || offset > limit - bytes)
    node.fail("bytes [" + std::to_string(offset) + ", " + std::to_string(offset + bytes) +
              ") lie outside the " + what + " of " + std::to_string(limit) + " bytes");
}

static void checkPersistent(const Node &node, const Manifest &manifest, int64_t offset,
                            int64_t bytes, size_t alignment) {
  checkWithin(node, manifest.persistentBytes, "persistent region", offset, bytes, alignment);
}

/// Reads `offset` and `bytes` of an input and checks they fit.
static void readPlacement(const Node &node, const Manifest &manifest, int64_t expectedBytes,
                          size_t alignment, int64_t &offset, int64_t &bytes) {
  Node offsetNode = node.field(schema::input::kOffset);
  offset = offsetNode.integer(0);
  Node bytesNode = node.field(schema::input::kBytes);
  bytes = bytesNode.integer(1);
  if (bytes != expectedBytes)
    bytesNode.fail("the shape and dtype need " + std::to_string(expectedBytes) + " bytes, got " +
                   std::to_string(bytes));
  checkPersistent(offsetNode, manifest, offset, bytes, alignment);
}

static InitSpec readInit(const Node &node, const std::vector<int64_t> &shape) {
  InitSpec init;
  Node kindNode = node.field(schema::init::kKind);
  std::string kind = kindNode.string();
  auto positive = [](const Node &field) {
    double value = field.real();
    if (!(value > 0.0))
      field.fail("must be positive, got " + formatReal(value));
    return value;
  };
  if (kind == "zeros") {
    init.kind = InitKind::Zeros;
  } else if (kind == "ones") {
    init.kind = InitKind::Ones;
  } else if (kind == "constant") {
    init.kind = InitKind::Constant;
    init.value = node.field(schema::init::kValue).real();
  } else if (kind == "normal") {
    init.kind = InitKind::Normal;
    init.mean = node.field(schema::init::kMean).real();
    init.std = positive(node.field(schema::init::kStd));
  } else if (kind == "uniform") {
    init.kind = InitKind::Uniform;
    init.low = node.field(schema::init::kLow).real();
    init.high = node.field(schema::init::kHigh).real();
    if (!(init.low < init.high))
      node.fail(std::string("uniform needs ") + schema::init::kLow.key + " < " +
                schema::init::kHigh.key + ", got [" + formatReal(init.low) + ", " +
                formatReal(init.high) + ")");
  } else if (kind == "fan_in_normal" || kind == "fan_in_uniform") {
    init.kind = kind == "fan_in_normal" ? InitKind::FanInNormal : InitKind::FanInUniform;
    init.scale = positive(node.field(schema::init::kScale));
    // fan_in is the product of every dimension but the last.
    if (shape.size() < 2)
      kindNode.fail(kind + " needs a parameter of rank 2 or more, got shape " + formatShape(shape));
  } else {
    kindNode.fail("unknown init kind '" + kind +
                  "' (expected zeros, ones, constant, normal, uniform, fan_in_normal or "
                  "fan_in_uniform)");
  }
  return init;
}

static void readOptimizer(const Node &node, OptimizerSpec &optimizer) {
  auto unitInterval = [](const Node &field) {
    double value = field.real();
    if (!(value >= 0.0 && value < 1.0))
      field.fail("must be in [0, 1), got " + formatReal(value));
    return value;
  };
  auto nonNegative = [](const Node &field) {
    double value = field.real();
    if (!(value >= 0.0))
      field.fail("must be non-negative, got " + formatReal(value));
    return value;
  };
  Node kindNode = node.field(schema::optimizer::kKind);
  std::string kind = kindNode.string();
  if (kind == "sgd") {
    optimizer.kind = OptimizerKind::SGD;
  } else if (kind == "adamw") {
    optimizer.kind = OptimizerKind::AdamW;
  } else {
    kindNode.fail("unknown optimizer '" + kind + "' (expected sgd or adamw)");
  }
  Node lrNode = node.field(schema::optimizer::kLr);
  optimizer.lr = lrNode.real();
  if (!(optimizer.lr > 0.0))
    lrNode.fail("must be positive, got " + formatReal(optimizer.lr));
  if (optimizer.kind == OptimizerKind::SGD) {
    optimizer.momentum = unitInterval(node.field(schema::optimizer::kMomentum));
  } else {
    optimizer.beta1 = unitInterval(node.field(schema::optimizer::kBeta1));
    optimizer.beta2 = unitInterval(node.field(schema::optimizer::kBeta2));
    Node epsNode = node.field(schema::optimizer::kEps);
    optimizer.eps = epsNode.real();
    if (!(optimizer.eps > 0.0))
      epsNode.fail("must be positive, got " + formatReal(optimizer.eps));
  }
  optimizer.weightDecay = nonNegative(node.field(schema::optimizer::kWeightDecay));
}

/// tensor_ranks (1 when absent), after the grid: the world holds both.
static void readTensorRanks(const Node &root, Manifest &manifest) {
  if (!root.has(schema::root::kTensorRanks))
    return;
  Node node = root.field(schema::root::kTensorRanks);
  manifest.tensorRanks = node.integer(1, schema::kMaxRanks);
  if (manifest.dataRanks() > schema::kMaxRanks / manifest.tensorRanks)
    node.fail("grid " + formatShape(manifest.grid) + " x " + std::to_string(manifest.tensorRanks) +
              " tensor ranks holds more than 2^31 - 1 ranks");
}

/// The grid and the strategy, by the grid's rules of fsdprt/ManifestSchema.h.
static const schema::StrategySpec &readGridAndStrategy(const Node &root, Manifest &manifest) {
  Node gridNode = root.field(schema::root::kGrid);
  size_t rank = gridNode.arraySize();
  if (rank < 1 || rank > schema::kMaxGridDims)
    gridNode.fail("expected [shard] or [replicate, shard], got " + gridNode.excerpt());
  int64_t worldSize = 1;
  for (size_t i = 0; i < rank; ++i) {
    int64_t size = gridNode.element(i).integer(1, schema::kMaxRanks);
    manifest.grid.push_back(size);
    worldSize *= size;
    if (worldSize > schema::kMaxRanks)
      gridNode.fail("grid holds more than 2^31 - 1 ranks");
  }

  readTensorRanks(root, manifest);

  Node strategyNode = root.field(schema::root::kStrategy);
  manifest.strategy = strategyNode.string();
  const schema::StrategySpec *strategy = schema::findByName(schema::kStrategies, manifest.strategy);
  if (!strategy)
    strategyNode.fail("unknown strategy '" + manifest.strategy + "' (expected " +
                      namesOf(schema::kStrategies) + ")");
  if (!schema::gridDimsFit(*strategy, rank))
    strategyNode.fail(rank == 1
                          ? manifest.strategy + " needs a 2-D grid [replicate, shard], got " +
                                formatShape(manifest.grid)
                          : "a 2-D grid " + formatShape(manifest.grid) + " needs strategy " +
                                schema::strategy::kHybridShard.name + ", got " + manifest.strategy);
  return *strategy;
}

/// Why a strategy's copy of the model spans the ranks it does, for messages.
static std::string shardRanksReason(const schema::StrategySpec &strategy,
                                    const std::vector<int64_t> &grid) {
  switch (strategy.shards) {
  case schema::ShardRanks::OneRank:
    return "keeps a whole copy on every rank";
  case schema::ShardRanks::SecondDimension:
    return "shards over the second dimension of grid " + formatShape(grid);
  case schema::ShardRanks::WholeGrid:
    break;
  }
  return "shards over the whole grid " + formatShape(grid);
}

/// shard_ranks and replicas: the grid read as replicas x shard_ranks, which
/// the strategy decides (schema::shardRanksOf).
static void readRanks(const Node &root, const schema::StrategySpec &strategy, Manifest &manifest) {
  Node shardNode = root.field(schema::root::kShardRanks);
  manifest.shardRanks = shardNode.integer(1, schema::kMaxRanks);
  Node replicasNode = root.field(schema::root::kReplicas);
  manifest.replicas = replicasNode.integer(1, schema::kMaxRanks);
  // The grid is the data-parallel one: the tensor ranks are not in it.
  int64_t world = manifest.dataRanks();
  int64_t product;
  if (__builtin_mul_overflow(manifest.shardRanks, manifest.replicas, &product) ||
      product != world)
    replicasNode.fail(std::string(schema::root::kShardRanks.key) + " " +
                      std::to_string(manifest.shardRanks) + " x " + schema::root::kReplicas.key +
                      " " + std::to_string(manifest.replicas) + " must be the " +
                      std::to_string(world) + " ranks of grid " + formatShape(manifest.grid));
  int64_t expected = schema::shardRanksOf(strategy, manifest.grid);
  if (manifest.shardRanks != expected)
    shardNode.fail("strategy " + manifest.strategy + " " +
                   shardRanksReason(strategy, manifest.grid) + ": expected " +
                   std::to_string(expected) + ", got " + std::to_string(manifest.shardRanks));

  Node localNode = root.field(schema::root::kLocalBatch);
  manifest.localBatch = localNode.integer(1);
  int64_t rows;
  if (__builtin_mul_overflow(manifest.localBatch, world, &rows) || rows != manifest.batch)
    localNode.fail(std::string(schema::root::kLocalBatch.key) + " " +
                   std::to_string(manifest.localBatch) + " on each of " + std::to_string(world) +
                   (manifest.tensorRanks == 1 ? " ranks"
                                              : " data indices (the tensor ranks "
                                                "of one read the same rows)") +
                   " must make up " + schema::root::kBatch.key + " " +
                   std::to_string(manifest.batch));
}

std::vector<std::string> optimizerSlots(const OptimizerSpec &optimizer) {
  if (optimizer.kind == OptimizerKind::AdamW)
    return {"exp_avg", "exp_avg_sq"};
  if (optimizer.momentum > 0.0)
    return {"momentum"};
  return {};
}

/// Checks a region of a unit's: in the host arena if the unit is offloaded,
/// else in the arena's persistent part.
static void checkUnitRegion(const Node &node, const Manifest &manifest, const UnitSpec &unit,
                            int64_t offset, int64_t bytes, size_t alignment) {
  if (unit.offloaded)
    checkWithin(node, manifest.hostArenaBytes, "host arena", offset, bytes, alignment);
  else
    checkPersistent(node, manifest, offset, bytes, alignment);
}

static void readUnitState(const Node &unitNode, const Manifest &manifest, UnitSpec &unit) {
  Node list = unitNode.field(schema::unit::kState);
  bool sgd = manifest.optimizer.kind == OptimizerKind::SGD;
  std::vector<std::string> required = optimizerSlots(manifest.optimizer);
  for (size_t i = 0, e = list.arraySize(); i < e; ++i) {
    Node node = list.element(i);
    SlotSpec slot;
    Node slotNode = node.field(schema::state_slot::kSlot);
    slot.slot = slotNode.string();
    // SGD without momentum keeps nothing, but a momentum slot is harmless.
    bool known = sgd ? slot.slot == "momentum"
                     : (slot.slot == "exp_avg" || slot.slot == "exp_avg_sq");
    if (!known)
      slotNode.fail("unknown slot '" + slot.slot + "' for " + (sgd ? "sgd" : "adamw") +
                    " (expected " + (sgd ? "momentum" : "exp_avg or exp_avg_sq") + ")");
    for (const SlotSpec &other : unit.state)
      if (other.slot == slot.slot)
        slotNode.fail("duplicate slot '" + slot.slot + "' of unit '" + unit.name + "'");
    Node offsetNode = node.field(schema::state_slot::kOffset);
    slot.offset = offsetNode.integer(0);
    // The state's element type is the compiler's choice (e.g. f32 state for
    // bf16 parameters); the unit's dtype is the narrowest it can be.
    checkUnitRegion(offsetNode, manifest, unit, slot.offset, unit.shardBytes(),
                    dtypeSize(unit.dtype));
    unit.state.push_back(std::move(slot));
  }
  for (const std::string &name : required)
    if (std::none_of(unit.state.begin(), unit.state.end(),
                     [&](const SlotSpec &slot) { return slot.slot == name; }))
      list.fail(std::string(sgd ? "sgd with momentum" : "adamw") + " needs slot '" + name +
                "' for unit '" + unit.name + "'");
}

/// An offloaded unit: param_offset is the device's copy in param_dtype; its
/// "host" object places the master shard and the gradient in the host arena.
static void readOffloadedUnit(const Node &node, const Manifest &manifest, UnitSpec &unit) {
  Node hostNode = node.field(schema::unit::kHost);
  if (!unit.trainable)
    hostNode.fail("frozen unit '" + unit.name + "' has no optimizer to offload");
  unit.offloaded = true;
  Node dtypeNode = node.field(schema::unit::kParamDtype);
  unit.deviceParamDType = readDType(dtypeNode);
  if (!isFloatDType(unit.deviceParamDType))
    dtypeNode.fail(std::string("expected f32 or bf16, got ") + dtypeName(unit.deviceParamDType));
  unit.deviceParamOffset = unit.paramOffset;
  size_t deviceSize = dtypeSize(unit.deviceParamDType);
  checkPersistent(node.field(schema::unit::kParamOffset), manifest, unit.deviceParamOffset,
                  unit.shardNumel * static_cast<int64_t>(deviceSize), deviceSize);
  Node masterNode = hostNode.field(schema::unit_host::kMasterOffset);
  unit.paramOffset = masterNode.integer(0);
  checkUnitRegion(masterNode, manifest, unit, unit.paramOffset, unit.shardBytes(),
                  dtypeSize(unit.dtype));
  Node gradDTypeNode = hostNode.field(schema::unit_host::kGradDtype);
  unit.gradDType = readDType(gradDTypeNode);
  if (!isFloatDType(unit.gradDType))
    gradDTypeNode.fail(std::string("expected f32 or bf16, got ") + dtypeName(unit.gradDType));
  Node gradNode = hostNode.field(schema::unit_host::kGradOffset);
  unit.gradOffset = gradNode.integer(0);
  // Room for the gradient widened to f32 in place (--trace-state).
  checkUnitRegion(gradNode, manifest, unit, unit.gradOffset, unit.shardNumel * 4, 4);
}

static void readUnits(const Node &root, Manifest &manifest) {
  Node list = root.field(schema::root::kUnits);
  std::set<std::string> names;
  for (size_t i = 0, e = list.arraySize(); i < e; ++i) {
    Node node = list.element(i);
    UnitSpec unit;
    Node nameNode = node.field(schema::unit::kName);
    unit.name = nameNode.string();
    if (!names.insert(unit.name).second)
      nameNode.fail("duplicate unit name '" + unit.name + "'");
    Node dtypeNode = node.field(schema::unit::kDtype);
    unit.dtype = readDType(dtypeNode);
    if (!isFloatDType(unit.dtype))
      dtypeNode.fail(std::string("units are f32 or bf16, got ") + dtypeName(unit.dtype));
    unit.trainable = node.field(schema::unit::kTrainable).boolean();
    unit.numel = node.field(schema::unit::kNumel).integer(1);
    Node shardNode = node.field(schema::unit::kShardNumel);
    unit.shardNumel = shardNode.integer(1);
    // The whole flat buffer (every rank's shard) must have a size in bytes.
    int64_t flatBytes;
    if (__builtin_mul_overflow(unit.shardNumel, manifest.shardRanks, &flatBytes) ||
        __builtin_mul_overflow(flatBytes, static_cast<int64_t>(dtypeSize(unit.dtype)),
                               &flatBytes))
      shardNode.fail(std::string(schema::unit::kShardNumel.key) + " " +
                     std::to_string(unit.shardNumel) + " x " + schema::root::kShardRanks.key + " " +
                     std::to_string(manifest.shardRanks) + " has more than 2^63 bytes");
    if (unit.numel > unit.shardNumel * manifest.shardRanks)
      shardNode.fail(std::string(schema::root::kShardRanks.key) + " " +
                     std::to_string(manifest.shardRanks) + " x " + schema::unit::kShardNumel.key +
                     " " + std::to_string(unit.shardNumel) + " elements cannot hold the unit's " +
                     schema::unit::kNumel.key + " " + std::to_string(unit.numel));
    size_t elementSize = dtypeSize(unit.dtype);
    Node paramNode = node.field(schema::unit::kParamOffset);
    unit.paramOffset = paramNode.integer(0);
    if (node.has(schema::unit::kHost)) {
      readOffloadedUnit(node, manifest, unit);
    } else {
      checkPersistent(paramNode, manifest, unit.paramOffset, unit.shardBytes(), elementSize);
      if (node.has(schema::unit::kParamDtype))
        node.field(schema::unit::kParamDtype)
            .fail(std::string("only an offloaded unit (with \"") + schema::unit::kHost.key +
                  "\") has a " + schema::unit::kParamDtype.key);
    }
    if (unit.offloaded) {
      readUnitState(node, manifest, unit);
    } else if (unit.trainable) {
      Node gradNode = node.field(schema::unit::kGradOffset);
      unit.gradOffset = gradNode.integer(0);
      // The gradient shard is a buffer of the step, anywhere in the arena
      // (the compiler plans it to hold the gradient until the step returns).
      checkWithin(gradNode, manifest.arenaBytes, "arena", unit.gradOffset, unit.shardBytes(),
                  elementSize);
      readUnitState(node, manifest, unit);
    } else {
      if (node.has(schema::unit::kGradOffset))
        node.field(schema::unit::kGradOffset)
            .fail("frozen unit '" + unit.name + "' has no gradient");
      if (node.has(schema::unit::kState) && node.field(schema::unit::kState).arraySize() != 0)
        node.field(schema::unit::kState)
            .fail("frozen unit '" + unit.name + "' has no optimizer state");
    }
    manifest.units.push_back(std::move(unit));
  }
}

/// split_dim, when present: a dimension of the parameter, whose whole
/// (tensor_ranks blocks along it) must still fit in 2^63 bytes.
static void readSplitDim(const Node &node, const Node &shapeNode, const Manifest &manifest,
                         ParamSpec &param) {
  if (!node.has(schema::param::kSplitDim))
    return;
  Node splitNode = node.field(schema::param::kSplitDim);
  int64_t dim = splitNode.integer();
  int64_t rank = static_cast<int64_t>(param.shape.size());
  if (dim < 0 || dim >= rank)
    splitNode.fail(
        rank == 0 ? "a parameter of shape [] has no dimension to split, got " + std::to_string(dim)
                  : "expected a dimension of shape " + formatShape(param.shape) + ", in [0, " +
                        std::to_string(rank) + "), got " + std::to_string(dim));
  int64_t whole;
  if (__builtin_mul_overflow(param.shape[static_cast<size_t>(dim)], manifest.tensorRanks, &whole))
    splitNode.fail("the whole parameter's dimension " + std::to_string(dim) +
                   " does not fit in 64 bits");
  param.splitDim = dim;
  param.tensorBlocks = manifest.tensorRanks;
  tensorBytes(shapeNode, param.wholeShape(), param.dtype);
}

/// split_parts, when present: the whole sizes of split_dim's parts, each cut
/// into tensor_ranks equal blocks, so that every block holds a share of each
/// (at least two: one part is plain split_dim), together the whole dimension.
static void readSplitParts(const Node &node, const Manifest &manifest, ParamSpec &param) {
  if (!node.has(schema::param::kSplitParts))
    return;
  Node partsNode = node.field(schema::param::kSplitParts);
  if (!param.splitDim)
    partsNode.fail(std::string("expected only with ") + schema::param::kSplitDim.key + ", got " +
                   partsNode.excerpt() + " without it");
  size_t count = partsNode.arraySize();
  if (count < 2)
    partsNode.fail("expected at least 2 parts, got " + partsNode.excerpt());
  std::vector<int64_t> wholeShape = param.wholeShape();
  int64_t whole = wholeShape[static_cast<size_t>(*param.splitDim)], sum = 0;
  auto wrongSum = [&] {
    partsNode.fail("expected parts summing to " + std::to_string(whole) + " (dimension " +
                   std::to_string(*param.splitDim) + " of the whole " + formatShape(wholeShape) +
                   "), got " + partsNode.excerpt());
  };
  std::vector<int64_t> parts;
  for (size_t i = 0; i < count; ++i) {
    Node partNode = partsNode.element(i);
    int64_t part = partNode.integer(1);
    if (part % manifest.tensorRanks != 0)
      partNode.fail("expected a multiple of " + std::string(schema::root::kTensorRanks.key) + " " +
                    std::to_string(manifest.tensorRanks) + ", got " + std::to_string(part));
    if (__builtin_add_overflow(sum, part, &sum) || sum > whole)
      wrongSum();
    parts.push_back(part);
  }
  if (sum != whole)
    wrongSum();
  param.splitParts = std::move(parts);
}

static void readParams(const Node &root, Manifest &manifest) {
  Node list = root.field(schema::root::kParams);
  std::set<std::string> names;
  for (size_t i = 0, e = list.arraySize(); i < e; ++i) {
    Node node = list.element(i);
    ParamSpec param;
    Node nameNode = node.field(schema::param::kName);
    param.name = nameNode.string();
    if (param.name.empty())
      nameNode.fail("parameter names must not be empty");
    if (!names.insert(param.name).second)
      nameNode.fail("duplicate parameter name '" + param.name + "'");
    Node shapeNode = node.field(schema::param::kShape);
    param.shape = readShape(shapeNode, 0);
    Node dtypeNode = node.field(schema::param::kDtype);
    param.dtype = readDType(dtypeNode);
    if (!isFloatDType(param.dtype))
      dtypeNode.fail(std::string("parameters are f32 or bf16, got ") + dtypeName(param.dtype));
    tensorBytes(shapeNode, param.shape, param.dtype);
    readSplitDim(node, shapeNode, manifest, param);
    readSplitParts(node, manifest, param);

    Node unitNode = node.field(schema::param::kUnit);
    param.unit = unitNode.string();
    auto unit = std::find_if(manifest.units.begin(), manifest.units.end(),
                             [&](const UnitSpec &u) { return u.name == param.unit; });
    if (unit == manifest.units.end())
      unitNode.fail("no unit named '" + param.unit + "'");
    param.unitIndex = static_cast<size_t>(unit - manifest.units.begin());
    // One flat buffer has one element type and one gradient (or none).
    if (param.dtype != unit->dtype)
      dtypeNode.fail("unit '" + unit->name + "' is " + dtypeName(unit->dtype) + ", got " +
                     dtypeName(param.dtype));
    Node trainableNode = node.field(schema::param::kTrainable);
    param.trainable = trainableNode.boolean();
    if (param.trainable != unit->trainable)
      trainableNode.fail("unit '" + unit->name + "' is " +
                         (unit->trainable ? "trainable" : "frozen") + ", got " +
                         (param.trainable ? "true" : "false"));
    param.init = readInit(node.field(schema::param::kInit), param.shape);
    Node offsetNode = node.field(schema::param::kUnitOffset);
    param.unitOffset = offsetNode.integer(0);
    if (param.unitOffset > unit->numel || param.numElements() > unit->numel - param.unitOffset)
      offsetNode.fail("elements [" + std::to_string(param.unitOffset) + ", " +
                      std::to_string(param.unitOffset + param.numElements()) +
                      ") lie outside unit '" + unit->name + "' of " +
                      std::to_string(unit->numel) + " elements");
    manifest.params.push_back(std::move(param));
  }

  // Parameters of one unit must not share elements: initialising one would
  // overwrite another.
  std::vector<const ParamSpec *> sorted;
  for (const ParamSpec &param : manifest.params)
    sorted.push_back(&param);
  std::stable_sort(sorted.begin(), sorted.end(), [](const ParamSpec *a, const ParamSpec *b) {
    return std::make_pair(a->unitIndex, a->unitOffset) < std::make_pair(b->unitIndex, b->unitOffset);
  });
  for (size_t i = 1; i < sorted.size(); ++i) {
    const ParamSpec &prev = *sorted[i - 1];
    const ParamSpec &next = *sorted[i];
    if (prev.unitIndex == next.unitIndex && next.unitOffset < prev.unitOffset + prev.numElements())
      fatal("manifest: parameters '" + prev.name + "' [" + std::to_string(prev.unitOffset) + ", " +
            std::to_string(prev.unitOffset + prev.numElements()) + ") and '" + next.name + "' [" +
            std::to_string(next.unitOffset) + ", " +
            std::to_string(next.unitOffset + next.numElements()) + ") of unit '" + prev.unit +
            "' overlap");
  }
}

static InputRole readRole(const Node &node) {
  std::string role = node.string();
  if (role == "features")
    return InputRole::Features;
  if (role == "regression_target")
    return InputRole::RegressionTarget;
  if (role == "tokens")
    return InputRole::Tokens;
  if (role == "classes")
    return InputRole::Classes;
  node.fail("unknown role '" + role +
            "' (expected features, regression_target, tokens or classes)");
}

static void readInputs(const Node &root, Manifest &manifest) {
  Node list = root.field(schema::root::kInputs);
  for (size_t i = 0, e = list.arraySize(); i < e; ++i) {
    Node node = list.element(i);
    InputSpec input;
    Node indexNode = node.field(schema::input::kIndex);
    input.index = indexNode.integer(0);
    if (input.index != static_cast<int64_t>(i))
      indexNode.fail("inputs must be listed in order: expected index " + std::to_string(i) +
                     ", got " + std::to_string(input.index));
    Node shapeNode = node.field(schema::input::kShape);
    input.shape = readShape(shapeNode, 1);
    if (input.shape[0] != manifest.localBatch)
      shapeNode.fail(std::string("dimension 0 is this rank's batch dimension and must be ") +
                     schema::root::kLocalBatch.key + " " + std::to_string(manifest.localBatch) +
                     ", got shape " + formatShape(input.shape));
    Node dtypeNode = node.field(schema::input::kDtype);
    input.dtype = readDType(dtypeNode);
    Node roleNode = node.field(schema::input::kRole);
    input.role = readRole(roleNode);
    bool wantsIntegers = input.role == InputRole::Tokens || input.role == InputRole::Classes;
    if (wantsIntegers == isFloatDType(input.dtype))
      dtypeNode.fail(std::string("role ") + inputRoleName(input.role) + " needs " +
                     (wantsIntegers ? "i32 or i64" : "f32 or bf16") + " data, got " +
                     dtypeName(input.dtype));
    if (wantsIntegers) {
      // Values lie in [0, bound), so bound - 1 must be representable.
      int64_t maxBound = input.dtype == DType::I32
                             ? int64_t(std::numeric_limits<int32_t>::max()) + 1
                             : std::numeric_limits<int64_t>::max();
      input.bound = node.field(schema::input::kBound).integer(1, maxBound);
    }
    readPlacement(node, manifest, tensorBytes(shapeNode, input.shape, input.dtype),
                  dtypeSize(input.dtype), input.offset, input.bytes);
    manifest.inputs.push_back(std::move(input));
  }
}

/// Every persistent buffer has its own bytes: overlapping regions would mean
/// the runtime's writes (initial values, batches) or the step's clobber each
/// other. A gradient shard in the persistent region (the runtime's own test
/// models place it there) is one of them.
/// Fails when two of `regions` (of one arena) overlap.
static void checkDisjointRegions(std::vector<Region> regions, const char *where) {
  std::stable_sort(regions.begin(), regions.end(),
                   [](const Region &a, const Region &b) { return a.offset < b.offset; });
  for (size_t i = 1; i < regions.size(); ++i) {
    const Region &prev = regions[i - 1];
    const Region &next = regions[i];
    if (next.offset < prev.offset + prev.bytes)
      fatal("manifest: " + prev.what + " [" + std::to_string(prev.offset) + ", " +
            std::to_string(prev.offset + prev.bytes) + ") and " + next.what + " [" +
            std::to_string(next.offset) + ", " + std::to_string(next.offset + next.bytes) +
            ") overlap" + where);
  }
}

/// device_scalars: {"offset": N}, 32 bytes of the persistent part. The i64
/// step at offset + 8 needs 8-byte alignment (fsdpc places the scalars at a
/// multiple of 64).
static void readDeviceScalars(const Node &root, Manifest &manifest) {
  if (!root.has(schema::root::kDeviceScalars))
    return;
  Node offsetNode = root.field(schema::root::kDeviceScalars).field(schema::device_scalars::kOffset);
  DeviceScalarsSpec scalars;
  scalars.offset = offsetNode.integer(0);
  checkPersistent(offsetNode, manifest, scalars.offset, DeviceScalarsSpec::kBytes, 8);
  manifest.deviceScalars = scalars;
}

static void checkDisjoint(const Manifest &manifest) {
  std::vector<Region> device, host;
  for (const UnitSpec &unit : manifest.units) {
    std::string name = "unit '" + unit.name + "'";
    std::vector<Region> &own = unit.offloaded ? host : device;
    own.push_back({unit.paramOffset, unit.shardBytes(), "parameter shard of " + name});
    if (unit.offloaded)
      device.push_back({unit.deviceParamOffset,
                        unit.shardNumel * static_cast<int64_t>(dtypeSize(unit.deviceParamDType)),
                        "device copy of the parameter shard of " + name});
    if (!unit.trainable)
      continue;
    if (unit.offloaded)
      host.push_back({unit.gradOffset, unit.shardNumel * 4, "gradient shard of " + name});
    else if (unit.gradOffset < manifest.persistentBytes)
      device.push_back({unit.gradOffset, unit.shardBytes(), "gradient shard of " + name});
    for (const SlotSpec &slot : unit.state)
      own.push_back({slot.offset, unit.shardBytes(), "state '" + slot.slot + "' of " + name});
  }
  for (const InputSpec &input : manifest.inputs)
    device.push_back({input.offset, input.bytes, "input " + std::to_string(input.index)});
  if (manifest.deviceScalars)
    device.push_back({manifest.deviceScalars->offset, DeviceScalarsSpec::kBytes, "device scalars"});
  checkDisjointRegions(std::move(device), "");
  checkDisjointRegions(std::move(host), " in the host arena");
}

static void readCollectives(const Node &root, Manifest &manifest) {
  if (!root.has(schema::root::kCollectives))
    return;
  std::set<std::string> units;
  for (const UnitSpec &unit : manifest.units)
    units.insert(unit.name);
  Node list = root.field(schema::root::kCollectives);
  for (size_t i = 0, e = list.arraySize(); i < e; ++i) {
    Node node = list.element(i);
    CollectiveSpec collective;
    Node kindNode = node.field(schema::collective::kKind);
    collective.kind = kindNode.string();
    if (collective.kind != "all_gather" && collective.kind != "reduce_scatter" &&
        collective.kind != "all_reduce")
      kindNode.fail("expected all_gather, reduce_scatter or all_reduce, got '" +
                    collective.kind + "'");
    Node unitNode = node.field(schema::collective::kUnit);
    collective.unit = unitNode.string();
    if (!collective.unit.empty() && !units.count(collective.unit))
      unitNode.fail("no unit is named '" + collective.unit + "'");
    manifest.collectives.push_back(std::move(collective));
  }
}

/// A count of FLOPs: a non-negative number.
static double readCount(const Node &node) {
  double count = node.real();
  if (count < 0)
    node.fail("must be non-negative, got " + formatReal(count));
  return count;
}

/// step_flops, tokens_per_step and device_profile: what throughput and MFU
/// are computed from.
static void readThroughputFields(const Node &root, Manifest &manifest) {
  if (root.has(schema::root::kStepFlops)) {
    Node node = root.field(schema::root::kStepFlops);
    StepFlopsSpec flops;
    flops.products = readCount(node.field(schema::step_flops::kProducts));
    Node bf16 = node.field(schema::step_flops::kBf16Products);
    flops.bf16Products = readCount(bf16);
    if (flops.bf16Products > flops.products)
      bf16.fail(std::string("exceeds ") + schema::step_flops::kProducts.key + " (" +
                formatReal(flops.products) + ")");
    flops.attention = readCount(node.field(schema::step_flops::kAttention));
    Node recomputed = node.field(schema::step_flops::kRecomputed);
    flops.recomputed = readCount(recomputed);
    if (flops.recomputed > flops.products + flops.attention)
      recomputed.fail(std::string("exceeds ") + schema::step_flops::kProducts.key + " and " +
                      schema::step_flops::kAttention.key + " (" +
                      formatReal(flops.products + flops.attention) + ")");
    flops.other = readCount(node.field(schema::step_flops::kOther));
    manifest.stepFlops = flops;
  }
  if (root.has(schema::root::kTokensPerStep))
    manifest.tokensPerStep = root.field(schema::root::kTokensPerStep).integer(1);
  if (root.has(schema::root::kDeviceProfile)) {
    Node node = root.field(schema::root::kDeviceProfile);
    DeviceProfileSpec profile;
    profile.name = node.field(schema::device_profile::kName).string();
    Node rates = node.field(schema::device_profile::kMatmulFlops);
    profile.f32 = readCount(rates.field(schema::matmul_flops::kF32));
    profile.bf16 = readCount(rates.field(schema::matmul_flops::kBf16));
    manifest.deviceProfile = profile;
  }
}

KernelOrigins parseKernelOrigins(const char *table) {
  KernelOrigins origins;
  if (!table)
    return origins;
  std::string_view rest = table;
  while (!rest.empty()) {
    size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    size_t tab = line.find('\t');
    if (tab != std::string_view::npos)
      origins.emplace(line.substr(0, tab), line.substr(tab + 1));
  }
  return origins;
}

Manifest parseManifest(std::string_view text) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::exception &error) {
    // Syntax errors and numbers beyond double (1e400) both land here. what()
    // starts with "[json.exception.parse_error.101] ": keep the rest.
    std::string what = error.what();
    size_t prefix = what.find("] ");
    fatal("manifest: invalid JSON: " + (prefix == std::string::npos ? what : what.substr(prefix + 2)));
  }
  Node root(document, "");
  if (!document.is_object())
    root.fail("expected a JSON object, got " + root.excerpt());

  Manifest manifest;
  Node versionNode = root.field(schema::root::kVersion);
  manifest.version = versionNode.integer();
  if (manifest.version != schema::kFormatVersion)
    versionNode.fail("this runtime reads version " + std::to_string(schema::kFormatVersion) +
                     ", got " + std::to_string(manifest.version) +
                     (manifest.version == 1 ? " (recompile the model with this fsdpc)" : ""));
  manifest.arenaBytes = root.field(schema::root::kArenaBytes).integer(0);
  manifest.persistentBytes =
      root.field(schema::root::kPersistentBytes).integer(0, manifest.arenaBytes);
  if (root.has(schema::root::kHostArenaBytes))
    manifest.hostArenaBytes = root.field(schema::root::kHostArenaBytes).integer(0);
  manifest.batch = root.field(schema::root::kBatch).integer(1);
  readRanks(root, readGridAndStrategy(root, manifest), manifest);
  readOptimizer(root.field(schema::root::kOptimizer), manifest.optimizer);
  Node clipNode = root.field(schema::root::kClipGradNorm);
  manifest.clipGradNorm = clipNode.real();
  if (!(manifest.clipGradNorm >= 0.0))
    clipNode.fail("must be non-negative (0 disables clipping), got " +
                  formatReal(manifest.clipGradNorm));
  // Absent, the products are exact fp32: a plan compiled before the field
  // existed keeps its numbers.
  if (root.has(schema::root::kAllowTf32))
    manifest.allowTf32 = root.field(schema::root::kAllowTf32).boolean();
  readUnits(root, manifest);
  readParams(root, manifest);
  readInputs(root, manifest);
  readDeviceScalars(root, manifest);
  readCollectives(root, manifest);
  readThroughputFields(root, manifest);
  checkDisjoint(manifest);
  return manifest;
}

int64_t ParamSpec::numElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

int64_t ParamSpec::bytes() const { return numElements() * static_cast<int64_t>(dtypeSize(dtype)); }

std::vector<int64_t> ParamSpec::wholeShape() const {
  std::vector<int64_t> whole = shape;
  if (splitDim)
    whole[static_cast<size_t>(*splitDim)] *= tensorBlocks;
  return whole;
}

int64_t ParamSpec::wholeElements() const { return numElements() * tensorBlocks; }

int64_t UnitSpec::shardBytes() const {
  return shardNumel * static_cast<int64_t>(dtypeSize(dtype));
}

std::string persistentLayoutDifference(const Manifest &a, const Manifest &b) {
  if (a.persistentBytes != b.persistentBytes || a.hostArenaBytes != b.hostArenaBytes)
    return "the persistent part of the arena";
  if (a.batch != b.batch || a.localBatch != b.localBatch || a.grid != b.grid ||
      a.tensorRanks != b.tensorRanks)
    return "the batch or the grid";
  auto scalarsAt = [](const Manifest &m) {
    return m.deviceScalars ? m.deviceScalars->offset : int64_t(-1);
  };
  if (scalarsAt(a) != scalarsAt(b))
    return "the device scalars";
  if (a.units.size() != b.units.size() || a.inputs.size() != b.inputs.size())
    return "the number of units or inputs";
  for (size_t u = 0; u < a.units.size(); ++u) {
    const UnitSpec &x = a.units[u], &y = b.units[u];
    if (x.name != y.name || x.paramOffset != y.paramOffset || x.shardNumel != y.shardNumel ||
        x.deviceParamOffset != y.deviceParamOffset || x.offloaded != y.offloaded)
      return "unit '" + x.name + "'";
  }
  for (size_t i = 0; i < a.inputs.size(); ++i)
    if (a.inputs[i].offset != b.inputs[i].offset || a.inputs[i].shape != b.inputs[i].shape ||
        a.inputs[i].dtype != b.inputs[i].dtype)
      return "input " + std::to_string(i);
  return {};
}

const char *inputRoleName(InputRole role) {
  switch (role) {
  case InputRole::Features:
    return "features";
  case InputRole::RegressionTarget:
    return "regression_target";
  case InputRole::Tokens:
    return "tokens";
  case InputRole::Classes:
    return "classes";
  }
  return "?";
}

std::vector<int64_t> InputSpec::sampleShape() const {
  return std::vector<int64_t>(shape.begin() + 1, shape.end());
}

int64_t InputSpec::sampleElements() const {
  int64_t count = 1;
  for (size_t i = 1; i < shape.size(); ++i)
    count *= shape[i];
  return count;
}

int64_t InputSpec::sampleBytes() const {
  return sampleElements() * static_cast<int64_t>(dtypeSize(dtype));
}

int64_t Manifest::dataRanks() const {
  int64_t size = 1;
  for (int64_t dim : grid)
    size *= dim;
  return size;
}

int64_t Manifest::worldSize() const { return dataRanks() * tensorRanks; }

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

} // namespace fsdprt
