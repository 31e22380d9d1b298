//===- Error.h - The runtime's one error path -------------------*- C++ -*-===//
//
// Every error the trainer can hit (bad flag, bad manifest, bad data, a
// non-finite loss) ends the same way: one line `trainer: error: <message>` on
// stderr and exit status 1. There is no recovery to do in a trainer, so the
// components report where they detect the problem, with the context they have.
//
// With more than one rank the line names the rank (`trainer: error: rank 1:
// ...`) and MPI_Abort stops every rank at once: the others may be waiting for
// this one in a collective, and would otherwise hang.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_ABI_ERROR_H
#define FSDPRT_ABI_ERROR_H

#include <string>

namespace fsdprt {

/// Prints `trainer: error: <message>` (on one line, with `rank R: ` before
/// the message when the world has more than one rank) to stderr and exits
/// with status 1, or aborts every rank.
[[noreturn]] void fatal(const std::string &message);

/// As fatal, from any thread, and never as an error every rank meets: the
/// watchdog's (CollectiveTimeout.h) report of what this rank waited for.
[[noreturn]] void fatalOnThisRank(const std::string &message);

/// While one is alive, errors are ones every rank detects alike at the same
/// point (a bad manifest, the wrong number of ranks, a diverged loss): rank 0
/// reports the error once, without a rank, and stops every rank; the others
/// wait to be stopped (and report it themselves if that does not happen).
class SameErrorOnEveryRank {
public:
  SameErrorOnEveryRank();
  ~SameErrorOnEveryRank();
  SameErrorOnEveryRank(const SameErrorOnEveryRank &) = delete;
  SameErrorOnEveryRank &operator=(const SameErrorOnEveryRank &) = delete;

private:
  bool outer;
};

/// Formats a real number for a message: shortest form that reads back exactly.
std::string formatReal(double value);

} // namespace fsdprt

#endif // FSDPRT_ABI_ERROR_H
