// RUN: fsdp-opt %s -split-input-file -fsdp-autodiff=forward-only | FileCheck %s
// RUN: fsdp-opt %s -split-input-file -fsdp-form-units -fsdp-partition -fsdp-autodiff=forward-only -fsdp-remat -fsdp-insert-collectives -fsdp-accumulate-micro-batches | FileCheck %s --check-prefix=SHARDED

// The held-out evaluation step: the forward pass and the loss, with the
// training step's signature and no backward or update, whatever the plan's
// optimizer and clipping.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[Y:.+]]: tensor<4xi32>, %{{.+}}: i64, %{{.+}}: f32) -> tensor<f32>
// CHECK-SAME: attributes {fsdp.forward_only}
// CHECK: %[[W:.+]] = fsdp.use @w
// CHECK: %[[B:.+]] = fsdp.use @b
// CHECK: %[[M:.+]] = fsdp.matmul %[[X]], %[[W]]
// CHECK: %[[Z:.+]] = fsdp.add %[[M]], %[[B]]
// CHECK: %[[L:.+]] = fsdp.cross_entropy %[[Z]], %[[Y]]
// CHECK-NEXT: return %[[L]] : tensor<f32>

// Sharded over 2 ranks with remat and 2 micro-batches: each unit gathered
// before its first read and freed after its last, once per micro-batch (no
// re-gather: nothing reads it again); no gradient, no reduction, no update,
// nothing recomputed; the loss is the micro-batches' mean.
// SHARDED-LABEL: func.func @train_step
// SHARDED-SAME: tensor<1x8xf32>, %{{.+}}: tensor<1xi32>, %{{.+}}: tensor<1x8xf32>, %{{.+}}: tensor<1xi32>, %{{.+}}: i64, %{{.+}}: f32
// SHARDED-SAME: fsdp.forward_only, fsdp.micro_batches = 2
// SHARDED-NOT: reduce_scatter
// SHARDED-NOT: fsdp.update
// SHARDED-NOT: _grad
// SHARDED: %[[G0:.+]] = fsdp.all_gather @[[UNIT:.+]] :
// SHARDED: fsdp.free %[[G0]]
// SHARDED: fsdp.cross_entropy
// SHARDED: %[[G1:.+]] = fsdp.all_gather @[[UNIT]] :
// SHARDED: fsdp.free %[[G1]]
// SHARDED: fsdp.cross_entropy
// SHARDED-NOT: fsdp.all_gather
// SHARDED: %[[SUM:.+]] = fsdp.add
// SHARDED: %[[MEAN:.+]] = fsdp.scale %[[SUM]] by 0.5
// SHARDED: return %[[MEAN]]
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.adamw<lr = 0.001>, clip_grad_norm = 1.0, remat = unit, micro_batches = 2>} {
  fsdp.param @w unit "layer" : tensor<8x3xf32> = #fsdp.fan_in_uniform
  fsdp.param @b unit "layer" : tensor<3xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4xi32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<8x3xf32>
    %b = fsdp.use @b : tensor<3xf32>
    %m = fsdp.matmul %x, %w : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
    %z = fsdp.add %m, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
    %l = fsdp.cross_entropy %z, %y : tensor<4x3xf32>, tensor<4xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
