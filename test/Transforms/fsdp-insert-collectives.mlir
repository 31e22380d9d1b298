// RUN: fsdp-opt %s -split-input-file -fsdp-form-units -fsdp-partition -fsdp-autodiff -fsdp-insert-collectives -verify-diagnostics | FileCheck %s
// The pass needs fsdp-partition's units and fsdp-autodiff's @train_step.
// RUN: not fsdp-opt %s -split-input-file -fsdp-form-units -fsdp-autodiff -fsdp-insert-collectives 2>&1 | FileCheck %s --check-prefix=UNPARTITIONED
// RUN: not fsdp-opt %s -split-input-file -fsdp-form-units -fsdp-partition -fsdp-insert-collectives 2>&1 | FileCheck %s --check-prefix=NOSTEP
// UNPARTITIONED: error: fsdp-insert-collectives needs a partitioned module (fsdp-partition)
// NOSTEP: error: fsdp-insert-collectives needs the training step @train_step of fsdp-autodiff; the module has none

// The FSDP schedule of one model, a 3-layer MLP (8 -> 16 -> 16 -> 4, ReLU,
// cross-entropy) whose layers are the units fc1, fc2 and fc3, under each
// strategy. Every line of @train_step is checked in order (CHECK-NEXT), so
// the test fails if any gather, free, flatten, reduction or update moves.
// The global batch of 8 is split over the 2 or 4 ranks of the world.

//===----------------------------------------------------------------------===//
// full_shard over 2 ranks
//===----------------------------------------------------------------------===//

// Forward: each unit is gathered right before its layer and freed right after
// its last read. Backward: fc3 and fc2 are gathered again right before the
// matmul that propagates the gradient (fc1 is not: no gradient flows into the
// input) and freed right after it; a unit's gradients are flattened and
// reduce-scattered as soon as its last one (dW) exists; the shard updates
// come at the end, in unit order.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>}
// CHECK: fsdp.unit @fc1 numel 144 shard 80 ranks 2 : f32
// CHECK: fsdp.unit @fc2 numel 272 shard 144 ranks 2 : f32
// CHECK: fsdp.unit @fc3 numel 68 shard 48 ranks 2 : f32
// CHECK-NEXT: func.func @train_step(%[[X:.+]]: tensor<4x8xf32>, %[[Y:.+]]: tensor<4xi32>, %[[STEP:.+]]: i64, %[[LR:.+]]: f32) -> tensor<f32>
// CHECK-NEXT: %[[G1:.+]] = fsdp.all_gather @fc1 : tensor<160xf32>
// CHECK-NEXT: %[[W1:.+]] = fsdp.view @fc1.w in %[[G1]] : tensor<160xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[B1:.+]] = fsdp.view @fc1.b in %[[G1]] : tensor<160xf32> -> tensor<16xf32>
// CHECK-NEXT: %[[M1:.+]] = fsdp.matmul %[[X]], %[[W1]]
// CHECK-NEXT: %[[Z1:.+]] = fsdp.add %[[M1]], %[[B1]]
// CHECK-NEXT: fsdp.free %[[G1]] : tensor<160xf32>
// CHECK-NEXT: %[[H1:.+]] = fsdp.relu %[[Z1]]
// CHECK-NEXT: %[[G2:.+]] = fsdp.all_gather @fc2 : tensor<288xf32>
// CHECK-NEXT: %[[W2:.+]] = fsdp.view @fc2.w in %[[G2]] : tensor<288xf32> -> tensor<16x16xf32>
// CHECK-NEXT: %[[B2:.+]] = fsdp.view @fc2.b in %[[G2]] : tensor<288xf32> -> tensor<16xf32>
// CHECK-NEXT: %[[M2:.+]] = fsdp.matmul %[[H1]], %[[W2]]
// CHECK-NEXT: %[[Z2:.+]] = fsdp.add %[[M2]], %[[B2]]
// CHECK-NEXT: fsdp.free %[[G2]] : tensor<288xf32>
// CHECK-NEXT: %[[H2:.+]] = fsdp.relu %[[Z2]]
// CHECK-NEXT: %[[G3:.+]] = fsdp.all_gather @fc3 : tensor<96xf32>
// CHECK-NEXT: %[[W3:.+]] = fsdp.view @fc3.w in %[[G3]] : tensor<96xf32> -> tensor<16x4xf32>
// CHECK-NEXT: %[[B3:.+]] = fsdp.view @fc3.b in %[[G3]] : tensor<96xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[M3:.+]] = fsdp.matmul %[[H2]], %[[W3]]
// CHECK-NEXT: %[[Z3:.+]] = fsdp.add %[[M3]], %[[B3]]
// CHECK-NEXT: fsdp.free %[[G3]] : tensor<96xf32>
// CHECK-NEXT: %[[L:.+]] = fsdp.cross_entropy %[[Z3]], %[[Y]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[DZ3:.+]] = fsdp.cross_entropy_grad %[[Z3]], %[[Y]], %[[ONE]]
// CHECK-NEXT: %[[DB3:.+]] = fsdp.reduce_sum %[[DZ3]] dims [0]
// CHECK-NEXT: %[[G3B:.+]] = fsdp.all_gather @fc3 : tensor<96xf32>
// CHECK-NEXT: %[[W3B:.+]] = fsdp.view @fc3.w in %[[G3B]] : tensor<96xf32> -> tensor<16x4xf32>
// CHECK-NEXT: %[[DH2:.+]] = fsdp.matmul %[[DZ3]], %[[W3B]] transpose_rhs
// CHECK-NEXT: fsdp.free %[[G3B]] : tensor<96xf32>
// CHECK-NEXT: %[[DW3:.+]] = fsdp.matmul %[[H2]], %[[DZ3]] transpose_lhs
// CHECK-NEXT: %[[F3:.+]] = fsdp.flatten @fc3(%[[DW3]], %[[DB3]]) : tensor<16x4xf32>, tensor<4xf32> -> tensor<96xf32>
// CHECK-NEXT: %[[S3:.+]] = fsdp.reduce_scatter %[[F3]] avg : tensor<96xf32> -> tensor<48xf32>
// CHECK-NEXT: %[[DZ2:.+]] = fsdp.relu_grad %[[Z2]], %[[DH2]]
// CHECK-NEXT: %[[DB2:.+]] = fsdp.reduce_sum %[[DZ2]] dims [0]
// CHECK-NEXT: %[[G2B:.+]] = fsdp.all_gather @fc2 : tensor<288xf32>
// CHECK-NEXT: %[[W2B:.+]] = fsdp.view @fc2.w in %[[G2B]] : tensor<288xf32> -> tensor<16x16xf32>
// CHECK-NEXT: %[[DH1:.+]] = fsdp.matmul %[[DZ2]], %[[W2B]] transpose_rhs
// CHECK-NEXT: fsdp.free %[[G2B]] : tensor<288xf32>
// CHECK-NEXT: %[[DW2:.+]] = fsdp.matmul %[[H1]], %[[DZ2]] transpose_lhs
// CHECK-NEXT: %[[F2:.+]] = fsdp.flatten @fc2(%[[DW2]], %[[DB2]]) : tensor<16x16xf32>, tensor<16xf32> -> tensor<288xf32>
// CHECK-NEXT: %[[S2:.+]] = fsdp.reduce_scatter %[[F2]] avg : tensor<288xf32> -> tensor<144xf32>
// CHECK-NEXT: %[[DZ1:.+]] = fsdp.relu_grad %[[Z1]], %[[DH1]]
// CHECK-NEXT: %[[DB1:.+]] = fsdp.reduce_sum %[[DZ1]] dims [0]
// CHECK-NEXT: %[[DW1:.+]] = fsdp.matmul %[[X]], %[[DZ1]] transpose_lhs
// CHECK-NEXT: %[[F1:.+]] = fsdp.flatten @fc1(%[[DW1]], %[[DB1]]) : tensor<8x16xf32>, tensor<16xf32> -> tensor<160xf32>
// CHECK-NEXT: %[[S1:.+]] = fsdp.reduce_scatter %[[F1]] avg : tensor<160xf32> -> tensor<80xf32>
// CHECK-NEXT: fsdp.update @fc1, %[[S1]] step %[[STEP]] lr %[[LR]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<80xf32>
// CHECK-NEXT: fsdp.update @fc2, %[[S2]] step %[[STEP]] lr %[[LR]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<144xf32>
// CHECK-NEXT: fsdp.update @fc3, %[[S3]] step %[[STEP]] lr %[[LR]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<48xf32>
// CHECK-NEXT: return %[[L]] : tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = full_shard, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc2.b unit "fc2" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc3.w unit "fc3" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc3.b unit "fc3" : tensor<4xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x16xf32>
    %b2 = fsdp.use @fc2.b : tensor<16xf32>
    %m2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %z2 = fsdp.add %m2, %b2 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h2 = fsdp.relu %z2 : tensor<8x16xf32>
    %w3 = fsdp.use @fc3.w : tensor<16x4xf32>
    %b3 = fsdp.use @fc3.b : tensor<4xf32>
    %m3 = fsdp.matmul %h2, %w3 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %z3 = fsdp.add %m3, %b3 : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z3, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

