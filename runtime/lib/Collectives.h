//===- Collectives.h - The step's nonblocking collectives -------*- C++ -*-===//
//
// fsdprt_all_gather_start, fsdprt_reduce_scatter_start,
// fsdprt_all_reduce_start and fsdprt_wait (fsdprt.h; docs/Runtime.md,
// section 6) on MPI's nonblocking collectives. A handle indexes a table of
// pending requests; fsdprt_wait completes one and applies what MPI has no
// operation for (the division of AVG).
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_COLLECTIVES_H
#define FSDPRT_COLLECTIVES_H

namespace fsdprt {

/// At most this many collectives may be pending at once: more means a step
/// that never waits for its handles.
constexpr int kMaxPendingCollectives = 256;

/// The number of collectives started and not yet waited for. The runtime
/// checks it is 0 after every step.
int pendingCollectives();

} // namespace fsdprt

#endif // FSDPRT_COLLECTIVES_H
