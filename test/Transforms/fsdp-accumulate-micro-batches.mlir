// RUN: fsdp-opt %s -split-input-file -fsdp-form-units -fsdp-partition -fsdp-autodiff -fsdp-insert-collectives -fsdp-lower-precision -fsdp-accumulate-micro-batches -verify-diagnostics | FileCheck %s --enable-var-scope
// RUN: not fsdp-opt %s -split-input-file -fsdp-accumulate-micro-batches 2>&1 | FileCheck %s --check-prefix=NOSTEP
// NOSTEP: error: fsdp-accumulate-micro-batches needs the training step @train_step of fsdp-autodiff; the module has none

// A 2-layer MLP (8 -> 16, ReLU, 16 -> 4; units fc1 and fc2) whose global batch
// of 8 runs on 2 ranks as 2 micro-batches of 2 rows each.

// accumulate = reduce_scatter, bf16 reduction, clipping: the step takes each
// micro-batch's inputs; micro-batch 1 is micro-batch 0's forward and backward
// again on its own inputs (the units gathered again); each reduced shard,
// widened to f32, is added to micro-batch 0's as soon as it exists; clipping
// and the updates, once, read the mean; the loss is the mean loss.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X0:.+]]: tensor<2x8xf32>, %[[Y0:.+]]: tensor<2xi32>, %[[X1:.+]]: tensor<2x8xf32>, %[[Y1:.+]]: tensor<2xi32>, %[[STEP:.+]]: i64, %[[LR:.+]]: f32) -> tensor<f32>
// CHECK-SAME: attributes {fsdp.micro_batches = 2 : i64}
// CHECK: fsdp.convert %[[X0]]
// CHECK: %[[L0:.+]] = fsdp.cross_entropy %{{.+}}, %[[Y0]]
// CHECK: %[[R2A:.+]] = fsdp.reduce_scatter %{{.+}} avg : tensor<64xbf16> -> tensor<32xbf16>
// CHECK-NEXT: %[[S2A:.+]] = fsdp.convert %[[R2A]] : tensor<32xbf16> -> tensor<32xf32>
// CHECK: %[[R1A:.+]] = fsdp.reduce_scatter %{{.+}} avg : tensor<160xbf16> -> tensor<80xbf16>
// CHECK-NEXT: %[[S1A:.+]] = fsdp.convert %[[R1A]] : tensor<80xbf16> -> tensor<80xf32>
// CHECK-NEXT: fsdp.convert %[[X1]]
// CHECK-NEXT: fsdp.all_gather @fc1 : tensor<160xbf16>
// CHECK: %[[L1:.+]] = fsdp.cross_entropy %{{.+}}, %[[Y1]]
// CHECK-NEXT: %[[LS:.+]] = fsdp.add %[[L0]], %[[L1]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT: %[[L:.+]] = fsdp.scale %[[LS]] by 0.5 : tensor<f32>
// CHECK: fsdp.all_gather @fc2 : tensor<64xbf16>
// CHECK: %[[R2B:.+]] = fsdp.reduce_scatter %{{.+}} avg : tensor<64xbf16> -> tensor<32xbf16>
// CHECK-NEXT: %[[S2B:.+]] = fsdp.convert %[[R2B]] : tensor<32xbf16> -> tensor<32xf32>
// CHECK-NEXT: %[[SUM2:.+]] = fsdp.add %[[S2A]], %[[S2B]] : tensor<32xf32>, tensor<32xf32> -> tensor<32xf32>
// CHECK-NEXT: %[[D2:.+]] = fsdp.scale %[[SUM2]] by 0.5 : tensor<32xf32>
// CHECK: %[[R1B:.+]] = fsdp.reduce_scatter %{{.+}} avg : tensor<160xbf16> -> tensor<80xbf16>
// CHECK-NEXT: %[[S1B:.+]] = fsdp.convert %[[R1B]] : tensor<80xbf16> -> tensor<80xf32>
// CHECK-NEXT: %[[SUM1:.+]] = fsdp.add %[[S1A]], %[[S1B]] : tensor<80xf32>, tensor<80xf32> -> tensor<80xf32>
// CHECK-NEXT: %[[D1:.+]] = fsdp.scale %[[SUM1]] by 0.5 : tensor<80xf32>
// CHECK-NEXT: fsdp.mul %[[D1]], %[[D1]]
// CHECK: fsdp.mul %[[D2]], %[[D2]]
// CHECK: %[[C:.+]] = fsdp.clip_coefficient
// CHECK-NEXT: fsdp.update @fc1, %[[D1]] step %[[STEP]] lr %[[LR]] scaled %[[C]]
// CHECK-NEXT: fsdp.update @fc2, %[[D2]] step %[[STEP]] lr %[[LR]] scaled %[[C]]
// CHECK-NEXT: return %[[L]] : tensor<f32>
// CHECK-NOT: fsdp.reduce_scatter
module attributes {fsdp.plan = #fsdp.plan<grid = [2], param_dtype = bf16, reduce_dtype = bf16, optimizer = #fsdp.sgd<lr = 0.1>, clip_grad_norm = 1.0, micro_batches = 2>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x4xf32>
    %z2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z2, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// accumulate = no_sync, 3 micro-batches of the f32 step: the flat gradients
// add up (in reduce_dtype, f32 here) and only the last micro-batch reduces the
// sum, once per unit; the earlier micro-batches reduce nothing.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%{{.+}}: tensor<2x8xf32>, %{{.+}}: tensor<2xi32>, %{{.+}}: tensor<2x8xf32>, %{{.+}}: tensor<2xi32>, %{{.+}}: tensor<2x8xf32>, %{{.+}}: tensor<2xi32>, %{{.+}}: i64, %{{.+}}: f32)
// CHECK: %[[F2A:.+]] = fsdp.flatten @fc2
// CHECK-NOT: fsdp.reduce_scatter
// CHECK: %[[F1A:.+]] = fsdp.flatten @fc1
// CHECK-NOT: fsdp.reduce_scatter
// CHECK: %[[F2B:.+]] = fsdp.flatten @fc2
// CHECK-NEXT: %[[A2:.+]] = fsdp.add %[[F2A]], %[[F2B]] : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
// CHECK-NOT: fsdp.reduce_scatter
// CHECK: %[[F1B:.+]] = fsdp.flatten @fc1
// CHECK-NEXT: %[[A1:.+]] = fsdp.add %[[F1A]], %[[F1B]] : tensor<160xf32>, tensor<160xf32> -> tensor<160xf32>
// CHECK-NOT: fsdp.reduce_scatter
// CHECK: %[[F2C:.+]] = fsdp.flatten @fc2
// CHECK-NEXT: %[[B2:.+]] = fsdp.add %[[A2]], %[[F2C]]
// CHECK-NEXT: %[[R2:.+]] = fsdp.reduce_scatter %[[B2]] avg : tensor<64xf32> -> tensor<32xf32>
// CHECK-NEXT: %[[D2:.+]] = fsdp.scale %[[R2]] by 0.3333333333333333 : tensor<32xf32>
// CHECK: %[[F1C:.+]] = fsdp.flatten @fc1
// CHECK-NEXT: %[[B1:.+]] = fsdp.add %[[A1]], %[[F1C]]
// CHECK-NEXT: %[[R1:.+]] = fsdp.reduce_scatter %[[B1]] avg : tensor<160xf32> -> tensor<80xf32>
// CHECK-NEXT: %[[D1:.+]] = fsdp.scale %[[R1]] by 0.3333333333333333 : tensor<80xf32>
// CHECK-NEXT: fsdp.update @fc1, %[[D1]]
// CHECK-NEXT: fsdp.update @fc2, %[[D2]]
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, micro_batches = 3, accumulate = no_sync>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<12x8xf32>, %y: tensor<12xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<12x8xf32>, tensor<8x16xf32> -> tensor<12x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<12x16xf32>, tensor<16xf32> -> tensor<12x16xf32>
    %h1 = fsdp.relu %z1 : tensor<12x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x4xf32>
    %z2 = fsdp.matmul %h1, %w2 : tensor<12x16xf32>, tensor<16x4xf32> -> tensor<12x4xf32>
    %l = fsdp.cross_entropy %z2, %y : tensor<12x4xf32>, tensor<12xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// One rank: nothing reduces the gradients, so both modes sum the flat
// gradients (the gradient shards), in the shard's type.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%{{.+}}: tensor<4x8xf32>, %{{.+}}: tensor<4xi32>, %{{.+}}: tensor<4x8xf32>, %{{.+}}: tensor<4xi32>, %{{.+}}: i64, %{{.+}}: f32)
// CHECK-NOT: fsdp.all_gather
// CHECK: %[[F2A:.+]] = fsdp.flatten @fc2
// CHECK: %[[F2B:.+]] = fsdp.flatten @fc2
// CHECK-NEXT: %[[S2:.+]] = fsdp.add %[[F2A]], %[[F2B]] : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
// CHECK-NEXT: fsdp.scale %[[S2]] by 0.5
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>, micro_batches = 2, accumulate = no_sync>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x4xf32>
    %z2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z2, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The batch must split into ranks x micro-batches equal parts (fsdp-partition).
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, micro_batches = 3>} {
  fsdp.param @w unit "fc" : tensor<8x4xf32> = #fsdp.fan_in_uniform
  // expected-error @+1 {{input #0 'tensor<8x8xf32>': the batch of 8 does not split evenly across 2 ranks x 3 micro-batches}}
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<8x4xf32>
    %z = fsdp.matmul %x, %w : tensor<8x8xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
