//===- Arena.h - The buffer every persistent tensor lives in ----*- C++ -*-===//
//
// One buffer of manifest.arena_bytes bytes, 64-byte aligned and zero-filled,
// owned by the runtime and passed to every step.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_ARENA_H
#define FSDPRT_ARENA_H

#include <cstddef>
#include <cstdint>

namespace fsdprt {

class Arena {
public:
  static constexpr size_t kAlignment = 64;

  /// Allocates and zero-fills `bytes` bytes; failure to allocate is fatal.
  explicit Arena(size_t bytes);
  ~Arena();
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;

  uint8_t *data() const { return base; }
  size_t size() const { return bytes; }

private:
  uint8_t *base = nullptr;
  size_t bytes = 0;
};

} // namespace fsdprt

#endif // FSDPRT_ARENA_H
