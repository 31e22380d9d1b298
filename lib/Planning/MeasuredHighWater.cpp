//===- MeasuredHighWater.cpp - a trainer's marks at unit boundaries -------===//
//
// The trainer's --trace (docs/Runtime.md) carries, beside its events, the
// arena's high-water mark after each all-gather's wait of step 1 and at its
// end (`arena_high_water`). fsdpc --measured-trace draws them on the memory
// picture of the step it compiled; they mean something there only if the
// trainer ran that same step, so the arena and the number of gather waits
// must agree.
//
//===----------------------------------------------------------------------===//

#include "Planning/Pictures.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace mlir::fsdp;

llvm::Expected<MeasuredHighWater> mlir::fsdp::readMeasuredHighWater(StringRef path,
                                                                    const PlanEvaluation &plan) {
  namespace json = llvm::json;
  auto error = [&](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--measured-trace=" + path + ": " + message);
  };
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file = llvm::MemoryBuffer::getFile(path);
  if (!file)
    return error("cannot read: " + file.getError().message());
  llvm::Expected<json::Value> value = json::parse((*file)->getBuffer());
  if (!value)
    return error("not a trainer's --trace (not JSON: " + llvm::toString(value.takeError()) + ")");
  const json::Object *trace = value->getAsObject();
  if (!trace || !trace->getArray("traceEvents"))
    return error("not a trainer's --trace (no traceEvents)");
  const json::Object *marks = trace->getObject("arena_high_water");
  if (!marks)
    return error("the trace has no arena_high_water: write it with the CPU trainer's --trace "
                 "and --steps 1 or more");
  MeasuredHighWater measured;
  std::optional<int64_t> step = marks->getInteger("step"),
                         persistent = marks->getInteger("persistent_bytes"),
                         arena = marks->getInteger("arena_bytes"),
                         end = marks->getInteger("end_of_step");
  const json::Array *waits = marks->getArray("after_gather_waits");
  if (!step || !persistent || !arena || !end || !waits)
    return error("arena_high_water lacks step, persistent_bytes, arena_bytes, "
                 "after_gather_waits or end_of_step");
  measured.step = *step;
  measured.persistentBytes = *persistent;
  measured.arenaBytes = *arena;
  measured.endOfStep = *end;
  for (const json::Value &mark : *waits) {
    std::optional<int64_t> bytes = mark.getAsInteger();
    if (!bytes)
      return error("after_gather_waits holds a value that is not a byte count");
    measured.afterGatherWaits.push_back(*bytes);
  }
  // The same compiled step: the same arena, gathered as many times.
  if (measured.arenaBytes != plan.arena.arenaBytes ||
      measured.persistentBytes != plan.arena.persistentBytes)
    return error(llvm::formatv("the trainer's arena has {0} bytes ({1} persistent), the "
                               "compiled step's {2} ({3}): they must be the same compiled step",
                               measured.arenaBytes, measured.persistentBytes,
                               plan.arena.arenaBytes, plan.arena.persistentBytes));
  size_t planned = plan.memory.gatherWaits.size();
  if (measured.afterGatherWaits.size() != planned)
    return error(llvm::formatv("{0} all-gather waits measured, the compiled step has {1}: "
                               "they must be the same compiled step",
                               measured.afterGatherWaits.size(), planned));
  return measured;
}
