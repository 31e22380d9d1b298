// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-cuda-form-kernels,func.func(gpu-map-parallel-loops,convert-parallel-loops-to-gpu),gpu-kernel-outlining,fsdp-cuda-bundle-kernels)' | FileCheck %s

// Outlining gives each kernel a module; the step's kernels go into one,
// named in launch order, each launched on the runtime's compute stream (an
// async launch depending on it: gpu-to-llvm then launches on that stream and
// neither creates a stream nor synchronises). Identical kernels (the same op
// on the same shapes, other buffers) are one kernel launched twice.

#id = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @fsdp_train_step
// CHECK-NEXT:  %[[COMPUTE:.+]] = arith.constant 0 : i32
// CHECK-NEXT:  %[[STREAM:.+]] = call @fsdprt_stream(%[[COMPUTE]]) : (i32) -> !llvm.ptr
// CHECK-NEXT:  %[[TOKEN:.+]] = builtin.unrealized_conversion_cast %[[STREAM]] : !llvm.ptr to !gpu.async.token
// CHECK:       %[[B:.+]] = memref.view %{{.+}}[%c4096{{.*}}]
// CHECK:       gpu.launch_func async [%[[TOKEN]]] @fsdp_kernels::@fsdp_kernel_0 blocks in
// CHECK:       gpu.launch_func async [%[[TOKEN]]] @fsdp_kernels::@fsdp_kernel_1 blocks in
// CHECK:       gpu.launch_func async [%[[TOKEN]]] @fsdp_kernels::@fsdp_kernel_0 blocks in
// CHECK-SAME:    %[[B]] : memref<1000xf32>)
// CHECK:       gpu.launch_func async [%[[TOKEN]]] @fsdp_kernels::@fsdp_kernel_2 blocks in
// CHECK:       return
func.func @fsdp_train_step(%arena: memref<8192xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c4096 = arith.constant 4096 : index
  %a = memref.view %arena[%c0][] : memref<8192xi8> to memref<1000xf32>
  %b = memref.view %arena[%c4096][] : memref<8192xi8> to memref<1000xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%a : memref<1000xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<1000xf32>) outs(%b : memref<1000xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %lr : f32
    linalg.yield %s : f32
  }
  // The first kernel again on another buffer, then one of another size
  // (over the same bytes: a kernel of its own, not fused with the first).
  linalg.fill ins(%zero : f32) outs(%b : memref<1000xf32>)
  %small = memref.view %arena[%c4096][] : memref<8192xi8> to memref<100xf32>
  linalg.fill ins(%zero : f32) outs(%small : memref<100xf32>)
  return %zero : f32
}
// CHECK-NOT:   gpu.module
// CHECK:       gpu.module @fsdp_kernels {
// CHECK-NEXT:    gpu.func @fsdp_kernel_0(
// CHECK:         gpu.func @fsdp_kernel_1(
// CHECK:         gpu.func @fsdp_kernel_2(
// CHECK-NOT:     gpu.func
// CHECK-NOT:   gpu.module
// CHECK:       func.func private @fsdprt_stream(i32) -> !llvm.ptr
