//===- Arena.cpp - The buffer every persistent tensor lives in ------------===//

#include "Arena.h"

#include "Error.h"

#include <cstdlib>
#include <cstring>

namespace fsdprt {

Arena::Arena(size_t bytes) : bytes(bytes) {
  // aligned_alloc wants a multiple of the alignment, and a zero-byte arena
  // still needs a valid pointer to pass to the step.
  size_t rounded = bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded < bytes)
    fatal("cannot allocate the arena of " + std::to_string(bytes) + " bytes");
  base = static_cast<uint8_t *>(std::aligned_alloc(kAlignment, rounded));
  if (!base)
    fatal("cannot allocate the arena of " + std::to_string(bytes) + " bytes");
  std::memset(base, 0, rounded);
}

Arena::~Arena() { std::free(base); }

} // namespace fsdprt
