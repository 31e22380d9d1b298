// RUN: fsdp-opt %s -fsdp-approximate-math | FileCheck %s
// RUN: fsdp-opt %s -fsdp-approximate-math -convert-math-to-llvm -convert-math-to-libm | FileCheck %s --check-prefix=LIBM

// exp, log and tanh of f32 become straight-line arithmetic: no math call is
// left for convert-math-to-libm to turn into a libm call per element. Their
// fmas go to LLVM's intrinsic first, as in fsdp-cpu-pipeline (libm would make
// each a call of fmaf).
// CHECK-LABEL: func.func @softmax_like
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
// CHECK-NOT: math.tanh
// CHECK: math.fma
// CHECK: return
// LIBM-LABEL: func.func @softmax_like
// LIBM-NOT: call @expf
// LIBM-NOT: call @logf
// LIBM-NOT: call @tanhf
// LIBM-NOT: call @fmaf
// LIBM: llvm.intr.fma
// LIBM-NOT: call @fmaf
// LIBM: return
func.func @softmax_like(%x: f32, %y: f32) -> (f32, f32, f32) {
  %e = math.exp %x : f32
  %l = math.log %y : f32
  %t = math.tanh %x : f32
  return %e, %l, %t : f32, f32, f32
}

// Other functions are left alone (the step uses sqrt, which LLVM has as an
// instruction).
// CHECK-LABEL: func.func @others
// CHECK: math.sqrt
// CHECK: math.erf
func.func @others(%x: f32) -> (f32, f32) {
  %s = math.sqrt %x : f32
  %e = math.erf %x : f32
  return %s, %e : f32, f32
}
