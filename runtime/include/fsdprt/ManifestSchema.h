//===- ManifestSchema.h - the manifest's fields, named once -----*- C++ -*-===//
//
// One constant per row of ManifestSchema.def, in the namespace of its object:
// `fsdprt::manifest::root::kArenaBytes.key` is "arena_bytes". The compiler's
// writer (llvm::json) and the runtime's reader (nlohmann::json) spell every
// key through these constants, so a misspelt field does not compile.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_MANIFESTSCHEMA_H
#define FSDPRT_MANIFESTSCHEMA_H

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fsdprt::manifest {

/// The format this table describes: the manifest's `version`.
inline constexpr int kFormatVersion = 2;

enum class FieldType { Integer, Number, String, Boolean, Object, Array };

/// Required: always present. Conditional: present exactly when its meaning
/// says. Optional: the runtime has a default. Informational: for people and
/// tools; the runtime does not read it.
enum class Presence { Required, Conditional, Optional, Informational };

/// A field of one object of the manifest.
struct Field {
  const char *key;
  FieldType type;
  const char *unit; // "" when it counts nothing
  Presence presence;
  const char *meaning;
};

/// An object of the manifest and where it lies (`units[]`: each element of
/// `units`; "" for the manifest itself).
struct Object {
  const char *id;
  const char *path;
  const char *meaning;
};

#define FSDPRT_MANIFEST_OBJECT(ID, PATH, MEANING)                                                  \
  namespace ID {}
#define FSDPRT_MANIFEST_FIELD(ID, NAME, KEY, TYPE, UNIT, PRESENCE, MEANING)                        \
  namespace ID {                                                                                   \
  inline constexpr Field k##NAME{KEY, FieldType::TYPE, UNIT, Presence::PRESENCE, MEANING};         \
  }
#include "fsdprt/ManifestSchema.def"

/// An element type a manifest names: a dtype field's value.
struct DTypeSpec {
  const char *name;
  int bytes;
  bool isFloat;
  const char *meaning;
};

namespace dtype {
#define FSDPRT_MANIFEST_DTYPE(NAME, VALUE, BYTES, FLOAT, MEANING)                                  \
  inline constexpr DTypeSpec k##NAME{VALUE, BYTES, FLOAT, MEANING};
#include "fsdprt/ManifestSchema.def"
} // namespace dtype

/// Every element type, in the table's order.
inline constexpr DTypeSpec kDTypes[] = {
#define FSDPRT_MANIFEST_DTYPE(NAME, VALUE, BYTES, FLOAT, MEANING) dtype::k##NAME,
#include "fsdprt/ManifestSchema.def"
};

/// Which ranks share one copy of the model (shard_ranks): the whole grid, one
/// rank, or the grid's second dimension.
enum class ShardRanks { WholeGrid, OneRank, SecondDimension };

/// A sharding strategy: the manifest's `strategy`.
struct StrategySpec {
  const char *name;
  ShardRanks shards;
  const char *meaning;
};

namespace strategy {
#define FSDPRT_MANIFEST_STRATEGY(NAME, VALUE, SHARDS, MEANING)                                     \
  inline constexpr StrategySpec k##NAME{VALUE, ShardRanks::SHARDS, MEANING};
#include "fsdprt/ManifestSchema.def"
} // namespace strategy

/// Every strategy, in the table's order.
inline constexpr StrategySpec kStrategies[] = {
#define FSDPRT_MANIFEST_STRATEGY(NAME, VALUE, SHARDS, MEANING) strategy::k##NAME,
#include "fsdprt/ManifestSchema.def"
};

/// The entry of `table` named `name`; null when none is.
template <typename Spec, size_t N>
constexpr const Spec *findByName(const Spec (&table)[N], std::string_view name) {
  for (const Spec &spec : table)
    if (name == spec.name)
      return &spec;
  return nullptr;
}

// The grid's rules, which the compiler's plan verifier and the runtime's
// reader both apply (docs/Sharding.md): a grid is [shard] or [replicas,
// shard], of positive sizes, at most kMaxRanks ranks in all (ranks are MPI
// ints), and 2-D exactly for the strategy that shards over its second
// dimension.
inline constexpr size_t kMaxGridDims = 2;
inline constexpr int64_t kMaxRanks = 2147483647;

constexpr bool gridDimsFit(const StrategySpec &strategy, size_t dims) {
  return dims == (strategy.shards == ShardRanks::SecondDimension ? 2 : 1);
}

/// shard_ranks of a grid that follows the rules: the ranks of one copy.
template <typename Grid>
constexpr int64_t shardRanksOf(const StrategySpec &strategy, const Grid &grid) {
  int64_t world = 1;
  for (int64_t size : grid)
    world *= size;
  switch (strategy.shards) {
  case ShardRanks::WholeGrid:
    return world;
  case ShardRanks::OneRank:
    return 1;
  case ShardRanks::SecondDimension:
    return grid[1];
  }
  return world;
}

} // namespace fsdprt::manifest

#endif // FSDPRT_MANIFESTSCHEMA_H
