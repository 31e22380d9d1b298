//===- ChromeTrace.cpp - the predicted step as a Chrome trace -------------===//
//
// The Trace Event Format's JSON object form: complete events ("X") on one
// thread per stream, counters ("C") for the memory by kind, metadata ("M")
// naming the process and the streams. Times are microseconds.
//
//===----------------------------------------------------------------------===//

#include "Planning/Pictures.h"
#include "Utils/RuntimeABI.h"

#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::fsdp;
namespace json = llvm::json;

static constexpr llvm::StringLiteral kStreamNames[kNumRuntimeStreams] = {
    "compute", "all-gather", "reduce-scatter / all-reduce", "host <-> device copies",
    "tensor group"};

void mlir::fsdp::writeChromeTrace(llvm::raw_ostream &os, const PlanEvaluation &plan,
                                  StringRef profileName) {
  json::Array events;
  // json::Value keeps a StringRef by reference: names are copied as strings.
  auto metadata = [&](StringRef what, int64_t tid, std::string name) {
    events.push_back(json::Object{{"ph", "M"},
                                  {"pid", 0},
                                  {"tid", tid},
                                  {"name", what},
                                  {"args", json::Object{{"name", name}}}});
  };
  metadata("process_name", 0, ("rank 0, predicted on " + profileName).str());
  for (int stream = 0; stream < kNumRuntimeStreams; ++stream)
    metadata("thread_name", stream, kStreamNames[stream].str());
  metadata("thread_name", kHostTrack, "host (offload's updates)");
  auto microseconds = [](double seconds) { return seconds * 1e6; };
  for (const TimedOp &op : plan.cost.ops) {
    json::Object args{{"bytes", op.bytes}};
    if (op.flops > 0)
      args["flops"] = op.flops;
    if (op.footprint > 0)
      args["footprint"] = op.footprint;
    if (!op.unit.empty())
      args["unit"] = op.unit;
    bool collective = op.stream != static_cast<int>(RuntimeStream::Compute) &&
                      op.stream != kHostTrack;
    events.push_back(json::Object{{"ph", "X"},
                                  {"pid", 0},
                                  {"tid", op.stream},
                                  {"ts", microseconds(op.start)},
                                  {"dur", microseconds(op.end - op.start)},
                                  {"name", op.unit.empty() ? op.name : op.name + " " + op.unit},
                                  {"cat", collective ? "communication" : "compute"},
                                  {"args", std::move(args)}});
  }
  // The memory as stacked counters: Perfetto draws one track of them.
  for (const MemorySample &sample : plan.memory.samples) {
    json::Object bytes{{"persistent", plan.memory.persistentBytes}};
    for (size_t k = 0; k < kNumMemoryKinds; ++k)
      bytes[kMemoryKinds[k]] = sample.bytes[k];
    events.push_back(json::Object{{"ph", "C"},
                                  {"pid", 0},
                                  {"name", "memory (bytes)"},
                                  {"ts", microseconds(sample.time)},
                                  {"args", std::move(bytes)}});
  }
  const StepCost &cost = plan.cost;
  os << json::Value(json::Object{
            {"traceEvents", std::move(events)},
            {"displayTimeUnit", "ms"},
            {"otherData",
             json::Object{{"profile", profileName.str()},
                          {"step_seconds", cost.stepSeconds},
                          {"exposed_communication_seconds", cost.exposedCommunicationSeconds},
                          {"copy_seconds", cost.copySeconds},
                          {"exposed_copy_seconds", cost.exposedCopySeconds},
                          {"host_seconds", cost.hostSeconds},
                          {"arena_bytes", plan.arena.arenaBytes},
                          {"peak_live_bytes",
                           plan.memory.persistentBytes + plan.memory.peakLiveBytes}}}})
     << "\n";
}
