//===- DType.cpp - Element types of arena tensors -------------------------===//

#include "abi/DType.h"

#include <cassert>
#include <cmath>
#include <cstring>

namespace fsdprt {

/// The schema's entry of `type`: DType follows its table's order.
static const manifest::DTypeSpec &specOf(DType type) {
  return manifest::kDTypes[static_cast<size_t>(type)];
}

std::optional<DType> parseDType(std::string_view name) {
  const manifest::DTypeSpec *spec = manifest::findByName(manifest::kDTypes, name);
  if (!spec)
    return std::nullopt;
  return static_cast<DType>(spec - manifest::kDTypes);
}

const char *dtypeName(DType type) { return specOf(type).name; }

size_t dtypeSize(DType type) { return static_cast<size_t>(specOf(type).bytes); }

bool isFloatDType(DType type) { return specOf(type).isFloat; }

static uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

static float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint16_t roundToBF16(double value) {
  if (std::isnan(value))
    return std::signbit(value) ? 0xFFC0 : 0x7FC0;
  // Round to float with "round to odd": truncate, and mark any inexactness in
  // the last bit. Float keeps 16 more mantissa bits than bfloat16, so the
  // second rounding (to nearest even) then gives exactly what rounding the
  // double directly would. Float and bfloat16 share the exponent range, so
  // overflow and subnormals come out right as well.
  float single = static_cast<float>(value);
  if (std::isfinite(single) && static_cast<double>(single) != value) {
    uint32_t bits = floatBits(single);
    // Float bit patterns of one sign are ordered by magnitude: one step down
    // is the next value toward zero.
    if (std::fabs(static_cast<double>(single)) > std::fabs(value))
      bits -= 1;
    single = bitsToFloat(bits | 1u);
  }
  uint32_t bits = floatBits(single);
  uint32_t lsb = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7FFFu + lsb) >> 16);
}

double bf16ToDouble(uint16_t bits) {
  return static_cast<double>(bitsToFloat(static_cast<uint32_t>(bits) << 16));
}

void storeReal(double value, DType type, void *dst) {
  assert(isFloatDType(type) && "storeReal needs a float dtype");
  if (type == DType::F32) {
    float single = static_cast<float>(value);
    std::memcpy(dst, &single, sizeof(single));
    return;
  }
  uint16_t half = roundToBF16(value);
  std::memcpy(dst, &half, sizeof(half));
}

double loadReal(DType type, const void *src) {
  assert(isFloatDType(type) && "loadReal needs a float dtype");
  if (type == DType::F32) {
    float single;
    std::memcpy(&single, src, sizeof(single));
    return single;
  }
  uint16_t half;
  std::memcpy(&half, src, sizeof(half));
  return bf16ToDouble(half);
}

void storeInteger(int64_t value, DType type, void *dst) {
  assert(!isFloatDType(type) && "storeInteger needs an integer dtype");
  if (type == DType::I32) {
    int32_t narrow = static_cast<int32_t>(value);
    std::memcpy(dst, &narrow, sizeof(narrow));
    return;
  }
  std::memcpy(dst, &value, sizeof(value));
}

int64_t loadInteger(DType type, const void *src) {
  assert(!isFloatDType(type) && "loadInteger needs an integer dtype");
  if (type == DType::I32) {
    int32_t narrow;
    std::memcpy(&narrow, src, sizeof(narrow));
    return narrow;
  }
  int64_t wide;
  std::memcpy(&wide, src, sizeof(wide));
  return wide;
}

} // namespace fsdprt
