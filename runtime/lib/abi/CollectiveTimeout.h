//===- CollectiveTimeout.h - How long a rank waits for the others -*- C++ -*-===//
//
// A collective waits for every rank of its group. mpirun ends the job when a
// rank dies, but a rank that stops answering (hung, stopped, its GPU stuck,
// its link down) leaves the others waiting forever. So every wait of a step
// has a limit (--collective-timeout, 10 minutes by default; twice that in the
// first step a run executes, which also loads kernels and connects NCCL): a
// rank waiting longer reports what it waited for, in which step, and stops
// every rank (Error.h). The CPU backend checks the limit where it waits
// (Ranks.h's waitWithinTimeout), the CUDA backend from a thread that watches
// the device's work (cuda/DeviceWatchdog.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_ABI_COLLECTIVETIMEOUT_H
#define FSDPRT_ABI_COLLECTIVETIMEOUT_H

#include <chrono>
#include <cstdint>
#include <string>

namespace fsdprt {

using Milliseconds = std::chrono::milliseconds;

/// The limit --collective-timeout set (default kDefaultCollectiveTimeout).
constexpr Milliseconds kDefaultCollectiveTimeout{10 * 60 * 1000};
void setCollectiveTimeout(Milliseconds timeout);
Milliseconds collectiveTimeout();

/// The step the trainer is in (0 before the first), and whether it is the
/// first this run executes.
void setCurrentStep(int64_t step, bool firstOfRun);
int64_t currentStep();

/// The limit of a wait begun now: the timeout, twice it in a run's first step.
Milliseconds currentStepLimit();

/// `step S: <what> has not completed after <waited> s (--collective-timeout=T):
/// ...`: the one line a timed-out rank reports; `limit` was what applied.
std::string timeoutMessage(int64_t step, const std::string &what, Milliseconds waited,
                           Milliseconds limit);

/// A number of seconds as the flag takes it (`600`, `0.5`).
std::string formatSeconds(Milliseconds duration);

} // namespace fsdprt

#endif // FSDPRT_ABI_COLLECTIVETIMEOUT_H
