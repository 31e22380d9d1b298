// RUN: fsdp-opt %s -fsdp-form-units -fsdp-split-tensors -fsdp-partition -fsdp-split-sequence -fsdp-autodiff -fsdp-insert-collectives -convert-fsdp-to-runtime | FileCheck %s

// Sequence blocks lowered (convert-fsdp-to-runtime). Three sequences of 8 tokens
// on 2 tensor ranks: the ranks do not divide the rows, so they hold blocks of the
// sequence, 4 tokens of each row, which are not contiguous. The runtime's
// collectives move contiguous blocks: a value is laid out rank-major first
// ([3, 8, 8] -> [3, 2, 4, 8] -> [2, 3, 4, 8]) and put back in place after a
// gather. fsdp.tensor_chunk takes the block at the rank's index in the tensor
// group (fsdprt_group_rank), fsdp.tensor_reduce_scatter is a reduce-scatter (sum,
// f32), fsdp.tensor_unchunk and fsdp.tensor_all_gather all-gathers, all over the
// tensor group (3). A gathered buffer is read only after its wait (a reader made
// before it, such as a bf16 product's operand widened where its value is made,
// read it before the gather completed).

// CHECK-LABEL: func.func @fsdp_train_step
// CHECK: %[[ROWS:.+]] = fsdp.reshape %{{.+}} : tensor<3x8x8xf32> -> tensor<3x2x4x8xf32>
// CHECK: fsdp.transpose %[[ROWS]] [1, 0, 2, 3] : tensor<3x2x4x8xf32> -> tensor<2x3x4x8xf32>
// CHECK: %[[TENSOR:.+]] = arith.constant 3 : i32
// CHECK: %[[RANK:.+]] = call @fsdprt_group_rank(%[[TENSOR]]) : (i32) -> i32
// CHECK: %[[INDEX:.+]] = arith.index_cast %[[RANK]] : i32 to index
// CHECK: %[[OFFSET:.+]] = arith.muli %[[INDEX]], %c384 : index
// CHECK: memref.view %{{.+}}[%[[OFFSET]]][] : memref<768xi8> to memref<3x4x8xf32>
// CHECK: call @fsdprt_reduce_scatter_start(%{{.+}}, %{{.+}}, %c96_i64, %c0_i32{{.*}}, %c0_i32{{.*}}, %c3_i32{{.*}})
// CHECK: %[[H:.+]] = call @fsdprt_all_gather_start(%{{.+}}, %{{.+}}, %c384_i64, %c3_i32{{.*}})
// CHECK: call @fsdprt_wait(%[[H]])
// CHECK: %[[BLOCKS:.+]] = bufferization.to_tensor %{{.+}} restrict : memref<2x3x4x8xf32>
// CHECK: %[[BACK:.+]] = fsdp.transpose %[[BLOCKS]] [1, 0, 2, 3] : tensor<2x3x4x8xf32> -> tensor<3x2x4x8xf32>
// CHECK: fsdp.reshape %[[BACK]] : tensor<3x2x4x8xf32> -> tensor<3x8x8xf32>
// CHECK-NOT: fsdp.tensor_
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, sequence_parallel = true, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w1 unit "mlp" : tensor<8x32xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w2 unit "mlp" : tensor<32x8xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%x: tensor<3x8x8xf32>, %y: tensor<3x8x8xf32>) -> tensor<f32> {
    %w1 = fsdp.use @w1 : tensor<8x32xf32>
    %h = fsdp.matmul %x, %w1 : tensor<3x8x8xf32>, tensor<8x32xf32> -> tensor<3x8x32xf32>
    %g = fsdp.gelu %h : tensor<3x8x32xf32>
    %w2 = fsdp.use @w2 : tensor<32x8xf32>
    %p = fsdp.matmul %g, %w2 : tensor<3x8x32xf32>, tensor<32x8xf32> -> tensor<3x8x8xf32>
    %r = fsdp.add %x, %p : tensor<3x8x8xf32>, tensor<3x8x8xf32> -> tensor<3x8x8xf32>
    %l = fsdp.mse %r, %y : tensor<3x8x8xf32>, tensor<3x8x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
