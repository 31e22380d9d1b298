// The tensor-parallel axis: the plan's tensor_parallel, a parameter cut over the
// tensor ranks (`split`), the region ops fsdp.tensor_copy and fsdp.tensor_sum, and an
// all-reduce over the tensor group, in the custom and the generic form.
// RUN: fsdp-opt %s | FileCheck %s
// RUN: fsdp-opt %s | fsdp-opt | FileCheck %s
// RUN: fsdp-opt %s -mlir-print-op-generic | fsdp-opt | FileCheck %s
// RUN: fsdp-opt %s -mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK: module attributes {fsdp.plan = #fsdp.plan<grid = [2], tensor_parallel = 4, optimizer = #fsdp.sgd<lr = 0.1>>}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], tensor_parallel = 4, optimizer = #fsdp.sgd<lr = 0.1>>} {
  // CHECK: fsdp.param @w1 unit "mlp" split 1 : tensor<8x4xf32> = #fsdp.normal<std = 0.02>
  // GENERIC: "fsdp.param"() <{{{.*}}split_dim = 1 : i64{{.*}}}>
  fsdp.param @w1 unit "mlp" split 1 : tensor<8x4xf32> = #fsdp.normal<std = 0.02>
  // CHECK: fsdp.param @w2 unit "mlp" split 0 at 32 : tensor<4x8xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w2 unit "mlp" split 0 at 32 : tensor<4x8xf32> = #fsdp.normal<std = 0.02>
  // A fused product's weight: 3 parts of 8 features, each cut into the 4 ranks' blocks.
  // CHECK: fsdp.param @qkv unit "mlp" split 1 parts [8, 8, 8] : tensor<8x6xf32> = #fsdp.zeros
  // GENERIC: "fsdp.param"() <{{{.*}}split_parts = array<i64: 8, 8, 8>{{.*}}}>
  fsdp.param @qkv unit "mlp" split 1 parts [8, 8, 8] : tensor<8x6xf32> = #fsdp.zeros
  // The user's layout annotations.
  // CHECK: fsdp.param @w3 unit "mlp" tensor whole : tensor<8x8xf32> = #fsdp.zeros
  // GENERIC: "fsdp.param"() <{{{.*}}tensor_layout = 0 : i32{{.*}}}>
  fsdp.param @w3 unit "mlp" tensor whole : tensor<8x8xf32> = #fsdp.zeros
  // CHECK: fsdp.param @w4 unit "mlp" tensor cut split 1 : tensor<8x4xf32> = #fsdp.zeros
  fsdp.param @w4 unit "mlp" tensor cut split 1 : tensor<8x4xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<2x8xf32>, %y: tensor<2x8xf32>) -> tensor<f32> {
    // CHECK: %[[XC:.+]] = fsdp.tensor_copy %{{.+}} : tensor<2x8xf32>
    // GENERIC: "fsdp.tensor_copy"(%{{.+}}) : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %xc = fsdp.tensor_copy %x : tensor<2x8xf32>
    %w1 = fsdp.use @w1 : tensor<8x4xf32>
    %h = fsdp.matmul %xc, %w1 : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
    %w2 = fsdp.use @w2 : tensor<4x8xf32>
    %p = fsdp.matmul %h, %w2 : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
    // CHECK: fsdp.tensor_sum %{{.+}} : tensor<2x8xf32>
    // GENERIC: "fsdp.tensor_sum"(%{{.+}}) : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %s = fsdp.tensor_sum %p : tensor<2x8xf32>
    %l = fsdp.mse %s, %y : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<f32>
    // CHECK: fsdp.all_reduce %{{.+}} sum over tensor : tensor<f32>
    // GENERIC: "fsdp.all_reduce"(%{{.+}}) <{group = 3 : i32, reduction = 0 : i32}>
    %r = fsdp.all_reduce %l sum over tensor : tensor<f32>
    return %r : tensor<f32>
  }
}

// Sequence blocks (sequence_parallel = true): a value's blocks along a dimension,
// one per tensor rank, and the four ops that move between them and the whole.
// CHECK: module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, sequence_parallel = true, optimizer = #fsdp.sgd<lr = 0.1>>}
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, sequence_parallel = true, optimizer = #fsdp.sgd<lr = 0.1>>} {
  func.func @blocks(%x: tensor<2x8x4xf32>, %p: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x4xf32>) {
    // CHECK: %[[B:.+]] = fsdp.tensor_chunk %{{.+}} dim 1 : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
    // GENERIC: "fsdp.tensor_chunk"(%{{.+}}) <{dim = 1 : i64}> : (tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
    %b = fsdp.tensor_chunk %x dim 1 : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
    // CHECK: fsdp.tensor_reduce_scatter %{{.+}} dim 1 : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
    %s = fsdp.tensor_reduce_scatter %p dim 1 : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
    %r = fsdp.add %b, %s : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x4x4xf32>
    // CHECK: fsdp.tensor_all_gather %{{.+}} dim 1 : tensor<2x4x4xf32> -> tensor<2x8x4xf32>
    %g = fsdp.tensor_all_gather %r dim 1 : tensor<2x4x4xf32> -> tensor<2x8x4xf32>
    // CHECK: fsdp.tensor_unchunk %{{.+}} dim 1 : tensor<2x4x4xf32> -> tensor<2x8x4xf32>
    %w = fsdp.tensor_unchunk %r dim 1 : tensor<2x4x4xf32> -> tensor<2x8x4xf32>
    return %g, %w : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  }
}

