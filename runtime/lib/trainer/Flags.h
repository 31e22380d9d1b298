//===- Flags.h - The trainer's command line ---------------------*- C++ -*-===//
//
//   trainer [--steps N] [--seed S] [--data FILE] [--lr X] [schedule flags]
//           [--eval-data FILE [--eval-every K] [--eval-batches N]]
//           [--log-every K] [--log-json FILE] [--init-from FILE] [--export FILE]
//           [--save DIR [--save-every K] [--keep N]] [--resume DIR]
//           [--trace-state FILE] [--trace FILE] [--no-cuda-graph]
//           [--collective-timeout SECONDS] [--debug-sync]
//           [--print-manifest] [--version] [--help]
//
// (docs/Runtime.md, section 5). A value follows its flag as the next argument
// or after `=`. A bad flag or value is fatal and names the flag.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRAINER_FLAGS_H
#define FSDPRT_TRAINER_FLAGS_H

#include "abi/CollectiveTimeout.h"
#include "abi/DType.h"
#include "io/TokenFile.h"
#include "trainer/LrSchedule.h"

#include <cstdint>
#include <optional>
#include <string>

namespace fsdprt {

/// The schedule flags as given: what is missing comes from the checkpoint
/// of --resume, else from the defaults (no warmup, no decay, decay over
/// --steps, floor 0).
struct ScheduleFlags {
  std::optional<int64_t> warmupSteps;
  std::optional<LrDecay> decay;
  std::optional<int64_t> decaySteps;
  std::optional<double> floor;

  bool any() const { return warmupSteps || decay || decaySteps || floor; }
};

struct TrainerOptions {
  /// The last step to run: a resumed run continues up to it.
  int64_t steps = 100;
  std::optional<uint64_t> seed; // empty: 0, or the checkpoint's
  std::string dataPath;      // empty: synthetic data
  std::optional<TokenDType> tokenDType; // a headerless token file's ids
  std::string evalDataPath;  // empty: no held-out evaluation
  int64_t evalEvery = 0;     // 0: after the last step only
  int64_t evalBatches = 0;   // 0: the whole held-out set, in whole batches
  std::optional<float> lr;   // empty: the manifest's lr (or the checkpoint's)
  ScheduleFlags schedule;
  int64_t logEvery = 10;
  std::string logJsonPath;   // empty: no JSON log
  std::string initFromPath;  // empty: initialise from the seed
  std::string exportPath;    // empty: no export
  DType exportDType = DType::F32;
  std::string saveDir;       // empty: no checkpoints
  int64_t saveEvery = 0;     // 0: only after the last step
  int64_t keep = 0;          // 0: keep every checkpoint
  std::string resumeDir;     // empty: start from step 1
  std::string traceStatePath; // empty: no trace
  std::string tracePath;      // --trace: the last step as it ran
  bool noCudaGraph = false;   // CUDA: call the step every time, no graph replay
  Milliseconds collectiveTimeout = kDefaultCollectiveTimeout;
  /// --peak-tflops: the peak MFU divides by, instead of the device's.
  std::optional<double> peakTflops;
  bool debugSync = false; // CUDA: wait for and check each kernel and runtime call
  bool printManifest = false;
  bool version = false;
  bool help = false;
};

/// Parses argv[1..argc). `--help` stops parsing: the rest is not looked at.
TrainerOptions parseFlags(int argc, const char *const *argv);

/// The text `--help` prints.
const char *usageText();

} // namespace fsdprt

#endif // FSDPRT_TRAINER_FLAGS_H
