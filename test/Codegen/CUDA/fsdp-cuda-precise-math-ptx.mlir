// REQUIRES: cuda-toolkit
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-cuda-precise-math,gpu.module(convert-gpu-to-nvvm,reconcile-unrealized-casts),nvvm-attach-target{chip=sm_90},gpu-module-to-binary{format=isa toolkit=%cuda_toolkit})' | FileCheck %s
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(gpu.module(convert-gpu-to-nvvm,reconcile-unrealized-casts),nvvm-attach-target{chip=sm_90},gpu-module-to-binary{format=isa toolkit=%cuda_toolkit})' | FileCheck %s --check-prefix=APPROX

// The PTX of fsdp-cuda-precise-math's square roots (libdevice linked from the
// toolkit) and of a division: IEEE round-to-nearest, not flushed to zero.
// Without the pass (the plan's approximate_math), libdevice's defaults, the
// hardware's approximations.
// CHECK:     sqrt.rn.f32
// CHECK:     rcp.rn.f32
// CHECK:     div.rn.f32
// CHECK-NOT: approx
// APPROX:    sqrt.approx.f32
// APPROX:    rsqrt.approx.f32
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
      %y = memref.load %m[%c2] : memref<4xf32>
      %q = arith.divf %y, %s : f32
      memref.store %q, %m[%c0] : memref<4xf32>
      gpu.return
    }
  }
}
