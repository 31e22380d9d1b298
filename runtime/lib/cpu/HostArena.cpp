//===- HostArena.cpp - The arena in host memory ---------------------------===//
//
// On the CPU the step works on host memory: the host view is the arena, and
// there is nothing to copy.
//
//===----------------------------------------------------------------------===//

#include "abi/Arena.h"

#include "abi/Error.h"
#include "fsdprt/fsdprt.h"

#include <cstdlib>
#include <cstring>

namespace fsdprt {

static constexpr size_t kAlignment = FSDPRT_ARENA_ALIGNMENT;

Arena::Arena(size_t bytes) : bytes(bytes) {
  // aligned_alloc wants a multiple of the alignment, and a zero-byte arena
  // still needs a valid pointer to pass to the step.
  size_t rounded = bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded < bytes)
    fatal("cannot allocate the arena of " + std::to_string(bytes) + " bytes");
  hostView = static_cast<uint8_t *>(std::aligned_alloc(kAlignment, rounded));
  if (!hostView)
    fatal("cannot allocate the arena of " + std::to_string(bytes) + " bytes");
  std::memset(hostView, 0, rounded);
  step = hostView;
}

Arena::~Arena() { std::free(hostView); }

HostArena::HostArena(size_t bytes) {
  if (bytes == 0)
    return;
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  memory = rounded < bytes ? nullptr : static_cast<uint8_t *>(std::aligned_alloc(kAlignment, rounded));
  if (!memory)
    fatal("cannot allocate the host arena of " + std::to_string(bytes) + " bytes");
  std::memset(memory, 0, rounded);
}

HostArena::~HostArena() { std::free(memory); }

void Arena::upload(int64_t, int64_t) {}

void Arena::upload(const std::vector<ByteRange> &) {}

void Arena::download(int64_t, int64_t) {}

void Arena::fill(int64_t offset, int64_t count, uint8_t value) {
  std::memset(hostView + offset, value, static_cast<size_t>(count));
}

} // namespace fsdprt
