// RUN: fsdp-opt %s -split-input-file -fsdp-insert-collectives -verify-diagnostics | FileCheck %s

// Hand-written steps the pass must handle without fsdp-autodiff's shape: a
// read nobody uses is dropped without a gather, and a gradient that is an
// argument of the step is flattened at its start.

// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: %[[FLAT:.+]] = fsdp.flatten @lin(%arg1) : tensor<4xf32> -> tensor<32xf32>
// CHECK-NEXT: %[[SHARD:.+]] = fsdp.reduce_scatter %[[FLAT]] avg : tensor<32xf32> -> tensor<16xf32>
// CHECK-NOT: fsdp.all_gather
// CHECK-NOT: fsdp.use
// CHECK: fsdp.update @lin, %[[SHARD]]
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "lin" at 0 : tensor<4xf32> = #fsdp.ones
  fsdp.unit @lin numel 4 shard 16 ranks 2 : f32
  func.func @train_step(%x: tensor<1x4xf32>, %g: tensor<4xf32>, %step: i64, %lr: f32) -> tensor<f32> {
    %w = fsdp.use @w : tensor<4xf32>
    %l = fsdp.reduce_mean %x dims [0, 1] : tensor<1x4xf32> -> tensor<f32>
    fsdp.update @w, %g step %step lr %lr {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<4xf32>
    return %l : tensor<f32>
  }
}

// -----

module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "lin" at 0 : tensor<4xf32> = #fsdp.ones
  fsdp.unit @lin numel 4 shard 16 ranks 2 : f32
  func.func @train_step(%x: tensor<1x4xf32>, %step: i64, %lr: f32) {
    // expected-error@+1 {{the step must return the loss it computes}}
    return
  }
}
