//===- Flags.h - The trainer's command line ---------------------*- C++ -*-===//
//
//   trainer [--steps N] [--seed S] [--data FILE] [--lr X] [--log-every K]
//           [--log-json FILE] [--load-params FILE] [--dump-params FILE]
//           [--trace-state FILE] [--print-manifest] [--version] [--help]
//
// (docs/Runtime.md, section 5). A value follows its flag as the next argument
// or after `=`. A bad flag or value is fatal and names the flag.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_FLAGS_H
#define FSDPRT_FLAGS_H

#include <cstdint>
#include <optional>
#include <string>

namespace fsdprt {

struct TrainerOptions {
  int64_t steps = 100;
  uint64_t seed = 0;
  std::string dataPath;      // empty: synthetic data
  std::optional<float> lr;   // empty: the manifest's lr
  int64_t logEvery = 10;
  std::string logJsonPath;   // empty: no JSON log
  std::string dumpParamsPath; // empty: no dump
  std::string loadParamsPath; // empty: initialise from the seed
  std::string traceStatePath; // empty: no trace
  std::string tracePath;      // --trace: the last step as it ran
  bool printManifest = false;
  bool version = false;
  bool help = false;
};

/// Parses argv[1..argc). `--help` stops parsing: the rest is not looked at.
TrainerOptions parseFlags(int argc, const char *const *argv);

/// The text `--help` prints.
const char *usageText();

} // namespace fsdprt

#endif // FSDPRT_FLAGS_H