//===----------------------------------------------------------------------===//
// shard_grad_op over 2 ranks
//===----------------------------------------------------------------------===//

// No re-gather: the forward gather of fc2 and fc3 lives on until the last
// backward read of their weights, and is freed right after it. fc1, which
// backward does not read, is freed in forward as before. Gradients and
// updates are as with full_shard.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = shard_grad_op
// CHECK: fsdp.unit @fc1 numel 144 shard 80 ranks 2 : f32
// CHECK: fsdp.unit @fc2 numel 272 shard 144 ranks 2 : f32
// CHECK: fsdp.unit @fc3 numel 68 shard 48 ranks 2 : f32
// CHECK-NEXT: func.func @train_step(%[[X:.+]]: tensor<4x8xf32>, %[[Y:.+]]: tensor<4xi32>, %[[STEP:.+]]: i64, %[[LR:.+]]: f32) -> tensor<f32>
// CHECK-NEXT: %[[G1:.+]] = fsdp.all_gather @fc1 : tensor<160xf32>
// CHECK-NEXT: %[[W1:.+]] = fsdp.view @fc1.w in %[[G1]]
// CHECK-NEXT: %[[B1:.+]] = fsdp.view @fc1.b in %[[G1]]
// CHECK-NEXT: %[[M1:.+]] = fsdp.matmul %[[X]], %[[W1]]
// CHECK-NEXT: %[[Z1:.+]] = fsdp.add %[[M1]], %[[B1]]
// CHECK-NEXT: fsdp.free %[[G1]] : tensor<160xf32>
// CHECK-NEXT: %[[H1:.+]] = fsdp.relu %[[Z1]]
// CHECK-NEXT: %[[G2:.+]] = fsdp.all_gather @fc2 : tensor<288xf32>
// CHECK-NEXT: %[[W2:.+]] = fsdp.view @fc2.w in %[[G2]]
// CHECK-NEXT: %[[B2:.+]] = fsdp.view @fc2.b in %[[G2]]
// CHECK-NEXT: %[[M2:.+]] = fsdp.matmul %[[H1]], %[[W2]]
// CHECK-NEXT: %[[Z2:.+]] = fsdp.add %[[M2]], %[[B2]]
// CHECK-NEXT: %[[H2:.+]] = fsdp.relu %[[Z2]]
// CHECK-NEXT: %[[G3:.+]] = fsdp.all_gather @fc3 : tensor<96xf32>
// CHECK-NEXT: %[[W3:.+]] = fsdp.view @fc3.w in %[[G3]]
// CHECK-NEXT: %[[B3:.+]] = fsdp.view @fc3.b in %[[G3]]
// CHECK-NEXT: %[[M3:.+]] = fsdp.matmul %[[H2]], %[[W3]]
// CHECK-NEXT: %[[Z3:.+]] = fsdp.add %[[M3]], %[[B3]]
// CHECK-NEXT: %[[L:.+]] = fsdp.cross_entropy %[[Z3]], %[[Y]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[DZ3:.+]] = fsdp.cross_entropy_grad %[[Z3]], %[[Y]], %[[ONE]]
// CHECK-NEXT: %[[DB3:.+]] = fsdp.reduce_sum %[[DZ3]] dims [0]
// CHECK-NEXT: %[[DH2:.+]] = fsdp.matmul %[[DZ3]], %[[W3]] transpose_rhs
// CHECK-NEXT: fsdp.free %[[G3]] : tensor<96xf32>
// CHECK-NEXT: %[[DW3:.+]] = fsdp.matmul %[[H2]], %[[DZ3]] transpose_lhs
// CHECK-NEXT: %[[F3:.+]] = fsdp.flatten @fc3(%[[DW3]], %[[DB3]]) : tensor<16x4xf32>, tensor<4xf32> -> tensor<96xf32>
// CHECK-NEXT: %[[S3:.+]] = fsdp.reduce_scatter %[[F3]] avg : tensor<96xf32> -> tensor<48xf32>
// CHECK-NEXT: %[[DZ2:.+]] = fsdp.relu_grad %[[Z2]], %[[DH2]]
// CHECK-NEXT: %[[DB2:.+]] = fsdp.reduce_sum %[[DZ2]] dims [0]
// CHECK-NEXT: %[[DH1:.+]] = fsdp.matmul %[[DZ2]], %[[W2]] transpose_rhs
// CHECK-NEXT: fsdp.free %[[G2]] : tensor<288xf32>
// CHECK-NEXT: %[[DW2:.+]] = fsdp.matmul %[[H1]], %[[DZ2]] transpose_lhs
// CHECK-NEXT: %[[F2:.+]] = fsdp.flatten @fc2(%[[DW2]], %[[DB2]]) : tensor<16x16xf32>, tensor<16xf32> -> tensor<288xf32>
// CHECK-NEXT: %[[S2:.+]] = fsdp.reduce_scatter %[[F2]] avg : tensor<288xf32> -> tensor<144xf32>
// CHECK-NEXT: %[[DZ1:.+]] = fsdp.relu_grad %[[Z1]], %[[DH1]]
// CHECK-NEXT: %[[DB1:.+]] = fsdp.reduce_sum %[[DZ1]] dims [0]
// CHECK-NEXT: %[[DW1:.+]] = fsdp.matmul %[[X]], %[[DZ1]] transpose_lhs
// CHECK-NEXT: %[[F1:.+]] = fsdp.flatten @fc1(%[[DW1]], %[[DB1]]) : tensor<8x16xf32>, tensor<16xf32> -> tensor<160xf32>
// CHECK-NEXT: %[[S1:.+]] = fsdp.reduce_scatter %[[F1]] avg : tensor<160xf32> -> tensor<80xf32>
// CHECK-NEXT: fsdp.update @fc1, %[[S1]] step %[[STEP]] lr %[[LR]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<80xf32>
// CHECK-NEXT: fsdp.update @fc2, %[[S2]] step %[[STEP]] lr %[[LR]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<144xf32>
// CHECK-NEXT: fsdp.update @fc3, %[[S3]] step %[[STEP]] lr %[[LR]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<48xf32>
// CHECK-NEXT: return %[[L]] : tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = shard_grad_op, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc2.b unit "fc2" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc3.w unit "fc3" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc3.b unit "fc3" : tensor<4xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x16xf32>
    %b2 = fsdp.use @fc2.b : tensor<16xf32>
    %m2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %z2 = fsdp.add %m2, %b2 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h2 = fsdp.relu %z2 : tensor<8x16xf32>
    %w3 = fsdp.use @fc3.w : tensor<16x4xf32>
    %b3 = fsdp.use @fc3.b : tensor<4xf32>
    %m3 = fsdp.matmul %h2, %w3 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %z3 = fsdp.add %m3, %b3 : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z3, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

