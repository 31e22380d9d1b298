//===- CardPeaks.cpp - The dense product rates of the GPUs we know --------===//

#include "cuda/CardPeaks.h"

#include <array>

namespace fsdprt {

namespace {

/// One card of NVIDIA's datasheets, in TFLOP/s of dense products.
struct Card {
  std::string_view nameContains;
  double bf16, tf32, f32;
};

/// First match wins: the NVL and PCIe variants before the SXM name they
/// contain. An H200 SXM computes as an H100 SXM (the same GH100 at the same
/// clock; more and faster memory).
constexpr std::array<Card, 8> kCards{{
    {"H100 NVL", 835.5, 417.5, 60.0},
    {"H200 NVL", 835.5, 417.5, 60.0},
    {"H100 PCIe", 756.5, 378.0, 51.2},
    {"H100", 989.4, 494.7, 66.9},
    {"H200", 989.4, 494.7, 66.9},
    {"A100", 312.0, 156.0, 19.5},
    {"L40S", 362.05, 183.0, 91.6},
    {"L4", 121.0, 60.0, 30.3},
}};

/// Whether `name` has `word` followed by nothing or a space: "L4" is not in
/// "NVIDIA L40S".
bool namesCard(std::string_view name, std::string_view word) {
  for (size_t at = name.find(word); at != std::string_view::npos; at = name.find(word, at + 1)) {
    size_t end = at + word.size();
    if (end == name.size() || name[end] == ' ' || name[end] == '-')
      return true;
  }
  return false;
}

} // namespace

PeakRates cardPeak(std::string_view name, bool allowTf32) {
  for (const Card &card : kCards)
    if (namesCard(name, card.nameContains))
      return {std::string(name) + " (datasheet, dense)", card.bf16 * 1e12,
              (allowTf32 ? card.tf32 : card.f32) * 1e12};
  return {std::string(name), 0, 0};
}

} // namespace fsdprt
