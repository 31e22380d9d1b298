//===- HostParallel.h - Elementwise work on the host's cores ----*- C++ -*-===//
//
// One pool of threads per process (the calling thread among them) for work
// that is elementwise over a range, so that the result cannot depend on how
// the range is cut: offload's update (fsdprt_host_parallel) and the initial
// parameter values (Init.cpp).
//
// Threads: FSDPRT_HOST_THREADS, else the machine's hardware threads shared
// out among the ranks on this node (MPI launchers say how many:
// OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS, SLURM_NTASKS_PER_NODE).
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRAINER_HOSTPARALLEL_H
#define FSDPRT_TRAINER_HOSTPARALLEL_H

#include <cstdint>
#include <functional>

namespace fsdprt {

/// Calls `body(begin, end)` on chunks of [0, count) from the pool and returns
/// when every chunk is done. A chunk holds at least `minChunk` elements (work
/// enough to dwarf taking it) and starts at a multiple of 64 (each chunk's
/// vector loop starts aligned as the range does); a range of at most
/// `minChunk` runs on the calling thread alone.
void parallelChunks(int64_t count, int64_t minChunk,
                    const std::function<void(int64_t begin, int64_t end)> &body);

} // namespace fsdprt

#endif // FSDPRT_TRAINER_HOSTPARALLEL_H