//===----------------------------------------------------------------------===//
// no_shard over 2 ranks
//===----------------------------------------------------------------------===//

// One shard per unit: parameters stay fsdp.use, nothing is gathered or
// freed. Each unit's gradients are flattened (padded to 16 elements: 68 ->
// 80) and averaged over the replicas right after the last of them; every
// rank updates the whole unit.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = no_shard
// CHECK: fsdp.unit @fc1 numel 144 shard 144 ranks 1 : f32
// CHECK: fsdp.unit @fc2 numel 272 shard 272 ranks 1 : f32
// CHECK: fsdp.unit @fc3 numel 68 shard 80 ranks 1 : f32
// CHECK-NEXT: func.func @train_step(%[[X:.+]]: tensor<4x8xf32>, %[[Y:.+]]: tensor<4xi32>, %[[STEP:.+]]: i64, %[[LR:.+]]: f32) -> tensor<f32>
// CHECK-NEXT: %[[W1:.+]] = fsdp.use @fc1.w
// CHECK-NEXT: %[[B1:.+]] = fsdp.use @fc1.b
// CHECK-NEXT: %[[M1:.+]] = fsdp.matmul %[[X]], %[[W1]]
// CHECK-NEXT: %[[Z1:.+]] = fsdp.add %[[M1]], %[[B1]]
// CHECK-NEXT: %[[H1:.+]] = fsdp.relu %[[Z1]]
// CHECK-NEXT: %[[W2:.+]] = fsdp.use @fc2.w
// CHECK-NEXT: %[[B2:.+]] = fsdp.use @fc2.b
// CHECK-NEXT: %[[M2:.+]] = fsdp.matmul %[[H1]], %[[W2]]
// CHECK-NEXT: %[[Z2:.+]] = fsdp.add %[[M2]], %[[B2]]
// CHECK-NEXT: %[[H2:.+]] = fsdp.relu %[[Z2]]
// CHECK-NEXT: %[[W3:.+]] = fsdp.use @fc3.w
// CHECK-NEXT: %[[B3:.+]] = fsdp.use @fc3.b
// CHECK-NEXT: %[[M3:.+]] = fsdp.matmul %[[H2]], %[[W3]]
// CHECK-NEXT: %[[Z3:.+]] = fsdp.add %[[M3]], %[[B3]]
// CHECK-NEXT: %[[L:.+]] = fsdp.cross_entropy %[[Z3]], %[[Y]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[DZ3:.+]] = fsdp.cross_entropy_grad %[[Z3]], %[[Y]], %[[ONE]]
// CHECK-NEXT: %[[DB3:.+]] = fsdp.reduce_sum %[[DZ3]] dims [0]
// CHECK-NEXT: %[[DH2:.+]] = fsdp.matmul %[[DZ3]], %[[W3]] transpose_rhs
// CHECK-NEXT: %[[DW3:.+]] = fsdp.matmul %[[H2]], %[[DZ3]] transpose_lhs
// CHECK-NEXT: %[[F3:.+]] = fsdp.flatten @fc3(%[[DW3]], %[[DB3]]) : tensor<16x4xf32>, tensor<4xf32> -> tensor<80xf32>
// CHECK-NEXT: %[[R3:.+]] = fsdp.all_reduce %[[F3]] avg over replica : tensor<80xf32>
// CHECK-NEXT: %[[DZ2:.+]] = fsdp.relu_grad %[[Z2]], %[[DH2]]
// CHECK-NEXT: %[[DB2:.+]] = fsdp.reduce_sum %[[DZ2]] dims [0]
// CHECK-NEXT: %[[DH1:.+]] = fsdp.matmul %[[DZ2]], %[[W2]] transpose_rhs
// CHECK-NEXT: %[[DW2:.+]] = fsdp.matmul %[[H1]], %[[DZ2]] transpose_lhs
// CHECK-NEXT: %[[F2:.+]] = fsdp.flatten @fc2(%[[DW2]], %[[DB2]]) : tensor<16x16xf32>, tensor<16xf32> -> tensor<272xf32>
// CHECK-NEXT: %[[R2:.+]] = fsdp.all_reduce %[[F2]] avg over replica : tensor<272xf32>
// CHECK-NEXT: %[[DZ1:.+]] = fsdp.relu_grad %[[Z1]], %[[DH1]]
// CHECK-NEXT: %[[DB1:.+]] = fsdp.reduce_sum %[[DZ1]] dims [0]
// CHECK-NEXT: %[[DW1:.+]] = fsdp.matmul %[[X]], %[[DZ1]] transpose_lhs
// CHECK-NEXT: %[[F1:.+]] = fsdp.flatten @fc1(%[[DW1]], %[[DB1]]) : tensor<8x16xf32>, tensor<16xf32> -> tensor<144xf32>
// CHECK-NEXT: %[[R1:.+]] = fsdp.all_reduce %[[F1]] avg over replica : tensor<144xf32>
// CHECK-NEXT: fsdp.update @fc1, %[[R1]] step %[[STEP]] lr %[[LR]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<144xf32>
// CHECK-NEXT: fsdp.update @fc2, %[[R2]] step %[[STEP]] lr %[[LR]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<272xf32>
// CHECK-NEXT: fsdp.update @fc3, %[[R3]] step %[[STEP]] lr %[[LR]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<80xf32>
// CHECK-NEXT: return %[[L]] : tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = no_shard, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc2.b unit "fc2" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc3.w unit "fc3" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc3.b unit "fc3" : tensor<4xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x16xf32>
    %b2 = fsdp.use @fc2.b : tensor<16xf32>
    %m2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %z2 = fsdp.add %m2, %b2 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h2 = fsdp.relu %z2 : tensor<8x16xf32>
    %w3 = fsdp.use @fc3.w : tensor<16x4xf32>
    %b3 = fsdp.use @fc3.b : tensor<4xf32>
    %m3 = fsdp.matmul %h2, %w3 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %z3 = fsdp.add %m3, %b3 : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z3, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

