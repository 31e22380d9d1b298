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

[[noreturn]] static void report(const std::string &prefix, const std::string &message, bool abort) {
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
  if (abort)
    MPI_Abort(MPI_COMM_WORLD, 1);
  // A 1-rank run (or an error before MPI starts) just exits: nothing waits
  // for it, and MPI_Abort would add its own banner to the one line.
  std::exit(1);
}

void fatal(const std::string &message) {
  bool multiRank = mpiRunning() && worldSize() > 1;
  if (!multiRank)
    report("", message, false);
  int rank = worldRank();
  if (sameOnEveryRank) {
    if (rank == 0)
      report("", message, true);
    std::this_thread::sleep_for(kSharedErrorGrace);
  }
  report("rank " + std::to_string(rank) + ": ", message, true);
}

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
