//===- HeapUsage.cpp - Measured heap in use -------------------------------===//

#include "HeapUsage.h"

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

} // namespace fsdprt
