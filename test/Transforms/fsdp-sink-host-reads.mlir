// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --fsdp-sink-host-reads | FileCheck %s

// On a GPU the host cannot load from the arena: a scalar the kernels use is
// read inside each kernel, and the loss through the runtime.

#id = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @fsdp_train_step
// CHECK-SAME:    (%[[ARENA:.+]]: memref<8192xi8>
func.func @fsdp_train_step(%arena: memref<8192xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c4096 = arith.constant 4096 : index
  %c8000 = arith.constant 8000 : index
  %w = memref.view %arena[%c0][] : memref<8192xi8> to memref<1000xf32>
  %scale_buffer = memref.view %arena[%c4096][] : memref<8192xi8> to memref<f32>
  %loss_buffer = memref.view %arena[%c8000][] : memref<8192xi8> to memref<f32>
  // CHECK-NOT:  memref.load
  // CHECK:      linalg.generic
  // CHECK-NEXT: ^bb0(%[[IN:.+]]: f32):
  // CHECK-NEXT:   %[[SCALE:.+]] = memref.load %{{.+}}[] : memref<f32>
  // CHECK-NEXT:   arith.mulf %[[IN]], %[[SCALE]] : f32
  %scale = memref.load %scale_buffer[] : memref<f32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%w : memref<1000xf32>) {
  ^bb0(%in: f32):
    %x = arith.mulf %in, %scale : f32
    linalg.yield %x : f32
  }
  // CHECK:      %[[BASE:.+]] = memref.extract_aligned_pointer_as_index %[[LOSS:.+]] : memref<f32> -> index
  // CHECK:      %[[ADDRESS:.+]] = llvm.inttoptr %{{.+}} : i64 to !llvm.ptr
  // CHECK-NEXT: %[[VALUE:.+]] = call @fsdprt_read_f32(%[[ADDRESS]]) : (!llvm.ptr) -> f32
  // CHECK-NEXT: return %[[VALUE]] : f32
  %loss = memref.load %loss_buffer[] : memref<f32>
  return %loss : f32
}
// CHECK: func.func private @fsdprt_read_f32(!llvm.ptr) -> f32

// -----

func.func @fsdp_train_step(%arena: memref<8192xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %buffer = memref.view %arena[%c0][] : memref<8192xi8> to memref<f32>
  // expected-error @below {{'memref.load' op is read by host code, which cannot read device memory}}
  %x = memref.load %buffer[] : memref<f32>
  // expected-note @below {{read here}}
  %y = arith.mulf %x, %lr : f32
  return %y : f32
}
