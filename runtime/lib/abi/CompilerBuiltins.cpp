//===- CompilerBuiltins.cpp - libgcc builtins LLVM's code may call --------===//
//
// LLVM's x86 backend, on CPUs without native bf16 arithmetic, holds a bf16
// value that stays in a register (a phi of bf16 vectors where it merges the
// stores of fused kernels, for instance) as a float, and narrows it back to
// bf16 through the compiler runtime's __truncsfbf2. libgcc has it only from
// GCC 13 on; Debian 12's GCC 12 does not, and trainers link through it. The
// definition here is the same conversion: to nearest even, NaN kept quiet.
//
//===----------------------------------------------------------------------===//

#include "abi/DType.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
// The result is a bf16 in the low 16 bits of xmm0, where the x86-64 ABI
// returns a float too: GCC 12 has no __bf16 type to name it, so it is
// returned as the float with those bits.
extern "C" float __truncsfbf2(float value) {
  uint32_t bits = fsdprt::floatToBF16(value);
  float result;
  std::memcpy(&result, &bits, sizeof(result));
  return result;
}
#endif
