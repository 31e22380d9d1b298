//===- HeapUsage.cpp - Measured heap in use -------------------------------===//

#include "trace/HeapUsage.h"

#include <climits>
#include <cstddef>
#include <malloc.h>

#if defined(__SANITIZE_ADDRESS__)
// AddressSanitizer replaces malloc, so glibc's mallinfo2 no longer sees the
// allocations; its own allocator reports them instead.
extern "C" size_t __sanitizer_get_current_allocated_bytes(void);
#endif

namespace fsdprt {

uint64_t heapBytesInUse() {
#if defined(__SANITIZE_ADDRESS__)
  return __sanitizer_get_current_allocated_bytes();
#else
  struct mallinfo2 info = mallinfo2();
  // uordblks: bytes in use in the main heap and arenas; hblkhd: bytes in
  // blocks served by mmap.
  return static_cast<uint64_t>(info.uordblks) + static_cast<uint64_t>(info.hblkhd);
#endif
}

void keepFreedMemoryForReuse() {
  // Blocks up to glibc's largest threshold (32 MiB) from the heap rather than
  // mmap, which munmap would return on free; no trimming of the heap's top.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

} // namespace fsdprt
