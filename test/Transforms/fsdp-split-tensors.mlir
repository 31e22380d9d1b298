// RUN: fsdp-opt %s -split-input-file -fsdp-split-tensors -verify-diagnostics | FileCheck %s

//===----------------------------------------------------------------------===//
// A Llama block on 2 tensor ranks: Megatron's layout from the dataflow
//===----------------------------------------------------------------------===//

// q, k, v, gate and up are column-parallel (their [out, in] weights cut along
// dimension 0), o and down row-parallel (cut along dimension 1); grouped-query
// attention keeps 2 of the 4 query heads and 1 of the 2 key-value heads on each
// rank. The head is column-parallel too, cut along the classes: its region
// closes at the loss, which the ranks compute from their blocks of the logits
// (fsdp.tensor_cross_entropy). The embedding's table is cut along its rows,
// each rank's lookup of its block summed over the ranks. The norm stays whole,
// its unit moving to "block.whole" beside the cut "block".

// CHECK-LABEL: module attributes
// CHECK: fsdp.param @embed unit "embed" split 0 : tensor<16x16xf32>
// CHECK: fsdp.param @attn_norm unit "block.whole" : tensor<16xf32>
// CHECK: fsdp.param @wq unit "block" split 0 : tensor<8x16xf32>
// CHECK: fsdp.param @wk unit "block" split 0 : tensor<4x16xf32>
// CHECK: fsdp.param @wv unit "block" split 0 : tensor<4x16xf32>
// CHECK: fsdp.param @wo unit "block" split 1 : tensor<16x8xf32>
// CHECK: fsdp.param @gate unit "block" split 0 : tensor<12x16xf32>
// CHECK: fsdp.param @up unit "block" split 0 : tensor<12x16xf32>
// CHECK: fsdp.param @down unit "block" split 1 : tensor<16x12xf32>
// CHECK: fsdp.param @head unit "head" split 0 : tensor<16x16xf32>
// CHECK: func.func @loss(%{{.*}}: tensor<2x8xi32>, %[[TARGETS:.*]]: tensor<2x8xi32>) -> tensor<f32>
// CHECK:   %[[PART:.*]] = fsdp.tensor_embedding %{{.*}}[%{{.*}}] rows 32 : tensor<16x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
// CHECK:   %[[X:.*]] = fsdp.tensor_sum %[[PART]] : tensor<2x8x16xf32>
// CHECK:   %[[H:.*]] = fsdp.rms_norm %[[X]], %{{.*}} : tensor<2x8x16xf32>, tensor<16xf32>
// CHECK:   %[[HC:.*]] = fsdp.tensor_copy %[[H]] : tensor<2x8x16xf32>
// CHECK:   %[[Q:.*]] = fsdp.matmul %[[HC]], %{{.*}} transpose_rhs : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x8xf32>
// CHECK:   fsdp.reshape %[[Q]] : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
// CHECK:   %[[QR:.*]] = fsdp.rope %{{.*}} positions 2 theta {{.*}} : tensor<2x2x8x4xf32>
// CHECK:   %[[K:.*]] = fsdp.matmul %[[HC]], %{{.*}} transpose_rhs : tensor<2x8x16xf32>, tensor<4x16xf32> -> tensor<2x8x4xf32>
// CHECK:   fsdp.reshape %[[K]] : tensor<2x8x4xf32> -> tensor<2x8x1x4xf32>
// CHECK:   %[[V:.*]] = fsdp.matmul %[[HC]], %{{.*}} transpose_rhs : tensor<2x8x16xf32>, tensor<4x16xf32> -> tensor<2x8x4xf32>
// CHECK:   %[[O:.*]], %{{.*}} = fsdp.attention %[[QR]], %{{.*}}, %{{.*}} causal : tensor<2x2x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32> -> tensor<2x2x8x4xf32>, tensor<2x2x8xf32>
// CHECK:   %[[OC:.*]] = fsdp.reshape %{{.*}} : tensor<2x8x2x4xf32> -> tensor<2x8x8xf32>
// CHECK:   %[[PROJ:.*]] = fsdp.matmul %[[OC]], %{{.*}} transpose_rhs : tensor<2x8x8xf32>, tensor<16x8xf32> -> tensor<2x8x16xf32>
// CHECK:   %[[SUM:.*]] = fsdp.tensor_sum %[[PROJ]] : tensor<2x8x16xf32>
// CHECK:   %[[X1:.*]] = fsdp.add %[[X]], %[[SUM]]
// CHECK:   %[[X1C:.*]] = fsdp.tensor_copy %[[X1]] : tensor<2x8x16xf32>
// CHECK:   %[[A:.*]] = fsdp.matmul %[[X1C]], %{{.*}} -> tensor<2x8x12xf32>
// CHECK:   %[[S:.*]] = fsdp.silu %[[A]] : tensor<2x8x12xf32>
// CHECK:   %[[U:.*]] = fsdp.matmul %[[X1C]], %{{.*}} -> tensor<2x8x12xf32>
// CHECK:   %[[M:.*]] = fsdp.mul %[[S]], %[[U]] : tensor<2x8x12xf32>, tensor<2x8x12xf32> -> tensor<2x8x12xf32>
// CHECK:   %[[D:.*]] = fsdp.matmul %[[M]], %{{.*}} transpose_rhs : tensor<2x8x12xf32>, tensor<16x12xf32> -> tensor<2x8x16xf32>
// CHECK:   %[[DS:.*]] = fsdp.tensor_sum %[[D]] : tensor<2x8x16xf32>
// CHECK:   %[[X2:.*]] = fsdp.add %[[X1]], %[[DS]]
// CHECK:   %[[X2C:.*]] = fsdp.tensor_copy %[[X2]] : tensor<2x8x16xf32>
// CHECK:   %[[LOGITS:.*]] = fsdp.matmul %[[X2C]], %{{.*}} transpose_rhs : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
// CHECK:   fsdp.tensor_cross_entropy %[[LOGITS]], %[[TARGETS]] classes 32 : tensor<2x8x16xf32>, tensor<2x8xi32> -> tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @embed unit "embed" : tensor<32x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @attn_norm unit "block" : tensor<16xf32> = #fsdp.ones
  fsdp.param @wq unit "block" : tensor<16x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @wk unit "block" : tensor<8x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @wv unit "block" : tensor<8x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @wo unit "block" : tensor<16x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @gate unit "block" : tensor<24x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @up unit "block" : tensor<24x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @down unit "block" : tensor<16x24xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @head unit "head" : tensor<32x16xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%tokens: tensor<2x8xi32>, %targets: tensor<2x8xi32>) -> tensor<f32> {
    %e = fsdp.use @embed : tensor<32x16xf32>
    %x = fsdp.embedding %e[%tokens] : tensor<32x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
    %g = fsdp.use @attn_norm : tensor<16xf32>
    %h = fsdp.rms_norm %x, %g : tensor<2x8x16xf32>, tensor<16xf32>
    %wq = fsdp.use @wq : tensor<16x16xf32>
    %q = fsdp.matmul %h, %wq transpose_rhs : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %q4 = fsdp.reshape %q : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
    %qh = fsdp.transpose %q4 [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
    %qr = fsdp.rope %qh positions 2 theta 10000.0 : tensor<2x4x8x4xf32>
    %wk = fsdp.use @wk : tensor<8x16xf32>
    %k = fsdp.matmul %h, %wk transpose_rhs : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x8xf32>
    %k4 = fsdp.reshape %k : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %kh = fsdp.transpose %k4 [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
    %kr = fsdp.rope %kh positions 2 theta 10000.0 : tensor<2x2x8x4xf32>
    %wv = fsdp.use @wv : tensor<8x16xf32>
    %v = fsdp.matmul %h, %wv transpose_rhs : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x8xf32>
    %v4 = fsdp.reshape %v : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %vh = fsdp.transpose %v4 [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
    %o, %lse = fsdp.attention %qr, %kr, %vh causal : tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x4x8x4xf32>, tensor<2x4x8xf32>
    %ot = fsdp.transpose %o [0, 2, 1, 3] : tensor<2x4x8x4xf32> -> tensor<2x8x4x4xf32>
    %oc = fsdp.reshape %ot : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
    %wo = fsdp.use @wo : tensor<16x16xf32>
    %proj = fsdp.matmul %oc, %wo transpose_rhs : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %x1 = fsdp.add %x, %proj : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
    %wg = fsdp.use @gate : tensor<24x16xf32>
    %a = fsdp.matmul %x1, %wg transpose_rhs : tensor<2x8x16xf32>, tensor<24x16xf32> -> tensor<2x8x24xf32>
    %s = fsdp.silu %a : tensor<2x8x24xf32>
    %wu = fsdp.use @up : tensor<24x16xf32>
    %u = fsdp.matmul %x1, %wu transpose_rhs : tensor<2x8x16xf32>, tensor<24x16xf32> -> tensor<2x8x24xf32>
    %m = fsdp.mul %s, %u : tensor<2x8x24xf32>, tensor<2x8x24xf32> -> tensor<2x8x24xf32>
    %wd = fsdp.use @down : tensor<16x24xf32>
    %d = fsdp.matmul %m, %wd transpose_rhs : tensor<2x8x24xf32>, tensor<16x24xf32> -> tensor<2x8x16xf32>
    %x2 = fsdp.add %x1, %d : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
    %wh = fsdp.use @head : tensor<32x16xf32>
    %logits = fsdp.matmul %x2, %wh transpose_rhs : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
    %l = fsdp.cross_entropy %logits, %targets : tensor<2x8x32xf32>, tensor<2x8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

//===----------------------------------------------------------------------===//
// An MLP with biases, [in, out] weights: the first bias is cut with its
// product, the second is added to the whole sum
//===----------------------------------------------------------------------===//

// CHECK-LABEL: module attributes
// CHECK: fsdp.param @w1 unit "mlp" split 1 : tensor<8x16xf32>
// CHECK: fsdp.param @b1 unit "mlp" split 0 : tensor<16xf32>
// CHECK: fsdp.param @w2 unit "mlp" split 0 : tensor<16x8xf32>
// CHECK: fsdp.param @b2 unit "mlp.whole" : tensor<8xf32>
// CHECK: %[[XC:.*]] = fsdp.tensor_copy %arg0 : tensor<4x8xf32>
// CHECK: %[[H:.*]] = fsdp.matmul %[[XC]], %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK: %[[HB:.*]] = fsdp.add %[[H]], %{{.*}} : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
// CHECK: %[[G:.*]] = fsdp.gelu %[[HB]] : tensor<4x16xf32>
// CHECK: %[[P:.*]] = fsdp.matmul %[[G]], %{{.*}} : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
// CHECK: %[[Y:.*]] = fsdp.tensor_sum %[[P]] : tensor<4x8xf32>
// CHECK: fsdp.add %[[Y]], %{{.*}} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w1 unit "mlp" : tensor<8x32xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @b1 unit "mlp" : tensor<32xf32> = #fsdp.zeros
  fsdp.param @w2 unit "mlp" : tensor<32x8xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @b2 unit "mlp" : tensor<8xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
    %w1 = fsdp.use @w1 : tensor<8x32xf32>
    %b1 = fsdp.use @b1 : tensor<32xf32>
    %h = fsdp.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
    %hb = fsdp.add %h, %b1 : tensor<4x32xf32>, tensor<32xf32> -> tensor<4x32xf32>
    %g = fsdp.gelu %hb : tensor<4x32xf32>
    %w2 = fsdp.use @w2 : tensor<32x8xf32>
    %b2 = fsdp.use @b2 : tensor<8xf32>
    %p = fsdp.matmul %g, %w2 : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32>
    %pb = fsdp.add %p, %b2 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    %l = fsdp.mse %pb, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// One tensor rank: nothing changes.
// CHECK-LABEL: module attributes
// CHECK: fsdp.param @w unit "fc" : tensor<8x32xf32>
// CHECK-NOT: fsdp.tensor_copy
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "fc" : tensor<8x32xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w2 unit "fc" : tensor<32x8xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<8x32xf32>
    %h = fsdp.matmul %x, %w : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
    %w2 = fsdp.use @w2 : tensor<32x8xf32>
    %p = fsdp.matmul %h, %w2 : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32>
    %l = fsdp.mse %p, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// 4 tensor ranks and 2 key-value heads (grouped-query attention, 4 query heads): the
// ranks cannot divide the key-value heads, so k and v stay whole on every rank (their
// weights in the unit's whole part) and each rank's query head reads the key-value
// head its group uses (rank t: head t / 2) through fsdp.tensor_chunk, whose gradient
// sums the 2 ranks' parts of each head.

// CHECK-LABEL: module attributes
// CHECK: fsdp.param @wq unit "b" split 0 : tensor<4x16xf32>
// CHECK: fsdp.param @wk unit "b.whole" : tensor<8x16xf32>
// CHECK: fsdp.param @wv unit "b.whole" : tensor<8x16xf32>
// CHECK: fsdp.param @wo unit "b" split 1 : tensor<16x4xf32>
// CHECK: %[[KH:.*]] = fsdp.transpose %{{.*}} [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
// CHECK: %[[K:.*]] = fsdp.tensor_chunk %[[KH]] dim 1 : tensor<2x2x8x4xf32> -> tensor<2x1x8x4xf32>
// CHECK: %[[VH:.*]] = fsdp.transpose %{{.*}} [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
// CHECK: %[[V:.*]] = fsdp.tensor_chunk %[[VH]] dim 1 : tensor<2x2x8x4xf32> -> tensor<2x1x8x4xf32>
// CHECK: fsdp.attention %{{.*}}, %[[K]], %[[V]] causal : tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>
// CHECK: fsdp.tensor_sum
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 4, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @wq unit "b" : tensor<16x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @wk unit "b" : tensor<8x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @wv unit "b" : tensor<8x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @wo unit "b" : tensor<16x16xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%h: tensor<2x8x16xf32>, %y: tensor<2x8x16xf32>) -> tensor<f32> {
    %wq = fsdp.use @wq : tensor<16x16xf32>
    %q = fsdp.matmul %h, %wq transpose_rhs : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %q4 = fsdp.reshape %q : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
    %qh = fsdp.transpose %q4 [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
    %wk = fsdp.use @wk : tensor<8x16xf32>
    %k = fsdp.matmul %h, %wk transpose_rhs : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x8xf32>
    %k4 = fsdp.reshape %k : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %kh = fsdp.transpose %k4 [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
    %wv = fsdp.use @wv : tensor<8x16xf32>
    %v = fsdp.matmul %h, %wv transpose_rhs : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x8xf32>
    %v4 = fsdp.reshape %v : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %vh = fsdp.transpose %v4 [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
    %o, %lse = fsdp.attention %qh, %kh, %vh causal : tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x4x8x4xf32>, tensor<2x4x8xf32>
    %ot = fsdp.transpose %o [0, 2, 1, 3] : tensor<2x4x8x4xf32> -> tensor<2x8x4x4xf32>
    %oc = fsdp.reshape %ot : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
    %wo = fsdp.use @wo : tensor<16x16xf32>
    %proj = fsdp.matmul %oc, %wo transpose_rhs : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
    %l = fsdp.mse %proj, %y : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The user's annotations: `tensor whole` on the MLP's second weight keeps it whole, and
// with it the region it would close (the first product reads the whole input, its
// weight and bias whole too); the attention-free block's other product stays cut.
// CHECK-LABEL: module attributes
// CHECK: fsdp.param @w1 unit "mlp" : tensor<8x32xf32>
// CHECK: fsdp.param @b1 unit "mlp" : tensor<32xf32>
// CHECK: fsdp.param @w2 unit "mlp" tensor whole : tensor<32x8xf32>
// CHECK: fsdp.param @w3 unit "out" tensor cut split 1 : tensor<8x8xf32>
// CHECK: fsdp.param @w4 unit "out" split 0 : tensor<8x8xf32>
// CHECK: %[[H:.*]] = fsdp.matmul %arg0, %{{.*}} : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
// CHECK: %[[P:.*]] = fsdp.matmul %{{.*}}, %{{.*}} : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32>
// CHECK: %[[PC:.*]] = fsdp.tensor_copy %[[P]] : tensor<4x8xf32>
// CHECK: fsdp.matmul %[[PC]], %{{.*}} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK: fsdp.tensor_sum
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w1 unit "mlp" : tensor<8x32xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @b1 unit "mlp" : tensor<32xf32> = #fsdp.zeros
  fsdp.param @w2 unit "mlp" tensor whole : tensor<32x8xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w3 unit "out" tensor cut : tensor<8x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w4 unit "out" : tensor<16x8xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
    %w1 = fsdp.use @w1 : tensor<8x32xf32>
    %b1 = fsdp.use @b1 : tensor<32xf32>
    %h = fsdp.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
    %hb = fsdp.add %h, %b1 : tensor<4x32xf32>, tensor<32xf32> -> tensor<4x32xf32>
    %g = fsdp.gelu %hb : tensor<4x32xf32>
    %w2 = fsdp.use @w2 : tensor<32x8xf32>
    %p = fsdp.matmul %g, %w2 : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32>
    %w3 = fsdp.use @w3 : tensor<8x16xf32>
    %q = fsdp.matmul %p, %w3 : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
    %r = fsdp.relu %q : tensor<4x16xf32>
    %w4 = fsdp.use @w4 : tensor<16x8xf32>
    %o = fsdp.matmul %r, %w4 : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
    %l = fsdp.mse %o, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//===----------------------------------------------------------------------===//
// What the layout would cut but cannot: located errors
//===----------------------------------------------------------------------===//

// -----

// `tensor cut` where the layout keeps the parameter whole: a region that reaches the
// loss, and a parameter no region reads.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  // expected-error@+1 {{parameter @head is declared 'tensor cut', but the tensor ranks hold it whole: the region that would cut it stays whole}}
  fsdp.param @head unit "head" tensor cut : tensor<8x16xf32> = #fsdp.normal<std = 0.02>
  // expected-error@+1 {{parameter @gain is declared 'tensor cut', but the tensor ranks hold it whole: no tensor-parallel region reads it}}
  fsdp.param @gain unit "head" tensor cut : tensor<8xf32> = #fsdp.ones
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x16xf32>) -> tensor<f32> {
    %g = fsdp.use @gain : tensor<8xf32>
    %n = fsdp.rms_norm %x, %g eps 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>
    %w = fsdp.use @head : tensor<8x16xf32>
    %z = fsdp.matmul %n, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
    // expected-note@+1 {{the region reaches this op, which it cannot cut through}}
    %l = fsdp.mse %z, %y : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// 2 tensor ranks and 3 key-value heads: neither divides the other.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @wq unit "b" : tensor<24x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @wk unit "b" : tensor<12x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @wv unit "b" : tensor<12x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @wo unit "b" : tensor<16x24xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%h: tensor<2x8x16xf32>, %y: tensor<2x8x16xf32>) -> tensor<f32> {
    %wq = fsdp.use @wq : tensor<24x16xf32>
    %q = fsdp.matmul %h, %wq transpose_rhs : tensor<2x8x16xf32>, tensor<24x16xf32> -> tensor<2x8x24xf32>
    %q4 = fsdp.reshape %q : tensor<2x8x24xf32> -> tensor<2x8x6x4xf32>
    %qh = fsdp.transpose %q4 [0, 2, 1, 3] : tensor<2x8x6x4xf32> -> tensor<2x6x8x4xf32>
    %wk = fsdp.use @wk : tensor<12x16xf32>
    %k = fsdp.matmul %h, %wk transpose_rhs : tensor<2x8x16xf32>, tensor<12x16xf32> -> tensor<2x8x12xf32>
    // expected-error@+1 {{tensor_parallel = 2 must divide the result's dimension that holds them}}
    %k4 = fsdp.reshape %k : tensor<2x8x12xf32> -> tensor<2x8x3x4xf32>
    %kh = fsdp.transpose %k4 [0, 2, 1, 3] : tensor<2x8x3x4xf32> -> tensor<2x3x8x4xf32>
    %wv = fsdp.use @wv : tensor<12x16xf32>
    %v = fsdp.matmul %h, %wv transpose_rhs : tensor<2x8x16xf32>, tensor<12x16xf32> -> tensor<2x8x12xf32>
    // expected-error@+1 {{tensor_parallel = 2 must divide the result's dimension that holds them}}
    %v4 = fsdp.reshape %v : tensor<2x8x12xf32> -> tensor<2x8x3x4xf32>
    %vh = fsdp.transpose %v4 [0, 2, 1, 3] : tensor<2x8x3x4xf32> -> tensor<2x3x8x4xf32>
    %o, %lse = fsdp.attention %qh, %kh, %vh causal : tensor<2x6x8x4xf32>, tensor<2x3x8x4xf32>, tensor<2x3x8x4xf32> -> tensor<2x6x8x4xf32>, tensor<2x6x8xf32>
    %ot = fsdp.transpose %o [0, 2, 1, 3] : tensor<2x6x8x4xf32> -> tensor<2x8x6x4xf32>
    %oc = fsdp.reshape %ot : tensor<2x8x6x4xf32> -> tensor<2x8x24xf32>
    %wo = fsdp.use @wo : tensor<16x24xf32>
    %proj = fsdp.matmul %oc, %wo transpose_rhs : tensor<2x8x24xf32>, tensor<16x24xf32> -> tensor<2x8x16xf32>
    %l = fsdp.mse %proj, %y : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// 3 tensor ranks do not divide 32 features.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 3, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w1 unit "mlp" : tensor<8x32xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w2 unit "mlp" : tensor<32x8xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
    %w1 = fsdp.use @w1 : tensor<8x32xf32>
    // expected-error@+1 {{tensor_parallel = 3 does not divide dimension 1 (32) of the parameter's tensor, which the tensor ranks cut}}
    %h = fsdp.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
    %w2 = fsdp.use @w2 : tensor<32x8xf32>
    %p = fsdp.matmul %h, %w2 : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32>
    %l = fsdp.mse %p, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// One weight read as a column-parallel product's and a row-parallel one's.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  // expected-error@+1 {{the tensor ranks would read this parameter both cut and whole, or cut along two dimensions}}
  fsdp.param @w unit "mlp" : tensor<8x8xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
    // expected-note@+1 {{read here}}
    %w = fsdp.use @w : tensor<8x8xf32>
    %h = fsdp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    // expected-note@+1 {{and here}}
    %w2 = fsdp.use @w : tensor<8x8xf32>
    %p = fsdp.matmul %h, %w2 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %l = fsdp.mse %p, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A fused product's parts sliced apart along the features the ranks cut.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w1 unit "mlp" : tensor<8x32xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w2 unit "mlp" : tensor<16x8xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
    %w1 = fsdp.use @w1 : tensor<8x32xf32>
    %h = fsdp.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
    // expected-error@+1 {{slices the dimension the tensor ranks cut}}
    %a = fsdp.slice %h dim 1 offset 0 size 16 : tensor<4x32xf32> -> tensor<4x16xf32>
    %w2 = fsdp.use @w2 : tensor<16x8xf32>
    %p = fsdp.matmul %a, %w2 : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
    %l = fsdp.mse %p, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Units first: a unit's cut and whole parameters part ways.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  // expected-error@+1 {{parameter has no unit; run fsdp-form-units first}}
  fsdp.param @w : tensor<8x8xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
    %l = fsdp.mse %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A head tied to the embedding (one parameter read by both): both cut along
// the vocabulary, the table's rows.
// CHECK-LABEL: module attributes
// CHECK: fsdp.param @wte unit "embed" split 0 : tensor<8x8xf32>
// CHECK: fsdp.tensor_embedding %{{.*}}[%{{.*}}] rows 16
// CHECK: fsdp.matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
// CHECK: fsdp.tensor_cross_entropy %{{.*}}, %{{.*}} classes 16
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @wte unit "embed" : tensor<16x8xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%tokens: tensor<2x4xi32>, %y: tensor<2x4xi32>) -> tensor<f32> {
    %e = fsdp.use @wte : tensor<16x8xf32>
    %x = fsdp.embedding %e[%tokens] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %w = fsdp.use @wte : tensor<16x8xf32>
    %z = fsdp.matmul %x, %w transpose_rhs : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %l = fsdp.cross_entropy %z, %y : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The same tied head whose logits the loss also reads whole (their mean over
// all classes): the head's region stays whole, so the embedding, which would
// read the table cut while the head reads it whole, stays whole too.
// CHECK-LABEL: module attributes
// CHECK: fsdp.param @wte unit "embed" : tensor<16x8xf32>
// CHECK-NOT: fsdp.tensor_
// CHECK: fsdp.cross_entropy %{{.*}}, %{{.*}} : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @wte unit "embed" : tensor<16x8xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%tokens: tensor<2x4xi32>, %y: tensor<2x4xi32>) -> tensor<f32> {
    %e = fsdp.use @wte : tensor<16x8xf32>
    %x = fsdp.embedding %e[%tokens] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %w = fsdp.use @wte : tensor<16x8xf32>
    %z = fsdp.matmul %x, %w transpose_rhs : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %ce = fsdp.cross_entropy %z, %y : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    %mean = fsdp.reduce_mean %z dims [0, 1, 2] : tensor<2x4x16xf32> -> tensor<f32>
    %l = fsdp.add %ce, %mean : tensor<f32>, tensor<f32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The classes must divide among the tensor ranks; declared whole, the head
// needs not (the next module).
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @head unit "head" : tensor<8x15xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4xi32>) -> tensor<f32> {
    %w = fsdp.use @head : tensor<8x15xf32>
    %z = fsdp.matmul %x, %w : tensor<4x8xf32>, tensor<8x15xf32> -> tensor<4x15xf32>
    // expected-error@+1 {{tensor_parallel = 2 does not divide the 15 classes of this loss, whose logits the tensor ranks would hold in blocks (a vocabulary-parallel head): pad the vocabulary to a multiple of 2, or declare the head's weight 'tensor whole'}}
    %l = fsdp.cross_entropy %z, %y : tensor<4x15xf32>, tensor<4xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// CHECK-LABEL: module attributes
// CHECK: fsdp.param @head unit "head" tensor whole : tensor<8x15xf32>
// CHECK: fsdp.cross_entropy %{{.*}}, %{{.*}} : tensor<4x15xf32>, tensor<4xi32> -> tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @head unit "head" tensor whole : tensor<8x15xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4xi32>) -> tensor<f32> {
    %w = fsdp.use @head : tensor<8x15xf32>
    %z = fsdp.matmul %x, %w : tensor<4x8xf32>, tensor<8x15xf32> -> tensor<4x15xf32>
    %l = fsdp.cross_entropy %z, %y : tensor<4x15xf32>, tensor<4xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A parameter read cut by a region and whole outside it: the region stays whole,
// which a 'tensor cut' on it makes an error at the read that holds it whole.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  // expected-error@+1 {{parameter @w is declared 'tensor cut', but the tensor ranks hold it whole: the region that would cut it stays whole}}
  fsdp.param @w unit "mlp" tensor cut : tensor<8x8xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w2 unit "mlp" : tensor<8x8xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<8x8xf32>
    %h = fsdp.matmul %x, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
    %w2 = fsdp.use @w2 : tensor<8x8xf32>
    %p = fsdp.matmul %h, %w2 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
    // expected-note@+1 {{the region cuts a parameter this read holds whole}}
    %wb = fsdp.use @w : tensor<8x8xf32>
    %q = fsdp.add %p, %wb : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
    %l = fsdp.mse %q, %y : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A fused product (GPT-2's c_attn: queries, keys and values side by side, a bias added)
// sliced into its parts: each part is cut into the ranks' blocks, the weight and the
// bias declared with their parts, each slice reading its part's block of the rank's
// result.
// CHECK-LABEL: module attributes
// CHECK: fsdp.param @c_attn.w unit "attn" split 1 parts [16, 16, 16] : tensor<16x24xf32>
// CHECK: fsdp.param @c_attn.b unit "attn" split 0 parts [16, 16, 16] : tensor<24xf32>
// CHECK: fsdp.param @c_proj unit "attn" split 0 : tensor<8x16xf32>
// CHECK: %[[QKV:.*]] = fsdp.add %{{.*}}, %{{.*}} : tensor<2x4x24xf32>, tensor<24xf32> -> tensor<2x4x24xf32>
// CHECK: fsdp.slice %[[QKV]] dim 2 offset 0 size 8 : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
// CHECK: fsdp.slice %[[QKV]] dim 2 offset 8 size 8 : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
// CHECK: fsdp.slice %[[QKV]] dim 2 offset 16 size 8 : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
// CHECK: fsdp.attention %{{.*}}, %{{.*}}, %{{.*}} causal : tensor<2x1x4x8xf32>
// CHECK: fsdp.tensor_sum
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @c_attn.w unit "attn" : tensor<16x48xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @c_attn.b unit "attn" : tensor<48xf32> = #fsdp.zeros
  fsdp.param @c_proj unit "attn" : tensor<16x16xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%x: tensor<2x4x16xf32>, %y: tensor<2x4x16xf32>) -> tensor<f32> {
    %w = fsdp.use @c_attn.w : tensor<16x48xf32>
    %b = fsdp.use @c_attn.b : tensor<48xf32>
    %m = fsdp.matmul %x, %w : tensor<2x4x16xf32>, tensor<16x48xf32> -> tensor<2x4x48xf32>
    %qkv = fsdp.add %m, %b : tensor<2x4x48xf32>, tensor<48xf32> -> tensor<2x4x48xf32>
    %q = fsdp.slice %qkv dim 2 offset 0 size 16 : tensor<2x4x48xf32> -> tensor<2x4x16xf32>
    %k = fsdp.slice %qkv dim 2 offset 16 size 16 : tensor<2x4x48xf32> -> tensor<2x4x16xf32>
    %v = fsdp.slice %qkv dim 2 offset 32 size 16 : tensor<2x4x48xf32> -> tensor<2x4x16xf32>
    %q4 = fsdp.reshape %q : tensor<2x4x16xf32> -> tensor<2x4x2x8xf32>
    %k4 = fsdp.reshape %k : tensor<2x4x16xf32> -> tensor<2x4x2x8xf32>
    %v4 = fsdp.reshape %v : tensor<2x4x16xf32> -> tensor<2x4x2x8xf32>
    %qh = fsdp.transpose %q4 [0, 2, 1, 3] : tensor<2x4x2x8xf32> -> tensor<2x2x4x8xf32>
    %kh = fsdp.transpose %k4 [0, 2, 1, 3] : tensor<2x4x2x8xf32> -> tensor<2x2x4x8xf32>
    %vh = fsdp.transpose %v4 [0, 2, 1, 3] : tensor<2x4x2x8xf32> -> tensor<2x2x4x8xf32>
    %o, %lse = fsdp.attention %qh, %kh, %vh causal : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32> -> tensor<2x2x4x8xf32>, tensor<2x2x4xf32>
    %ot = fsdp.transpose %o [0, 2, 1, 3] : tensor<2x2x4x8xf32> -> tensor<2x4x2x8xf32>
    %oc = fsdp.reshape %ot : tensor<2x4x2x8xf32> -> tensor<2x4x16xf32>
    %wp = fsdp.use @c_proj : tensor<16x16xf32>
    %p = fsdp.matmul %oc, %wp : tensor<2x4x16xf32>, tensor<16x16xf32> -> tensor<2x4x16xf32>
    %l = fsdp.mse %p, %y : tensor<2x4x16xf32>, tensor<2x4x16xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The parts of a fused product must each divide among the tensor ranks.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "mlp" : tensor<8x12xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w2 unit "mlp" : tensor<5x8xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<8x12xf32>
    // expected-error@+1 {{tensor_parallel = 2 does not divide a part (5) of its fused product's features, which the tensor ranks cut part by part}}
    %h = fsdp.matmul %x, %w : tensor<4x8xf32>, tensor<8x12xf32> -> tensor<4x12xf32>
    %a = fsdp.slice %h dim 1 offset 0 size 5 : tensor<4x12xf32> -> tensor<4x5xf32>
    %c = fsdp.slice %h dim 1 offset 5 size 7 : tensor<4x12xf32> -> tensor<4x7xf32>
    %g = fsdp.mul %a, %a : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
    %w2 = fsdp.use @w2 : tensor<5x8xf32>
    %p = fsdp.matmul %g, %w2 : tensor<4x5xf32>, tensor<5x8xf32> -> tensor<4x8xf32>
    %l = fsdp.mse %p, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A value cut part by part (%a, sliced into its parts below) and one cut whole (%e):
// the ranks' blocks of the two hold different features, which no elementwise op may
// combine.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w1 unit "mlp" : tensor<8x12xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w2 unit "mlp" : tensor<8x12xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w3 unit "mlp" : tensor<6x8xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
    %w1 = fsdp.use @w1 : tensor<8x12xf32>
    %a = fsdp.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x12xf32> -> tensor<4x12xf32>
    %w2 = fsdp.use @w2 : tensor<8x12xf32>
    %b = fsdp.matmul %x, %w2 : tensor<4x8xf32>, tensor<8x12xf32> -> tensor<4x12xf32>
    %e = fsdp.exp %b : tensor<4x12xf32>
    // expected-error@+1 {{combines a fused product's parts, which the tensor ranks cut part by part, with a value they cut otherwise}}
    %c = fsdp.add %a, %e : tensor<4x12xf32>, tensor<4x12xf32> -> tensor<4x12xf32>
    %p0 = fsdp.slice %a dim 1 offset 0 size 6 : tensor<4x12xf32> -> tensor<4x6xf32>
    %p1 = fsdp.slice %a dim 1 offset 6 size 6 : tensor<4x12xf32> -> tensor<4x6xf32>
    %s = fsdp.mul %p0, %p1 : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
    %w3 = fsdp.use @w3 : tensor<6x8xf32>
    %p = fsdp.matmul %s, %w3 : tensor<4x6xf32>, tensor<6x8xf32> -> tensor<4x8xf32>
    %l = fsdp.mse %p, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
