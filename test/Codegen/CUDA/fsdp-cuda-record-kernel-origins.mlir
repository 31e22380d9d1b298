// RUN: fsdp-opt %s -split-input-file --fsdp-cuda-record-kernel-origins | FileCheck %s

// Each kernel's line: its name, a tab, the distinct places of its ops in the
// order its body first uses them (inside fused locations and names too), at
// most four, then "...". The table is NUL-terminated, for the runtime.

// CHECK: llvm.mlir.global external constant @fsdp_kernel_origins("fsdp_kernel_0\09model.mlir:3:5, model.mlir:4:7\0Afsdp_kernel_1\09model.mlir:9:1, model.mlir:10:1, model.mlir:11:1, model.mlir:12:1, ...\0A\00")
module attributes {gpu.container_module} {
  gpu.module @fsdp_kernels {
    gpu.func @fsdp_kernel_0(%x: f32) kernel {
      %a = arith.addf %x, %x : f32 loc("model.mlir":3:5)
      %b = arith.mulf %a, %x : f32 loc(fused["model.mlir":4:7, "model.mlir":3:5])
      %c = arith.subf %b, %a : f32 loc("gelu"("model.mlir":4:7))
      gpu.return loc("model.mlir":3:5)
    }
    gpu.func @fsdp_kernel_1(%x: f32) kernel {
      %a = arith.addf %x, %x : f32 loc("model.mlir":9:1)
      %b = arith.addf %a, %x : f32 loc("model.mlir":10:1)
      %c = arith.addf %b, %x : f32 loc("model.mlir":11:1)
      %d = arith.addf %c, %x : f32 loc("model.mlir":12:1)
      %e = arith.addf %d, %x : f32 loc("model.mlir":13:1)
      gpu.return loc("model.mlir":9:1)
    }
  }
}

// -----

// A module without kernels (every op a library call) has an empty table.
// CHECK: llvm.mlir.global external constant @fsdp_kernel_origins("\00")
module {
}