// Fewer blocks than tensor ranks: 2 key heads on 4 tensor ranks, each read by 2 ranks.
// CHECK: module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 4, optimizer = #fsdp.sgd<lr = 0.1>>}
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 4, optimizer = #fsdp.sgd<lr = 0.1>>} {
  func.func @shared(%k: tensor<4x2x16x8xf32>) -> tensor<4x2x16x8xf32> {
    // CHECK: %[[K:.+]] = fsdp.tensor_chunk %{{.+}} dim 1 : tensor<4x2x16x8xf32> -> tensor<4x1x16x8xf32>
    %b = fsdp.tensor_chunk %k dim 1 : tensor<4x2x16x8xf32> -> tensor<4x1x16x8xf32>
    // CHECK: fsdp.tensor_unchunk %[[K]] dim 1 : tensor<4x1x16x8xf32> -> tensor<4x2x16x8xf32>
    %w = fsdp.tensor_unchunk %b dim 1 : tensor<4x1x16x8xf32> -> tensor<4x2x16x8xf32>
    return %w : tensor<4x2x16x8xf32>
  }
}

// Vocabulary parallelism on 2 tensor ranks: an embedding and a cross-entropy over each
// rank's block of the 16 rows or classes, and what convert-fsdp-to-runtime lowers them to.
// CHECK: module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>}
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  func.func @vocabulary(%table: tensor<8x4xf32>, %ids: tensor<2x3xi32>, %z: tensor<2x3x8xf32>,
                        %first: tensor<1xi64>, %dl: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
    // CHECK: %[[E:.+]] = fsdp.tensor_embedding %{{.+}}[%{{.+}}] rows 16 : tensor<8x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
    // GENERIC: "fsdp.tensor_embedding"(%{{.+}}, %{{.+}}) <{rows = 16 : i64}> : (tensor<8x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
    %e = fsdp.tensor_embedding %table[%ids] rows 16 : tensor<8x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
    // CHECK: fsdp.tensor_embedding_grad %{{.+}}, %[[E]] rows 16 : tensor<2x3xi32>, tensor<2x3x4xf32> -> tensor<8x4xf32>
    %dt = fsdp.tensor_embedding_grad %ids, %e rows 16 : tensor<2x3xi32>, tensor<2x3x4xf32> -> tensor<8x4xf32>
    // CHECK: fsdp.block_indices %{{.+}}, %{{.+}} size 8 : tensor<2x3xi32>, tensor<1xi64> -> tensor<2x3xi32>
    %local = fsdp.block_indices %ids, %first size 8 : tensor<2x3xi32>, tensor<1xi64> -> tensor<2x3xi32>
    // CHECK: fsdp.tensor_cross_entropy %{{.+}}, %{{.+}} classes 16 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    %l = fsdp.tensor_cross_entropy %z, %ids classes 16 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    // CHECK: fsdp.tensor_cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}} classes 16 : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<f32>
    %dz = fsdp.tensor_cross_entropy_grad %z, %ids, %dl classes 16 : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<f32>
    // CHECK: %[[S:.+]] = fsdp.cross_entropy_stats %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<1xi64> -> tensor<1x3x6xf32>
    %s = fsdp.cross_entropy_stats %z, %ids, %first : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<1xi64> -> tensor<1x3x6xf32>
    %all = fsdp.tensor_all_gather %s dim 0 : tensor<1x3x6xf32> -> tensor<2x3x6xf32>
    // CHECK: fsdp.cross_entropy_combine %{{.+}} : tensor<2x3x6xf32> -> tensor<f32>
    %c = fsdp.cross_entropy_combine %all : tensor<2x3x6xf32> -> tensor<f32>
    // CHECK: fsdp.cross_entropy_block_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<1xi64>, tensor<2x3x6xf32>, tensor<f32>
    %g = fsdp.cross_entropy_block_grad %z, %ids, %first, %all, %dl : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<1xi64>, tensor<2x3x6xf32>, tensor<f32>
    return %l, %c : tensor<f32>, tensor<f32>
  }
}
