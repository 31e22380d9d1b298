//===- Philox.cpp - Counter-based random numbers of the contract ----------===//

#include "trainer/Philox.h"

#include <cmath>

namespace fsdprt {

static constexpr uint32_t kPhiloxM0 = 0xD2511F53;
static constexpr uint32_t kPhiloxM1 = 0xCD9E8D57;
static constexpr uint32_t kPhiloxW0 = 0x9E3779B9;
static constexpr uint32_t kPhiloxW1 = 0xBB67AE85;

static PhiloxCounter philoxRound(const PhiloxCounter &x, const PhiloxKey &key) {
  uint64_t product0 = static_cast<uint64_t>(kPhiloxM0) * x[0];
  uint64_t product1 = static_cast<uint64_t>(kPhiloxM1) * x[2];
  return {hi32(product1) ^ x[1] ^ key[0], lo32(product1), hi32(product0) ^ x[3] ^ key[1],
          lo32(product0)};
}

PhiloxBlock philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  // Ten rounds; the key is bumped between rounds (nine times), as in
  // Random123's philox4x32_R.
  counter = philoxRound(counter, key);
  for (int round = 1; round < 10; ++round) {
    key[0] += kPhiloxW0;
    key[1] += kPhiloxW1;
    counter = philoxRound(counter, key);
  }
  return counter;
}

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

double uniformFromWords(uint32_t a, uint32_t b) {
  // The sum is a 53-bit integer plus one half: for the largest integers the
  // half rounds (to even), so u can be exactly 1.0 (with probability 2^-53).
  // Callers that index with u clamp; see SyntheticData.cpp.
  double high = static_cast<double>(a >> 5);
  double low = static_cast<double>(b >> 6);
  return (high * 67108864.0 + low + 0.5) / 9007199254740992.0;
}

double standardNormal(const PhiloxBlock &w) {
  double u1 = uniform1(w);
  double u2 = uniform2(w);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

} // namespace fsdprt