//===----------------------------------------------------------------------===//
// hybrid_shard over [2 replicas, 2 shards]
//===----------------------------------------------------------------------===//

// The full_shard schedule within each shard group (gathers, frees and
// reduce-scatters over the 2 shards, a batch of 8 / 4 ranks = 2), then each
// gradient shard is averaged over the 2 replicas right after its
// reduce-scatter.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [2, 2], strategy = hybrid_shard
// CHECK: fsdp.unit @fc1 numel 144 shard 80 ranks 2 : f32
// CHECK: fsdp.unit @fc2 numel 272 shard 144 ranks 2 : f32
// CHECK: fsdp.unit @fc3 numel 68 shard 48 ranks 2 : f32
// CHECK-NEXT: func.func @train_step(%[[X:.+]]: tensor<2x8xf32>, %[[Y:.+]]: tensor<2xi32>, %[[STEP:.+]]: i64, %[[LR:.+]]: f32) -> tensor<f32>
// CHECK-NEXT: %[[G1:.+]] = fsdp.all_gather @fc1 : tensor<160xf32>
// CHECK-NEXT: %[[W1:.+]] = fsdp.view @fc1.w in %[[G1]]
// CHECK-NEXT: %[[B1:.+]] = fsdp.view @fc1.b in %[[G1]]
// CHECK-NEXT: %[[M1:.+]] = fsdp.matmul %[[X]], %[[W1]] : tensor<2x8xf32>, tensor<8x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: %[[Z1:.+]] = fsdp.add %[[M1]], %[[B1]]
// CHECK-NEXT: fsdp.free %[[G1]] : tensor<160xf32>
// CHECK-NEXT: %[[H1:.+]] = fsdp.relu %[[Z1]]
// CHECK-NEXT: %[[G2:.+]] = fsdp.all_gather @fc2 : tensor<288xf32>
// CHECK-NEXT: %[[W2:.+]] = fsdp.view @fc2.w in %[[G2]]
// CHECK-NEXT: %[[B2:.+]] = fsdp.view @fc2.b in %[[G2]]
// CHECK-NEXT: %[[M2:.+]] = fsdp.matmul %[[H1]], %[[W2]]
// CHECK-NEXT: %[[Z2:.+]] = fsdp.add %[[M2]], %[[B2]]
// CHECK-NEXT: fsdp.free %[[G2]] : tensor<288xf32>
// CHECK-NEXT: %[[H2:.+]] = fsdp.relu %[[Z2]]
// CHECK-NEXT: %[[G3:.+]] = fsdp.all_gather @fc3 : tensor<96xf32>
// CHECK-NEXT: %[[W3:.+]] = fsdp.view @fc3.w in %[[G3]]
// CHECK-NEXT: %[[B3:.+]] = fsdp.view @fc3.b in %[[G3]]
// CHECK-NEXT: %[[M3:.+]] = fsdp.matmul %[[H2]], %[[W3]]
// CHECK-NEXT: %[[Z3:.+]] = fsdp.add %[[M3]], %[[B3]]
// CHECK-NEXT: fsdp.free %[[G3]] : tensor<96xf32>
// CHECK-NEXT: %[[L:.+]] = fsdp.cross_entropy %[[Z3]], %[[Y]]
// CHECK-NEXT: %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[DZ3:.+]] = fsdp.cross_entropy_grad %[[Z3]], %[[Y]], %[[ONE]]
// CHECK-NEXT: %[[DB3:.+]] = fsdp.reduce_sum %[[DZ3]] dims [0]
// CHECK-NEXT: %[[G3B:.+]] = fsdp.all_gather @fc3 : tensor<96xf32>
// CHECK-NEXT: %[[W3B:.+]] = fsdp.view @fc3.w in %[[G3B]]
// CHECK-NEXT: %[[DH2:.+]] = fsdp.matmul %[[DZ3]], %[[W3B]] transpose_rhs
// CHECK-NEXT: fsdp.free %[[G3B]] : tensor<96xf32>
// CHECK-NEXT: %[[DW3:.+]] = fsdp.matmul %[[H2]], %[[DZ3]] transpose_lhs
// CHECK-NEXT: %[[F3:.+]] = fsdp.flatten @fc3(%[[DW3]], %[[DB3]]) : tensor<16x4xf32>, tensor<4xf32> -> tensor<96xf32>
// CHECK-NEXT: %[[S3:.+]] = fsdp.reduce_scatter %[[F3]] avg : tensor<96xf32> -> tensor<48xf32>
// CHECK-NEXT: %[[R3:.+]] = fsdp.all_reduce %[[S3]] avg over replica : tensor<48xf32>
// CHECK-NEXT: %[[DZ2:.+]] = fsdp.relu_grad %[[Z2]], %[[DH2]]
// CHECK-NEXT: %[[DB2:.+]] = fsdp.reduce_sum %[[DZ2]] dims [0]
// CHECK-NEXT: %[[G2B:.+]] = fsdp.all_gather @fc2 : tensor<288xf32>
// CHECK-NEXT: %[[W2B:.+]] = fsdp.view @fc2.w in %[[G2B]]
// CHECK-NEXT: %[[DH1:.+]] = fsdp.matmul %[[DZ2]], %[[W2B]] transpose_rhs
// CHECK-NEXT: fsdp.free %[[G2B]] : tensor<288xf32>
// CHECK-NEXT: %[[DW2:.+]] = fsdp.matmul %[[H1]], %[[DZ2]] transpose_lhs
// CHECK-NEXT: %[[F2:.+]] = fsdp.flatten @fc2(%[[DW2]], %[[DB2]]) : tensor<16x16xf32>, tensor<16xf32> -> tensor<288xf32>
// CHECK-NEXT: %[[S2:.+]] = fsdp.reduce_scatter %[[F2]] avg : tensor<288xf32> -> tensor<144xf32>
// CHECK-NEXT: %[[R2:.+]] = fsdp.all_reduce %[[S2]] avg over replica : tensor<144xf32>
// CHECK-NEXT: %[[DZ1:.+]] = fsdp.relu_grad %[[Z1]], %[[DH1]]
// CHECK-NEXT: %[[DB1:.+]] = fsdp.reduce_sum %[[DZ1]] dims [0]
// CHECK-NEXT: %[[DW1:.+]] = fsdp.matmul %[[X]], %[[DZ1]] transpose_lhs
// CHECK-NEXT: %[[F1:.+]] = fsdp.flatten @fc1(%[[DW1]], %[[DB1]]) : tensor<8x16xf32>, tensor<16xf32> -> tensor<160xf32>
// CHECK-NEXT: %[[S1:.+]] = fsdp.reduce_scatter %[[F1]] avg : tensor<160xf32> -> tensor<80xf32>
// CHECK-NEXT: %[[R1:.+]] = fsdp.all_reduce %[[S1]] avg over replica : tensor<80xf32>
// CHECK-NEXT: fsdp.update @fc1, %[[R1]] step %[[STEP]] lr %[[LR]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<80xf32>
// CHECK-NEXT: fsdp.update @fc2, %[[R2]] step %[[STEP]] lr %[[LR]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<144xf32>
// CHECK-NEXT: fsdp.update @fc3, %[[R3]] step %[[STEP]] lr %[[LR]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<48xf32>
// CHECK-NEXT: return %[[L]] : tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [2, 2], strategy = hybrid_shard, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc2.b unit "fc2" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc3.w unit "fc3" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc3.b unit "fc3" : tensor<4xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x16xf32>
    %b2 = fsdp.use @fc2.b : tensor<16xf32>
    %m2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %z2 = fsdp.add %m2, %b2 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h2 = fsdp.relu %z2 : tensor<8x16xf32>
    %w3 = fsdp.use @fc3.w : tensor<16x4xf32>
    %b3 = fsdp.use @fc3.b : tensor<4xf32>
    %m3 = fsdp.matmul %h2, %w3 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %z3 = fsdp.add %m3, %b3 : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z3, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// full_shard over 4 ranks: one sample in 4 per rank, shards of ceil(144/4) =
