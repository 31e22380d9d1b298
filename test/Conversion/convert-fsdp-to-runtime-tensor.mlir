// RUN: fsdp-opt %s -fsdp-form-units -fsdp-split-tensors -fsdp-partition -fsdp-autodiff -fsdp-insert-collectives -convert-fsdp-to-runtime | FileCheck %s

// Tensor-parallel regions lowered (convert-fsdp-to-runtime): fsdp.tensor_copy is the
// value itself, fsdp.tensor_sum an all-reduce (sum, f32) over the tensor group (3),
// waited for before its first reader; the manifest carries the cut parameters'
// split_dim and one block's shape.

// CHECK: #fsdp.manifest_param<name = "w1", shape = [8, 16], split_dim = 1,
// CHECK-SAME: #fsdp.manifest_param<name = "w2", shape = [16, 8], split_dim = 0,
// CHECK-SAME: #fsdp.manifest_param<name = "b2", shape = [8], dtype = f32, unit = "mlp.whole"
// CHECK-NOT: fsdp.tensor_copy
// CHECK: %[[F32:.+]] = arith.constant 0 : i32
// CHECK: %[[SUM:.+]] = arith.constant 0 : i32
// CHECK: %[[TENSOR:.+]] = arith.constant 3 : i32
// CHECK: %[[H:.+]] = call @fsdprt_all_reduce_start(%{{.+}}, %{{.+}}, %[[F32]], %[[SUM]], %[[TENSOR]])
// CHECK: call @fsdprt_wait(%[[H]])
// CHECK-NOT: fsdp.tensor_sum
module attributes {fsdp.plan = #fsdp.plan<grid = [2], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>, clip_grad_norm = 1.0>} {
  fsdp.param @w1 unit "mlp" : tensor<8x32xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w2 unit "mlp" : tensor<32x8xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @b2 unit "mlp" : tensor<8xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
    %w1 = fsdp.use @w1 : tensor<8x32xf32>
    %h = fsdp.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
    %g = fsdp.gelu %h : tensor<4x32xf32>
    %w2 = fsdp.use @w2 : tensor<32x8xf32>
    %p = fsdp.matmul %g, %w2 : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32>
    %b2 = fsdp.use @b2 : tensor<8xf32>
    %pb = fsdp.add %p, %b2 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    %l = fsdp.mse %pb, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
