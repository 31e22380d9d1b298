//===- Philox.h - Counter-based random numbers of the contract --*- C++ -*-===//
//
// Every random value the runtime produces (initial parameters, synthetic data)
// is a pure function of a key and a counter, so it does not depend on how many
// ranks there are or which rank computes it (docs/Runtime.md, section 3).
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRAINER_PHILOX_H
#define FSDPRT_TRAINER_PHILOX_H

#include <array>
#include <cstdint>
#include <string_view>

namespace fsdprt {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;
using PhiloxBlock = std::array<uint32_t, 4>;

inline uint32_t lo32(uint64_t value) { return static_cast<uint32_t>(value); }
inline uint32_t hi32(uint64_t value) { return static_cast<uint32_t>(value >> 32); }

/// Philox4x32-10 (Salmon et al., SC'11) with the constants of Random123.
PhiloxBlock philox4x32_10(PhiloxCounter counter, PhiloxKey key);

/// The 64-bit FNV-1a hash of `bytes`: the parameter id.
uint64_t fnv1a64(std::string_view bytes);

/// `((a >> 5) * 2^26 + (b >> 6) + 0.5) / 2^53`, evaluated left to right in
/// double exactly as written (the NumPy reference does the same).
double uniformFromWords(uint32_t a, uint32_t b);

/// u1 = u(w0, w1) and u2 = u(w2, w3) of one Philox block.
inline double uniform1(const PhiloxBlock &w) { return uniformFromWords(w[0], w[1]); }
inline double uniform2(const PhiloxBlock &w) { return uniformFromWords(w[2], w[3]); }

/// Box-Muller, first output: sqrt(-2 ln u1) * cos(2 pi u2).
double standardNormal(const PhiloxBlock &w);

} // namespace fsdprt

#endif // FSDPRT_TRAINER_PHILOX_H