// 36 -> 48, ceil(272/4) = 68 -> 80 and ceil(68/4) = 17 -> 32 elements; the
// same schedule, with no replica traffic.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [4], optimizer
// CHECK: fsdp.unit @fc1 numel 144 shard 48 ranks 4 : f32
// CHECK: fsdp.unit @fc2 numel 272 shard 80 ranks 4 : f32
// CHECK: fsdp.unit @fc3 numel 68 shard 32 ranks 4 : f32
// CHECK-NEXT: func.func @train_step(%{{.+}}: tensor<2x8xf32>, %{{.+}}: tensor<2xi32>, %{{.+}}: i64, %{{.+}}: f32) -> tensor<f32>
// CHECK-NEXT: %[[G1:.+]] = fsdp.all_gather @fc1 : tensor<192xf32>
// CHECK: fsdp.free %[[G1]] : tensor<192xf32>
// CHECK: %[[G2:.+]] = fsdp.all_gather @fc2 : tensor<320xf32>
// CHECK: fsdp.free %[[G2]] : tensor<320xf32>
// CHECK: %[[G3:.+]] = fsdp.all_gather @fc3 : tensor<128xf32>
// CHECK: fsdp.free %[[G3]] : tensor<128xf32>
// CHECK-NEXT: fsdp.cross_entropy
// CHECK: %[[G3B:.+]] = fsdp.all_gather @fc3 : tensor<128xf32>
// CHECK: fsdp.free %[[G3B]] : tensor<128xf32>
// CHECK: fsdp.flatten @fc3
// CHECK-NEXT: %[[S3:.+]] = fsdp.reduce_scatter %{{.+}} avg : tensor<128xf32> -> tensor<32xf32>
// CHECK: %[[G2B:.+]] = fsdp.all_gather @fc2 : tensor<320xf32>
// CHECK: fsdp.free %[[G2B]] : tensor<320xf32>
// CHECK: fsdp.flatten @fc2
// CHECK-NEXT: %[[S2:.+]] = fsdp.reduce_scatter %{{.+}} avg : tensor<320xf32> -> tensor<80xf32>
// CHECK-NOT: fsdp.all_gather
// CHECK: fsdp.flatten @fc1
// CHECK-NEXT: %[[S1:.+]] = fsdp.reduce_scatter %{{.+}} avg : tensor<192xf32> -> tensor<48xf32>
// CHECK-NEXT: fsdp.update @fc1, %[[S1]] {{.+}} : tensor<48xf32>
// CHECK-NEXT: fsdp.update @fc2, %[[S2]] {{.+}} : tensor<80xf32>
// CHECK-NEXT: fsdp.update @fc3, %[[S3]] {{.+}} : tensor<32xf32>
// CHECK-NEXT: return
// CHECK-NOT: fsdp.all_reduce
module attributes {fsdp.plan = #fsdp.plan<grid = [4], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc2.b unit "fc2" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc3.w unit "fc3" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc3.b unit "fc3" : tensor<4xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x16xf32>
    %b2 = fsdp.use @fc2.b : tensor<16xf32>
    %m2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %z2 = fsdp.add %m2, %b2 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h2 = fsdp.relu %z2 : tensor<8x16xf32>
    %w3 = fsdp.use @fc3.w : tensor<16x4xf32>
    %b3 = fsdp.use @fc3.b : tensor<4xf32>
    %m3 = fsdp.matmul %h2, %w3 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %z3 = fsdp.add %m3, %b3 : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z3, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

//===----------------------------------------------------------------------===//
// A frozen unit, clipping, parameters that do not reach the loss, one rank
//===----------------------------------------------------------------------===//

// full_shard with fc2 frozen: fc2 is still gathered and freed in forward and
// gathered again in backward to carry the gradient to fc1, but it gets no
// flatten, no reduce-scatter and no update.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer
// CHECK: fsdp.param frozen @fc2.w unit "fc2" at 0
// CHECK: func.func @train_step
// CHECK: %[[G2:.+]] = fsdp.all_gather @fc2 : tensor<288xf32>
// CHECK-NEXT: %[[W2:.+]] = fsdp.view @fc2.w in %[[G2]]
// CHECK-NEXT: %[[B2:.+]] = fsdp.view @fc2.b in %[[G2]]
// CHECK-NEXT: %[[M2:.+]] = fsdp.matmul %{{.+}}, %[[W2]]
// CHECK-NEXT: %[[Z2:.+]] = fsdp.add %[[M2]], %[[B2]]
// CHECK-NEXT: fsdp.free %[[G2]] : tensor<288xf32>
// CHECK-NOT: fsdp.flatten @fc2
// CHECK-NOT: tensor<288xf32> -> tensor<144xf32>
// CHECK: %[[S3:.+]] = fsdp.reduce_scatter %{{.+}} avg : tensor<96xf32> -> tensor<48xf32>
// CHECK-NEXT: %[[DZ2:.+]] = fsdp.relu_grad %[[Z2]], %{{.+}}
// CHECK-NEXT: %[[G2B:.+]] = fsdp.all_gather @fc2 : tensor<288xf32>
// CHECK-NEXT: %[[W2B:.+]] = fsdp.view @fc2.w in %[[G2B]]
// CHECK-NEXT: %[[DH1:.+]] = fsdp.matmul %[[DZ2]], %[[W2B]] transpose_rhs
// CHECK-NEXT: fsdp.free %[[G2B]] : tensor<288xf32>
// CHECK-NEXT: %[[DZ1:.+]] = fsdp.relu_grad %{{.+}}, %[[DH1]]
// CHECK-NEXT: %[[DB1:.+]] = fsdp.reduce_sum %[[DZ1]] dims [0]
// CHECK-NEXT: %[[DW1:.+]] = fsdp.matmul %{{.+}}, %[[DZ1]] transpose_lhs
// CHECK-NEXT: %[[F1:.+]] = fsdp.flatten @fc1(%[[DW1]], %[[DB1]])
// CHECK-NEXT: %[[S1:.+]] = fsdp.reduce_scatter %[[F1]] avg : tensor<160xf32> -> tensor<80xf32>
// CHECK-NEXT: fsdp.update @fc1, %[[S1]] {{.+}} : tensor<80xf32>
// CHECK-NEXT: fsdp.update @fc3, %[[S3]] {{.+}} : tensor<48xf32>
// CHECK-NEXT: return
module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = full_shard, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param frozen @fc2.w unit "fc2" : tensor<16x16xf32> = #fsdp.fan_in_uniform
  fsdp.param frozen @fc2.b unit "fc2" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc3.w unit "fc3" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc3.b unit "fc3" : tensor<4xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x16xf32>
    %b2 = fsdp.use @fc2.b : tensor<16xf32>
    %m2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %z2 = fsdp.add %m2, %b2 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h2 = fsdp.relu %z2 : tensor<8x16xf32>
    %w3 = fsdp.use @fc3.w : tensor<16x4xf32>
    %b3 = fsdp.use @fc3.b : tensor<4xf32>
    %m3 = fsdp.matmul %h2, %w3 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %z3 = fsdp.add %m3, %b3 : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z3, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Clipping, full_shard: after the last reduce-scatter, each rank squares and
// sums its own gradient shards in unit order; the partial sums add up over
// the shard group (shards are disjoint, padding is zero), give the clipping
// coefficient, and every shard update is scaled by it.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, clip_grad_norm = 1.0>}
// CHECK-NOT: fsdp.clip_coefficient
// CHECK: %[[S3:.+]] = fsdp.reduce_scatter %{{.+}} avg : tensor<96xf32> -> tensor<48xf32>
// CHECK-NOT: fsdp.clip_coefficient
// CHECK: %[[S2:.+]] = fsdp.reduce_scatter %{{.+}} avg : tensor<288xf32> -> tensor<144xf32>
// CHECK-NOT: fsdp.clip_coefficient
// CHECK: %[[S1:.+]] = fsdp.reduce_scatter %{{.+}} avg : tensor<160xf32> -> tensor<80xf32>
// CHECK-NEXT: %[[SQ1:.+]] = fsdp.mul %[[S1]], %[[S1]] : tensor<80xf32>, tensor<80xf32> -> tensor<80xf32>
// CHECK-NEXT: %[[N1:.+]] = fsdp.reduce_sum %[[SQ1]] dims [0] : tensor<80xf32> -> tensor<f32>
// CHECK-NEXT: %[[SQ2:.+]] = fsdp.mul %[[S2]], %[[S2]] : tensor<144xf32>, tensor<144xf32> -> tensor<144xf32>
// CHECK-NEXT: %[[N2:.+]] = fsdp.reduce_sum %[[SQ2]] dims [0] : tensor<144xf32> -> tensor<f32>
// CHECK-NEXT: %[[N12:.+]] = fsdp.add %[[N1]], %[[N2]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT: %[[SQ3:.+]] = fsdp.mul %[[S3]], %[[S3]] : tensor<48xf32>, tensor<48xf32> -> tensor<48xf32>
// CHECK-NEXT: %[[N3:.+]] = fsdp.reduce_sum %[[SQ3]] dims [0] : tensor<48xf32> -> tensor<f32>
// CHECK-NEXT: %[[N:.+]] = fsdp.add %[[N12]], %[[N3]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT: %[[NS:.+]] = fsdp.all_reduce %[[N]] sum over shard : tensor<f32>
// CHECK-NEXT: %[[C:.+]] = fsdp.clip_coefficient %[[NS]] max_norm 1.0 : tensor<f32>
// CHECK-NEXT: fsdp.update @fc1, %[[S1]] step %{{.+}} lr %{{.+}} scaled %[[C]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<80xf32>, tensor<f32>
// CHECK-NEXT: fsdp.update @fc2, %[[S2]] step %{{.+}} lr %{{.+}} scaled %[[C]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<144xf32>, tensor<f32>
// CHECK-NEXT: fsdp.update @fc3, %[[S3]] step %{{.+}} lr %{{.+}} scaled %[[C]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<48xf32>, tensor<f32>
// CHECK-NEXT: return
module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = full_shard, optimizer = #fsdp.sgd<lr = 0.1>, clip_grad_norm = 1.0>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc2.b unit "fc2" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc3.w unit "fc3" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc3.b unit "fc3" : tensor<4xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x16xf32>
    %b2 = fsdp.use @fc2.b : tensor<16xf32>
    %m2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %z2 = fsdp.add %m2, %b2 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h2 = fsdp.relu %z2 : tensor<8x16xf32>
    %w3 = fsdp.use @fc3.w : tensor<16x4xf32>
    %b3 = fsdp.use @fc3.b : tensor<4xf32>
    %m3 = fsdp.matmul %h2, %w3 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %z3 = fsdp.add %m3, %b3 : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z3, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Clipping, no_shard: every rank holds the whole averaged gradient, so its
// sum of squares is the whole norm; nothing is reduced over the shard group.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = no_shard, optimizer = #fsdp.sgd<lr = 0.1>, clip_grad_norm = 1.0>}
// CHECK: %[[R3:.+]] = fsdp.all_reduce %{{.+}} avg over replica : tensor<80xf32>
// CHECK: %[[R2:.+]] = fsdp.all_reduce %{{.+}} avg over replica : tensor<272xf32>
// CHECK: %[[R1:.+]] = fsdp.all_reduce %{{.+}} avg over replica : tensor<144xf32>
// CHECK-NEXT: fsdp.mul %[[R1]], %[[R1]] : tensor<144xf32>
// CHECK-NEXT: fsdp.reduce_sum
// CHECK-NEXT: fsdp.mul %[[R2]], %[[R2]] : tensor<272xf32>
// CHECK-NEXT: fsdp.reduce_sum
// CHECK-NEXT: fsdp.add
// CHECK-NEXT: fsdp.mul %[[R3]], %[[R3]] : tensor<80xf32>
// CHECK-NEXT: fsdp.reduce_sum
// CHECK-NEXT: %[[N:.+]] = fsdp.add
// CHECK-NEXT: %[[C:.+]] = fsdp.clip_coefficient %[[N]] max_norm 1.0 : tensor<f32>
// CHECK-NEXT: fsdp.update @fc1, %[[R1]] {{.+}} scaled %[[C]] {{.+}} : tensor<144xf32>, tensor<f32>
// CHECK-NEXT: fsdp.update @fc2, %[[R2]] {{.+}} scaled %[[C]] {{.+}} : tensor<272xf32>, tensor<f32>
// CHECK-NEXT: fsdp.update @fc3, %[[R3]] {{.+}} scaled %[[C]] {{.+}} : tensor<80xf32>, tensor<f32>
// CHECK-NEXT: return
module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = no_shard, optimizer = #fsdp.sgd<lr = 0.1>, clip_grad_norm = 1.0>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc2.b unit "fc2" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc3.w unit "fc3" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc3.b unit "fc3" : tensor<4xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x16xf32>
    %b2 = fsdp.use @fc2.b : tensor<16xf32>
    %m2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %z2 = fsdp.add %m2, %b2 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h2 = fsdp.relu %z2 : tensor<8x16xf32>
    %w3 = fsdp.use @fc3.w : tensor<16x4xf32>
    %b3 = fsdp.use @fc3.b : tensor<4xf32>
    %m3 = fsdp.matmul %h2, %w3 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %z3 = fsdp.add %m3, %b3 : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z3, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Clipping, hybrid_shard: the shards are averaged over the replicas first;
// the partial sums of squares then add up over the shard group only.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [2, 2], strategy = hybrid_shard, optimizer = #fsdp.sgd<lr = 0.1>, clip_grad_norm = 1.0>}
// CHECK: %[[R3:.+]] = fsdp.all_reduce %{{.+}} avg over replica : tensor<48xf32>
// CHECK: %[[R2:.+]] = fsdp.all_reduce %{{.+}} avg over replica : tensor<144xf32>
// CHECK: %[[R1:.+]] = fsdp.all_reduce %{{.+}} avg over replica : tensor<80xf32>
// CHECK-NEXT: fsdp.mul %[[R1]], %[[R1]] : tensor<80xf32>
// CHECK-NEXT: fsdp.reduce_sum
// CHECK-NEXT: fsdp.mul %[[R2]], %[[R2]] : tensor<144xf32>
// CHECK-NEXT: fsdp.reduce_sum
// CHECK-NEXT: fsdp.add
// CHECK-NEXT: fsdp.mul %[[R3]], %[[R3]] : tensor<48xf32>
// CHECK-NEXT: fsdp.reduce_sum
// CHECK-NEXT: %[[N:.+]] = fsdp.add
// CHECK-NEXT: %[[NS:.+]] = fsdp.all_reduce %[[N]] sum over shard : tensor<f32>
// CHECK-NEXT: %[[C:.+]] = fsdp.clip_coefficient %[[NS]] max_norm 1.0 : tensor<f32>
// CHECK-NEXT: fsdp.update @fc1, %[[R1]] {{.+}} scaled %[[C]] {{.+}} : tensor<80xf32>, tensor<f32>
// CHECK-NEXT: fsdp.update @fc2, %[[R2]] {{.+}} scaled %[[C]] {{.+}} : tensor<144xf32>, tensor<f32>
// CHECK-NEXT: fsdp.update @fc3, %[[R3]] {{.+}} scaled %[[C]] {{.+}} : tensor<48xf32>, tensor<f32>
// CHECK-NEXT: return
module attributes {fsdp.plan = #fsdp.plan<grid = [2, 2], strategy = hybrid_shard, optimizer = #fsdp.sgd<lr = 0.1>, clip_grad_norm = 1.0>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc2.b unit "fc2" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc3.w unit "fc3" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc3.b unit "fc3" : tensor<4xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x16xf32>
    %b2 = fsdp.use @fc2.b : tensor<16xf32>
    %m2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %z2 = fsdp.add %m2, %b2 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h2 = fsdp.relu %z2 : tensor<8x16xf32>
    %w3 = fsdp.use @fc3.w : tensor<16x4xf32>
    %b3 = fsdp.use @fc3.b : tensor<4xf32>
    %m3 = fsdp.matmul %h2, %w3 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %z3 = fsdp.add %m3, %b3 : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z3, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Parameters that do not reach the loss: the unit @aux, whose only read
// feeds nothing, is never gathered, reduced or updated. @fc3.s is the one
// member of fc3 without a gradient: fc3's flat gradient holds zeros in its
// place.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer
// CHECK: fsdp.unit @fc3 numel 72 shard 48 ranks 2 : f32
// CHECK-NEXT: fsdp.param @aux.w unit "aux" at 0 : tensor<16x16xf32>
// CHECK-NEXT: fsdp.unit @aux numel 256 shard 128 ranks 2 : f32
// CHECK-NOT: @aux
// CHECK: %[[DW3:.+]] = fsdp.matmul %{{.+}}, %{{.+}} transpose_lhs : tensor<4x16xf32>, tensor<4x4xf32> -> tensor<16x4xf32>
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK-NEXT: %[[F3:.+]] = fsdp.flatten @fc3(%[[DW3]], %{{.+}}, %[[ZERO]]) : tensor<16x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<96xf32>
// CHECK-NEXT: fsdp.reduce_scatter %[[F3]] avg : tensor<96xf32> -> tensor<48xf32>
// CHECK-NOT: @aux
// CHECK: fsdp.update @fc1
// CHECK-NEXT: fsdp.update @fc2
// CHECK-NEXT: fsdp.update @fc3
// CHECK-NEXT: return
module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = full_shard, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc2.b unit "fc2" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc3.w unit "fc3" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc3.b unit "fc3" : tensor<4xf32> = #fsdp.zeros
  // expected-warning@+1 {{parameter does not affect the loss; it is not updated}}
  fsdp.param @fc3.s unit "fc3" : tensor<4xf32> = #fsdp.ones
  // expected-warning@+1 {{parameter does not affect the loss; it is not updated}}
  fsdp.param @aux.w unit "aux" : tensor<16x16xf32> = #fsdp.ones
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x16xf32>
    %b2 = fsdp.use @fc2.b : tensor<16xf32>
    %m2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %z2 = fsdp.add %m2, %b2 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h2 = fsdp.relu %z2 : tensor<8x16xf32>
    %aux = fsdp.use @aux.w : tensor<16x16xf32>
    %unused = fsdp.matmul %h2, %aux : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %w3 = fsdp.use @fc3.w : tensor<16x4xf32>
    %b3 = fsdp.use @fc3.b : tensor<4xf32>
    %s3 = fsdp.use @fc3.s : tensor<4xf32>
    %m3 = fsdp.matmul %h2, %w3 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %z3 = fsdp.add %m3, %b3 : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
    %scaled = fsdp.mul %z3, %s3 : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z3, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// One rank: one shard per unit and no replica, so parameters stay fsdp.use
// and the flat gradients go straight to the updates, without any collective.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer
// CHECK: fsdp.unit @fc1 numel 144 shard 144 ranks 1 : f32
// CHECK-NOT: fsdp.all_gather
// CHECK-NOT: fsdp.free
// CHECK-NOT: fsdp.reduce_scatter
// CHECK-NOT: fsdp.all_reduce
// CHECK: %[[F3:.+]] = fsdp.flatten @fc3(%{{.+}}, %{{.+}}) : tensor<16x4xf32>, tensor<4xf32> -> tensor<80xf32>
// CHECK-NOT: fsdp.all_reduce
// CHECK: %[[F2:.+]] = fsdp.flatten @fc2(%{{.+}}, %{{.+}}) : tensor<16x16xf32>, tensor<16xf32> -> tensor<272xf32>
// CHECK-NOT: fsdp.all_reduce
// CHECK: %[[F1:.+]] = fsdp.flatten @fc1(%{{.+}}, %{{.+}}) : tensor<8x16xf32>, tensor<16xf32> -> tensor<144xf32>
// CHECK-NEXT: fsdp.update @fc1, %[[F1]] {{.+}} : tensor<144xf32>
// CHECK-NEXT: fsdp.update @fc2, %[[F2]] {{.+}} : tensor<272xf32>
// CHECK-NEXT: fsdp.update @fc3, %[[F3]] {{.+}} : tensor<80xf32>
// CHECK-NEXT: return
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc2.b unit "fc2" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc3.w unit "fc3" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc3.b unit "fc3" : tensor<4xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x16xf32>
    %b2 = fsdp.use @fc2.b : tensor<16xf32>
    %m2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %z2 = fsdp.add %m2, %b2 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h2 = fsdp.relu %z2 : tensor<8x16xf32>
    %w3 = fsdp.use @fc3.w : tensor<16x4xf32>
    %b3 = fsdp.use @fc3.b : tensor<4xf32>
    %m3 = fsdp.matmul %h2, %w3 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %z3 = fsdp.add %m3, %b3 : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z3, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
