//===- HeapUsage.h - Measured heap in use -----------------------*- C++ -*-===//
//
// The trainer reports what the process actually holds on the heap (the
// `bytes_in_use` of --log-json), not what the compiler predicted, so the two
// can be compared.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_HEAPUSAGE_H
#define FSDPRT_HEAPUSAGE_H

#include <cstdint>

namespace fsdprt {

/// Bytes currently allocated from the heap, including large blocks malloc
/// serves with mmap (such as the arena).
uint64_t heapBytesInUse();

} // namespace fsdprt

#endif // FSDPRT_HEAPUSAGE_H
