//===- DType.h - Element types of arena tensors -----------------*- C++ -*-===//
//
// The four element types a manifest names (f32, bf16, i32, i64), their sizes,
// and the conversions the runtime needs to write values the way the contract
// says: computed in double, rounded to the storage type to nearest even.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_ABI_DTYPE_H
#define FSDPRT_ABI_DTYPE_H

#include "fsdprt/ManifestSchema.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace fsdprt {

/// The manifest's element types, in the order of fsdprt/ManifestSchema.def,
/// which gives their names and sizes.
enum class DType {
#define FSDPRT_MANIFEST_DTYPE(NAME, VALUE, BYTES, FLOAT, MEANING) NAME,
#include "fsdprt/ManifestSchema.def"
};

/// Parses a manifest dtype name (`f32`, `bf16`, `i32`, `i64`).
std::optional<DType> parseDType(std::string_view name);
const char *dtypeName(DType type);
size_t dtypeSize(DType type);
bool isFloatDType(DType type);

/// Rounds a double to the nearest bfloat16 (ties to even), returning its bits.
/// Rounds directly from double: going through float first would round twice
/// and can differ from the contract in the last bit.
uint16_t roundToBF16(double value);
double bf16ToDouble(uint16_t bits);

/// A float rounded to bfloat16 (ties to even; NaN stays a quiet NaN): the
/// one rounding of an f32 result stored as bf16, fast enough for loops.
inline uint16_t floatToBF16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

/// A bfloat16 widened to float (exact).
inline float bf16ToFloat(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

/// Stores `value` rounded to the float type `type` (f32 or bf16) at `dst`.
void storeReal(double value, DType type, void *dst);
/// Reads a float-typed element (f32 or bf16) as a double.
double loadReal(DType type, const void *src);

/// Stores `value` in the integer type `type` (i32 or i64) at `dst`; the caller
/// guarantees it fits.
void storeInteger(int64_t value, DType type, void *dst);
/// Reads an integer-typed element (i32 or i64).
int64_t loadInteger(DType type, const void *src);

} // namespace fsdprt

#endif // FSDPRT_ABI_DTYPE_H
