// RUN: fsdp-opt %s -fsdp-form-units -fsdp-split-tensors -fsdp-partition -fsdp-autodiff -fsdp-insert-collectives -convert-fsdp-to-runtime | FileCheck %s

// Key and value heads fewer than the tensor ranks (2 on 4), lowered: each rank reads
// head t / 2 of the whole heads every rank computes (fsdp.tensor_chunk: a copy at
// fsdprt_group_rank(3) / 2 blocks of 256 bytes), and their gradient
// (fsdp.tensor_unchunk with fewer blocks than ranks) is an all-reduce over the tensor
// group (3) of the whole heads' 128 elements, each rank's block in its place and zeros
// elsewhere. The block is copied out of a buffer of its own after the zeros are
// written: computed in place into the zeroed buffer, the zeros would overwrite it.

// CHECK-LABEL: func.func @fsdp_train_step
// CHECK:       %[[R:.+]] = call @fsdprt_group_rank(%{{.+}}) : (i32) -> i32
// CHECK:       %[[T:.+]] = arith.index_cast %[[R]] : i32 to index
// CHECK:       %[[HEAD:.+]] = arith.divui %[[T]], %c2{{.*}} : index
// CHECK:       %[[AT:.+]] = arith.muli %[[HEAD]], %c256{{.*}} : index
// CHECK:       memref.view %{{.+}}[%[[AT]]][] : memref<512xi8> to memref<2x1x8x4xf32>
// CHECK:       fsdp.attention_grad
// CHECK:       %[[OWN:.+]] = memref.alloc() {{.*}} : memref<256xi8>
// CHECK:       bufferization.materialize_in_destination %{{.+}} in restrict writable %{{.+}} : (tensor<2x1x8x4xf32>, memref<2x1x8x4xf32>) -> ()
// CHECK:       %[[FULL:.+]] = memref.alloc() {{.*}} : memref<512xi8>
// CHECK:       linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : memref<128xf32>)
// CHECK:       %[[RANK:.+]] = call @fsdprt_group_rank(%{{.+}}) : (i32) -> i32
// CHECK:       arith.divui
// CHECK:       %[[PLACE:.+]] = memref.view %[[FULL]][%{{.+}}][] : memref<512xi8> to memref<2x1x8x4xf32>
// CHECK:       %[[BLOCK:.+]] = memref.view %[[OWN]][%{{.+}}][] : memref<256xi8> to memref<2x1x8x4xf32>
// CHECK:       %[[READ:.+]] = bufferization.to_tensor %[[BLOCK]]
// CHECK:       bufferization.materialize_in_destination %[[READ]] in restrict writable %[[PLACE]]
// CHECK:       %[[H:.+]] = call @fsdprt_all_reduce_start(%{{.+}}, %c128_i64{{.*}}, %c0_i32{{.*}}, %c0_i32{{.*}}, %c3_i32{{.*}})
// CHECK:       call @fsdprt_wait(%[[H]])
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
