//===- Error.cpp - The runtime's one error path ---------------------------===//

#include "abi/Error.h"

#include "trainer/Ranks.h"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace fsdprt {

static bool sameOnEveryRank = false;

/// How long a rank other than 0 waits for rank 0's abort before reporting a
/// shared error itself.
static constexpr std::chrono::seconds kSharedErrorGrace{10};

/// How a reported error ends the run: MPI_Abort of every rank, exit, or an
/// exit that runs no handlers (from a thread beside one that may be inside
/// CUDA, whose teardown at exit could wait for it).
enum class Stop { EveryRank, Exit, ExitNow };

[[noreturn]] static void report(const std::string &prefix, const std::string &message, Stop how) {
  // Progress lines already printed should come before the error.
  std::fflush(stdout);
  // The contract is one line per error, whatever a message embeds (e.g. the
  // JSON parser's text).
  std::string line = message;
  for (char &c : line)
    if (c == '\n' || c == '\r')
      c = ' ';
  std::fprintf(stderr, "trainer: error: %s%s\n", prefix.c_str(), line.c_str());
  std::fflush(stderr);
  if (how == Stop::EveryRank)
    MPI_Abort(MPI_COMM_WORLD, 1);
  // A 1-rank run (or an error before MPI starts) just exits: nothing waits
  // for it, and MPI_Abort would add its own banner to the one line.
  if (how == Stop::Exit)
    std::exit(1);
  std::_Exit(1);
}

[[noreturn]] static void stopThisRank(const std::string &message, Stop alone) {
  if (!mpiRunning() || worldSize() == 1)
    report("", message, alone);
  report("rank " + std::to_string(worldRank()) + ": ", message, Stop::EveryRank);
}

void fatal(const std::string &message) {
  if (sameOnEveryRank && mpiRunning() && worldSize() > 1) {
    if (worldRank() == 0)
      report("", message, Stop::EveryRank);
    std::this_thread::sleep_for(kSharedErrorGrace);
  }
  stopThisRank(message, Stop::Exit);
}

void fatalOnThisRank(const std::string &message) { stopThisRank(message, Stop::ExitNow); }

SameErrorOnEveryRank::SameErrorOnEveryRank() : outer(!sameOnEveryRank) { sameOnEveryRank = true; }

SameErrorOnEveryRank::~SameErrorOnEveryRank() {
  if (outer)
    sameOnEveryRank = false;
}

std::string formatReal(double value) {
  char buffer[64];
  std::to_chars_result result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

} // namespace fsdprt
