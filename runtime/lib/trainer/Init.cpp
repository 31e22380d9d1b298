//===- Init.cpp - Initial parameter values --------------------------------===//

#include "trainer/Init.h"

#include "abi/DType.h"
#include "trainer/HostParallel.h"
#include "trainer/Philox.h"
#include "trainer/TensorBlocks.h"

#include <algorithm>
#include <cmath>

namespace fsdprt {

double fanIn(const std::vector<int64_t> &shape) {
  double product = 1.0;
  for (size_t i = 0; i + 1 < shape.size(); ++i)
    product *= static_cast<double>(shape[i]);
  return product;
}

double initialValue(const InitSpec &init, double fanIn, uint64_t seed, uint64_t paramId,
                    uint64_t index) {
  auto block = [&] {
    return philox4x32_10({lo32(index), hi32(index), lo32(paramId), hi32(paramId)},
                         {lo32(seed), hi32(seed)});
  };
  // Each expression is evaluated in the order the contract writes it, so that
  // an independent implementation gets the same double.
  switch (init.kind) {
  case InitKind::Zeros:
    return 0.0;
  case InitKind::Ones:
    return 1.0;
  case InitKind::Constant:
    return init.value;
  case InitKind::Normal:
    return init.mean + init.std * standardNormal(block());
  case InitKind::Uniform:
    return init.low + (init.high - init.low) * uniform1(block());
  case InitKind::FanInNormal:
    return (init.scale / std::sqrt(fanIn)) * standardNormal(block());
  case InitKind::FanInUniform:
    return (2.0 * uniform1(block()) - 1.0) * init.scale / std::sqrt(fanIn);
  }
  return 0.0;
}

/// Elements per chunk of initial values at least: a Philox block and a normal
/// sample cost tens of nanoseconds, so a chunk is about a millisecond of work.
constexpr int64_t kMinInitChunk = 1 << 14;

void initializeRange(const ParamSpec &param, uint64_t seed, int64_t begin, int64_t end, void *dst,
                     int64_t tensorIndex) {
  uint64_t paramId = fnv1a64(param.name);
  // A block's values are the whole parameter's: its fan-in, its indices.
  double paramFanIn = fanIn(param.wholeShape());
  BlockLayout layout = BlockLayout::of(param);
  size_t elementSize = dtypeSize(param.dtype);
  // Each element's value depends on its index alone, so the host's cores share
  // the range: a billion parameters' values took about two minutes on one core
  // of a build machine (a one-step run of 1.1B: 151 s on one thread, 88 s on two).
  parallelChunks(end - begin, kMinInitChunk, [&](int64_t from, int64_t to) {
    auto *out = static_cast<uint8_t *>(dst) + from * elementSize;
    for (int64_t i = begin + from; i < begin + to; ++i, out += elementSize) {
      auto whole = static_cast<uint64_t>(layout.wholeIndex(tensorIndex, i));
      storeReal(initialValue(param.init, paramFanIn, seed, paramId, whole), param.dtype, out);
    }
  });
}

ShardRange ownedRange(const UnitSpec &unit, int64_t shardIndex) {
  return {shardIndex * unit.shardNumel, (shardIndex + 1) * unit.shardNumel};
}

ShardRange ownedPart(const ParamSpec &param, ShardRange owned) {
  int64_t begin = std::max(param.unitOffset, owned.begin);
  int64_t end = std::min(param.unitOffset + param.numElements(), owned.end);
  if (begin >= end)
    return {0, 0};
  return {begin - param.unitOffset, end - param.unitOffset};
}

void initializeShards(const Manifest &manifest, uint64_t seed, int64_t shardIndex,
                      const HostShards &shards, int64_t tensorIndex) {
  for (const ParamSpec &param : manifest.params) {
    const UnitSpec &unit = manifest.units[param.unitIndex];
    ShardRange owned = ownedRange(unit, shardIndex);
    ShardRange part = ownedPart(param, owned);
    if (part.begin == part.end)
      continue;
    // Element e of the parameter is element unitOffset + e of the flat
    // buffer, which this rank stores at (unitOffset + e - owned.begin).
    int64_t position = param.unitOffset + part.begin - owned.begin;
    initializeRange(param, seed, part.begin, part.end,
                    shards.of(unit) + unit.paramOffset +
                        position * static_cast<int64_t>(dtypeSize(param.dtype)),
                    tensorIndex);
  }
}

} // namespace fsdprt
