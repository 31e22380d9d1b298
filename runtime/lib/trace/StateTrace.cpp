//===- StateTrace.cpp - --trace-state: the state after every step --------===//

#include "trace/StateTrace.h"

#include "io/OutputFile.h"
#include "trainer/ParamShards.h"

#include <optional>

namespace fsdprt {

/// The offset of `unit`'s shard of slot `name`, if it is trainable (the
/// manifest's check guarantees a trainable unit has every optimizer slot).
static std::optional<int64_t> slotOffset(const UnitSpec &unit, const std::string &name) {
  if (!unit.trainable)
    return std::nullopt;
  for (const SlotSpec &slot : unit.state)
    if (slot.slot == name)
      return slot.offset;
  return std::nullopt;
}

/// A bf16 gradient shard in the host arena (offload with reduce_dtype =
/// bf16), widened to f32 in place: its region has room for it, and the step
/// overwrites it before reading it again. From the last element down, each
/// f32 lands on bf16 elements already widened.
static void widenInPlace(uint8_t *region, int64_t count) {
  for (int64_t i = count - 1; i >= 0; --i)
    storeReal(loadReal(DType::BF16, region + 2 * i), DType::F32, region + 4 * i);
}

void writeStateRecord(const Manifest &manifest, const RankPlace &place, Arena &arena,
                      uint8_t *hostArena, OutputFile *out, bool afterStep) {
  for (const UnitSpec &unit : manifest.units) {
    if (unit.offloaded) {
      if (afterStep && unit.gradDType == DType::BF16)
        widenInPlace(hostArena + unit.gradOffset, unit.shardNumel);
      continue;
    }
    arena.download(unit.paramOffset, unit.shardBytes());
    if (!unit.trainable)
      continue;
    if (afterStep)
      arena.download(unit.gradOffset, unit.shardBytes());
    for (const SlotSpec &slot : unit.state)
      arena.download(slot.offset, unit.shardBytes());
  }
  HostShards host(arena.host(), hostArena);
  gatherUnitRegion(manifest, place, host, out, "--trace-state",
                   [](const UnitSpec &unit) { return unit.paramOffset; });
  if (afterStep) {
    gatherUnitRegion(manifest, place, host, out, "--trace-state",
                     [](const UnitSpec &unit) -> std::optional<int64_t> {
                       if (!unit.trainable)
                         return std::nullopt;
                       return unit.gradOffset;
                     });
  } else if (out) {
    for (const ParamSpec &param : manifest.params)
      if (param.trainable) {
        std::vector<uint8_t> zeros(param.wholeElements() * dtypeSize(param.dtype));
        out->write(zeros.data(), zeros.size());
      }
  }
  for (const std::string &name : optimizerSlots(manifest.optimizer))
    gatherUnitRegion(manifest, place, host, out, "--trace-state",
                     [&name](const UnitSpec &unit) { return slotOffset(unit, name); });
  if (out)
    out->flush();
}

} // namespace fsdprt
