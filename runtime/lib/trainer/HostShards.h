//===- HostShards.h - Where the trainer finds a unit's shards ---*- C++ -*-===//
//
// The trainer initialises, loads, dumps and traces every unit's persistent
// shards (parameters, gradient, optimizer state) through the host: in the
// arena's host view, or, for a unit that `offload = optimizer` moved to the
// host, in the host arena, where its f32 master shard, gradient and state
// live (the manifest's offsets of such a unit are the host arena's).
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRAINER_HOSTSHARDS_H
#define FSDPRT_TRAINER_HOSTSHARDS_H

#include "abi/Manifest.h"

#include <cstdint>

namespace fsdprt {

struct HostShards {
  // Implicit: without offload, the arena's host view is all there is.
  HostShards(uint8_t *arena, uint8_t *hostArena = nullptr) : arena(arena), hostArena(hostArena) {}

  /// The base of `unit`'s parameter, gradient and state offsets.
  uint8_t *of(const UnitSpec &unit) const { return unit.offloaded ? hostArena : arena; }

  uint8_t *arena;
  uint8_t *hostArena;
};

} // namespace fsdprt

#endif // FSDPRT_TRAINER_HOSTSHARDS_H
