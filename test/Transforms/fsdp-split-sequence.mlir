// RUN: fsdp-opt %s -split-input-file -fsdp-split-sequence -verify-diagnostics | FileCheck %s

//===----------------------------------------------------------------------===//
// A pre-norm block on 2 tensor ranks, as fsdp-split-tensors and fsdp-partition
// leave it for one sequence a rank: sequence blocks between the regions
//===----------------------------------------------------------------------===//

// The region's sum becomes a reduce-scatter along the sequence (dimension 1 of
// [batch, sequence, features]: the ranks do not divide the batch's one row); the embeddings every rank computed are cut to
// the rank's block where the residual add reads them; the add's bias and the
// norms' gains broadcast over the sequence and enter through tensor_copy; the
// next region gathers the blocks it copied; the head reads the whole.

// CHECK-LABEL: func.func @loss
// CHECK:   %[[X:.*]] = fsdp.embedding
// CHECK:   %[[XB:.*]] = fsdp.tensor_chunk %[[X]] dim 1 : tensor<1x8x16xf32> -> tensor<1x4x16xf32>
// CHECK:   %[[H:.*]] = fsdp.rms_norm %[[X]], %{{.*}} : tensor<1x8x16xf32>, tensor<16xf32>
// CHECK:   %[[HC:.*]] = fsdp.tensor_copy %[[H]] : tensor<1x8x16xf32>
// CHECK:   %[[UP:.*]] = fsdp.matmul %[[HC]]
// CHECK:   %[[DOWN:.*]] = fsdp.matmul
// CHECK:   %[[RS:.*]] = fsdp.tensor_reduce_scatter %[[DOWN]] dim 1 : tensor<1x8x16xf32> -> tensor<1x4x16xf32>
// CHECK:   %[[BIAS:.*]] = fsdp.use @bias
// CHECK:   %[[BIASC:.*]] = fsdp.tensor_copy %[[BIAS]] : tensor<16xf32>
// CHECK:   %[[RB:.*]] = fsdp.add %[[RS]], %[[BIASC]] : tensor<1x4x16xf32>, tensor<16xf32> -> tensor<1x4x16xf32>
// CHECK:   %[[X1:.*]] = fsdp.add %[[XB]], %[[RB]] : tensor<1x4x16xf32>, tensor<1x4x16xf32> -> tensor<1x4x16xf32>
// CHECK:   %[[G2:.*]] = fsdp.use @norm2
// CHECK:   %[[G2C:.*]] = fsdp.tensor_copy %[[G2]] : tensor<16xf32>
// CHECK:   %[[H2:.*]] = fsdp.rms_norm %[[X1]], %[[G2C]] : tensor<1x4x16xf32>, tensor<16xf32>
// CHECK:   %[[H2G:.*]] = fsdp.tensor_all_gather %[[H2]] dim 1 : tensor<1x4x16xf32> -> tensor<1x8x16xf32>
// CHECK:   fsdp.matmul %[[H2G]]
// CHECK:   %[[D2:.*]] = fsdp.matmul
// CHECK:   %[[RS2:.*]] = fsdp.tensor_reduce_scatter %[[D2]] dim 1
// CHECK:   %[[X2:.*]] = fsdp.add %[[X1]], %[[RS2]] : tensor<1x4x16xf32>, tensor<1x4x16xf32> -> tensor<1x4x16xf32>
// CHECK:   %[[X2W:.*]] = fsdp.tensor_unchunk %[[X2]] dim 1 : tensor<1x4x16xf32> -> tensor<1x8x16xf32>
// CHECK:   %[[LOGITS:.*]] = fsdp.matmul %[[X2W]], %{{.*}} transpose_rhs : tensor<1x8x16xf32>, tensor<32x16xf32> -> tensor<1x8x32xf32>
// CHECK:   fsdp.cross_entropy %[[LOGITS]]
// CHECK-NOT: fsdp.tensor_sum
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, sequence_parallel = true, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @embed unit "embed" : tensor<32x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @norm1 unit "block.whole" : tensor<16xf32> = #fsdp.ones
  fsdp.param @bias unit "block.whole" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @norm2 unit "block.whole" : tensor<16xf32> = #fsdp.ones
  fsdp.param @up unit "block" split 0 : tensor<12x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @down unit "block" split 1 : tensor<16x12xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @up2 unit "block" split 0 : tensor<12x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @down2 unit "block" split 1 : tensor<16x12xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @head unit "head" : tensor<32x16xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%tokens: tensor<1x8xi32>, %targets: tensor<1x8xi32>) -> tensor<f32> {
    %e = fsdp.use @embed : tensor<32x16xf32>
    %x = fsdp.embedding %e[%tokens] : tensor<32x16xf32>, tensor<1x8xi32> -> tensor<1x8x16xf32>
    %g1 = fsdp.use @norm1 : tensor<16xf32>
    %h = fsdp.rms_norm %x, %g1 : tensor<1x8x16xf32>, tensor<16xf32>
    %hc = fsdp.tensor_copy %h : tensor<1x8x16xf32>
    %wu = fsdp.use @up : tensor<12x16xf32>
    %u = fsdp.matmul %hc, %wu transpose_rhs : tensor<1x8x16xf32>, tensor<12x16xf32> -> tensor<1x8x12xf32>
    %s = fsdp.silu %u : tensor<1x8x12xf32>
    %wd = fsdp.use @down : tensor<16x12xf32>
    %d = fsdp.matmul %s, %wd transpose_rhs : tensor<1x8x12xf32>, tensor<16x12xf32> -> tensor<1x8x16xf32>
    %ds = fsdp.tensor_sum %d : tensor<1x8x16xf32>
    %b = fsdp.use @bias : tensor<16xf32>
    %db = fsdp.add %ds, %b : tensor<1x8x16xf32>, tensor<16xf32> -> tensor<1x8x16xf32>
    %x1 = fsdp.add %x, %db : tensor<1x8x16xf32>, tensor<1x8x16xf32> -> tensor<1x8x16xf32>
    %g2 = fsdp.use @norm2 : tensor<16xf32>
    %h2 = fsdp.rms_norm %x1, %g2 : tensor<1x8x16xf32>, tensor<16xf32>
    %h2c = fsdp.tensor_copy %h2 : tensor<1x8x16xf32>
    %wu2 = fsdp.use @up2 : tensor<12x16xf32>
    %u2 = fsdp.matmul %h2c, %wu2 transpose_rhs : tensor<1x8x16xf32>, tensor<12x16xf32> -> tensor<1x8x12xf32>
    %wd2 = fsdp.use @down2 : tensor<16x12xf32>
    %d2 = fsdp.matmul %u2, %wd2 transpose_rhs : tensor<1x8x12xf32>, tensor<16x12xf32> -> tensor<1x8x16xf32>
    %d2s = fsdp.tensor_sum %d2 : tensor<1x8x16xf32>
    %x2 = fsdp.add %x1, %d2s : tensor<1x8x16xf32>, tensor<1x8x16xf32> -> tensor<1x8x16xf32>
    %wh = fsdp.use @head : tensor<32x16xf32>
    %logits = fsdp.matmul %x2, %wh transpose_rhs : tensor<1x8x16xf32>, tensor<32x16xf32> -> tensor<1x8x32xf32>
    %loss = fsdp.cross_entropy %logits, %targets : tensor<1x8x32xf32>, tensor<1x8xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// The batch's rows, where the ranks divide them: contiguous blocks. Rows of
// [rows, features] are split along dimension 0; a sum of a vector (no
// tokens) stays an all-reduce.

// CHECK-LABEL: func.func @rows
// CHECK:   fsdp.tensor_reduce_scatter %{{.*}} dim 0 : tensor<4x6x16xf32> -> tensor<1x6x16xf32>
// CHECK:   %[[RS:.*]] = fsdp.tensor_reduce_scatter %{{.*}} dim 0 : tensor<8x16xf32> -> tensor<2x16xf32>
// CHECK:   %[[G:.*]] = fsdp.gelu %[[RS]] : tensor<2x16xf32>
// CHECK:   fsdp.tensor_unchunk %[[G]] dim 0 : tensor<2x16xf32> -> tensor<8x16xf32>
// CHECK:   fsdp.tensor_sum %{{.*}} : tensor<16xf32>
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 4, sequence_parallel = true, optimizer = #fsdp.sgd<lr = 0.1>>} {
  func.func @rows(%b: tensor<4x6x16xf32>, %x: tensor<8x16xf32>, %v: tensor<16xf32>) -> (tensor<4x6x16xf32>, tensor<8x16xf32>, tensor<16xf32>) {
    %bs = fsdp.tensor_sum %b : tensor<4x6x16xf32>
    %s = fsdp.tensor_sum %x : tensor<8x16xf32>
    %g = fsdp.gelu %s : tensor<8x16xf32>
    %t = fsdp.tensor_sum %v : tensor<16xf32>
    return %bs, %g, %t : tensor<4x6x16xf32>, tensor<8x16xf32>, tensor<16xf32>
  }
}

// -----

// Without sequence_parallel nothing changes.

// CHECK-LABEL: func.func @whole
// CHECK:   fsdp.tensor_sum %{{.*}} : tensor<8x16xf32>
// CHECK-NOT: fsdp.tensor_reduce_scatter
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 4, optimizer = #fsdp.sgd<lr = 0.1>>} {
  func.func @whole(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %s = fsdp.tensor_sum %x : tensor<8x16xf32>
    return %s : tensor<8x16xf32>
  }
}

// -----

// The tensor ranks must divide the batch's rows or the sequence.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 4, sequence_parallel = true, optimizer = #fsdp.sgd<lr = 0.1>>} {
  func.func @odd(%x: tensor<2x6x16xf32>) -> tensor<2x6x16xf32> {
    // expected-error@+1 {{sequence_parallel: tensor_parallel = 4 divides neither the sequence (dimension 1, 6) nor the batch's rows of this row-parallel product's result 'tensor<2x6x16xf32>', which the tensor ranks would hold in blocks}}
    %s = fsdp.tensor_sum %x : tensor<2x6x16xf32>
    return %s : tensor<2x6x16xf32>
  }
}
