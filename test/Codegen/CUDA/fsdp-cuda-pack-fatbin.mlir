// REQUIRES: cuda-toolkit
// RUN: fsdp-opt %s --gpu-module-to-binary="format=bin toolkit=%cuda_toolkit" --fsdp-cuda-pack-fatbin="toolkit=%cuda_toolkit" | FileCheck %s
// RUN: not fsdp-opt %s --gpu-module-to-binary="format=bin toolkit=%cuda_toolkit" --fsdp-cuda-pack-fatbin="toolkit=%t.missing" 2>&1 | FileCheck %s --check-prefix=MISSING

// One cubin per target becomes one fat binary holding both, in the section
// the CUDA tools read (the bytes start with the fatbin magic 0xBA55ED50).

// CHECK:      gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_80">, properties = {section = ".nv_fatbin"}, "P\EDU\BA
// CHECK-NOT:  #gpu.object
// MISSING:    error: the GPU binary @kernels: needs the CUDA toolkit's fatbinary, not found at {{.*}}missing/bin/fatbinary
module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target<chip = "sm_80">, #nvvm.target<chip = "sm_90">] {
    llvm.func @scale(%p: !llvm.ptr, %x: f32) attributes {gpu.kernel, nvvm.kernel} {
      %v = llvm.load %p : !llvm.ptr -> f32
      %w = llvm.fmul %v, %x : f32
      llvm.store %w, %p : f32, !llvm.ptr
      llvm.return
    }
  }
}
