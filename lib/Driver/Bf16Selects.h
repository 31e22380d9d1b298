//===- Bf16Selects.h - bf16 selects made integer selects --------*- C++ -*-===//
//
// The step's bf16 values pass through LLVM IR only as loads, stores and the
// select of arith-expand's rounding (a NaN becomes the quiet NaN 0x7FC0):
// the arithmetic itself is f32. arith-expand selects on i16 and bitcasts
// after, but LLVM's InstCombine moves the bitcast above the select, and on
// an x86-64 without AVX512-BF16 (every AVX2 CPU, Xeons before Cooper Lake)
// the code generator has no vector select of bfloat: it takes a vectorised
// loop's select apart lane by lane, which made every bf16 elementwise loop
// of the step two to four times slower than its f32 twin (docs/Runtime.md,
// section 1). Selecting the same bits as integers is one blend instruction
// on every x86-64, with or without bf16 instructions.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_DRIVER_BF16SELECTS_H
#define FSDP_DRIVER_BF16SELECTS_H

#include "llvm/IR/Module.h"

namespace mlir::fsdp {

/// Rewrites every `select` of bfloat (or vectors of bfloat) in `module` as a
/// select of the same bits as i16, bitcast to bfloat after. Run after LLVM's
/// optimisation, which would move the bitcasts back.
void selectBf16AsIntegers(llvm::Module &module);

} // namespace mlir::fsdp

#endif // FSDP_DRIVER_BF16SELECTS_H
