// RUN: fsdp-opt %s --fsdp-cuda-precise-math | FileCheck %s

// The kernels' square roots are IEEE-rounded (fsdp-cuda-pipeline runs this
// unless the plan allows approximate math): libdevice's correctly rounded
// square root, and 1 / it for a reciprocal square root
// (fsdp-cuda-precise-math-ptx.mlir: the PTX).
// CHECK-LABEL: gpu.module @kernels
// CHECK-DAG:   llvm.func @__nv_fsqrt_rn(f32) -> f32
// CHECK-DAG:   llvm.func @__nv_dsqrt_rn(f64) -> f64
// CHECK-LABEL: gpu.func @roots
// CHECK:       %[[X:.+]] = memref.load
// CHECK-NEXT:  %[[S:.+]] = llvm.call @__nv_fsqrt_rn(%[[X]]) : (f32) -> f32
// CHECK-NEXT:  %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:  %[[T:.+]] = llvm.call @__nv_fsqrt_rn(%[[X]]) : (f32) -> f32
// CHECK-NEXT:  %[[R:.+]] = arith.divf %[[ONE]], %[[T]] : f32
// CHECK:       llvm.call @__nv_dsqrt_rn(%{{.+}}) : (f64) -> f64
// CHECK-NOT:   math.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @roots(%m: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %x = memref.load %m[%c0] : memref<4xf32>
      %s = math.sqrt %x : f32
      %r = math.rsqrt %x : f32
      memref.store %s, %m[%c1] : memref<4xf32>
      memref.store %r, %m[%c2] : memref<4xf32>
      %d = arith.extf %x : f32 to f64
      %e = math.sqrt %d : f64
      %f = arith.truncf %e : f64 to f32
      memref.store %f, %m[%c0] : memref<4xf32>
      gpu.return
    }
  }
}
