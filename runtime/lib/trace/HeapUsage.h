//===- HeapUsage.h - Measured heap in use -----------------------*- C++ -*-===//
//
// The trainer reports what the process actually holds on the heap (the
// `bytes_in_use` of --log-json), not what the compiler predicted, so the two
// can be compared.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRACE_HEAPUSAGE_H
#define FSDPRT_TRACE_HEAPUSAGE_H

#include <cstdint>

namespace fsdprt {

/// Bytes currently allocated from the heap, including large blocks malloc
/// serves with mmap (such as the arena).
uint64_t heapBytesInUse();

/// Makes malloc keep the memory a step frees for the next step instead of
/// returning it to the system: a generated step allocates and frees the same
/// temporaries every step, and faulting their pages in again each time costs
/// as much as the step's arithmetic (PyTorch's caching allocators exist for
/// the same reason).
void keepFreedMemoryForReuse();

} // namespace fsdprt

#endif // FSDPRT_TRACE_HEAPUSAGE_H
