// RUN: fsdp-opt %s -fsdp-form-units -fsdp-split-tensors -fsdp-partition -fsdp-autodiff -fsdp-insert-collectives -convert-fsdp-to-runtime | FileCheck %s

// A vocabulary-parallel embedding and head on 2 tensor ranks, lowered: each rank holds
// 8 of the 16 rows of the table and of the classes of the head. The embedding reads its
// block followed by a row of zeros (fsdp.slice_grad pads it) at fsdp.block_indices (an
// index outside the block reads the zeros), its first row t * 8 read from a buffer of
// the ranks' firsts at fsdprt_group_rank(3) (the tensor group); the parts are
// all-reduced (32 floats). Its gradient scatters into the padded block through the same
// indices and drops the zero row. The head's first class comes the same way; its
// statistics (3 floats for each of the 4 positions, 48 bytes) are all-gathered over the
// tensor group and combined into the loss. The gradient reads the same first class and
// gathered statistics: no second pass over the logits, no second gather.

// CHECK-LABEL: func.func @fsdp_train_step
// CHECK:       %[[ROW:.+]] = bufferization.to_tensor %{{.+}} : memref<1xi64> to tensor<1xi64>
// CHECK:       %[[LOCAL:.+]] = fsdp.block_indices %{{.+}}, %[[ROW]] size 8 : tensor<4xi32>, tensor<1xi64> -> tensor<4xi32>
// CHECK:       %[[PADDED:.+]] = fsdp.slice_grad %{{.+}} dim 0 offset 0 : tensor<8x8xf32> -> tensor<9x8xf32>
// CHECK:       fsdp.embedding %[[PADDED]][%[[LOCAL]]] : tensor<9x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
// CHECK:       %[[SUM:.+]] = call @fsdprt_all_reduce_start(%{{.+}}, %c32_i64{{.*}}, %c0_i32{{.*}}, %c0_i32{{.*}}, %c3_i32{{.*}})
// CHECK:       call @fsdprt_wait(%[[SUM]])
// CHECK:       %[[Z:.+]] = fsdp.matmul %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK:       %[[FIRSTS:.+]] = memref.alloc() {{.*}} : memref<16xi8>
// CHECK:       %[[ALL:.+]] = memref.view %[[FIRSTS]][%{{.+}}][] : memref<16xi8> to memref<2xi64>
// CHECK:       linalg.generic {{.*}} outs(%[[ALL]] : memref<2xi64>)
// CHECK:         %[[T:.+]] = arith.index_cast %{{.+}} : index to i64
// CHECK:         %[[F:.+]] = arith.muli %[[T]], %c8_i64{{.*}} : i64
// CHECK:         linalg.yield %[[F]] : i64
// CHECK:       %[[R:.+]] = call @fsdprt_group_rank(%c3_i32{{.*}}) : (i32) -> i32
// CHECK:       %[[RI:.+]] = arith.index_cast %[[R]] : i32 to index
// CHECK:       %[[AT:.+]] = arith.muli %[[RI]], %c8{{.*}} : index
// CHECK:       %[[OWN:.+]] = memref.view %[[FIRSTS]][%[[AT]]][] : memref<16xi8> to memref<1xi64>
// CHECK:       %[[FIRST:.+]] = bufferization.to_tensor %[[OWN]]
// CHECK:       %[[STATS:.+]] = fsdp.cross_entropy_stats %[[Z]], %{{.+}}, %[[FIRST]] : tensor<4x8xf32>, tensor<4xi32>, tensor<1xi64> -> tensor<1x3x4xf32>
// CHECK:       bufferization.materialize_in_destination %[[STATS]]
// CHECK:       %[[H:.+]] = call @fsdprt_all_gather_start(%{{.+}}, %{{.+}}, %c48_i64{{.*}}, %c3_i32{{.*}})
// CHECK:       call @fsdprt_wait(%[[H]])
// CHECK:       %[[GATHERED:.+]] = bufferization.to_tensor %{{.+}} : memref<2x3x4xf32> to tensor<2x3x4xf32>
// CHECK:       %[[LOSS:.+]] = fsdp.cross_entropy_combine %[[GATHERED]] : tensor<2x3x4xf32> -> tensor<f32>
// CHECK-NOT:   fsdprt_all_gather_start
// CHECK-NOT:   fsdp.cross_entropy_stats
// CHECK:       %[[DZ:.+]] = fsdp.cross_entropy_block_grad %[[Z]], %{{.+}}, %[[FIRST]], %[[GATHERED]], %{{.+}} : tensor<4x8xf32>, tensor<4xi32>, tensor<1xi64>, tensor<2x3x4xf32>, tensor<f32>
// CHECK:       fsdp.matmul %{{.+}}, %[[DZ]] transpose_lhs
// CHECK:       %[[DX:.+]] = call @fsdprt_all_reduce_start(%{{.+}}, %c32_i64{{.*}}, %c0_i32{{.*}}, %c0_i32{{.*}}, %c3_i32{{.*}})
// CHECK:       call @fsdprt_wait(%[[DX]])
// CHECK-NOT:   fsdp.block_indices
// CHECK:       %[[DT:.+]] = fsdp.embedding_grad %[[LOCAL]], %{{.+}} : tensor<4xi32>, tensor<4x8xf32> -> tensor<9x8xf32>
// CHECK:       fsdp.slice %[[DT]] dim 0 offset 0 size 8 : tensor<9x8xf32> -> tensor<8x8xf32>
// CHECK:       tensor.extract %[[LOSS]][] : tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @e unit "embed" : tensor<16x8xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w unit "head" : tensor<8x16xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%ids: tensor<4xi32>, %y: tensor<4xi32>) -> tensor<f32> {
    %e = fsdp.use @e : tensor<16x8xf32>
    %x = fsdp.embedding %e[%ids] : tensor<16x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
    %w = fsdp.use @w : tensor<8x16xf32>
    %z = fsdp.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
    %l = fsdp.cross_entropy %z, %y : tensor<4x16xf32>, tensor<4xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
