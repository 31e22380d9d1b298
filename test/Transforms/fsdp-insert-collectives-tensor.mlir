// RUN: fsdp-opt %s -fsdp-form-units -fsdp-split-tensors -fsdp-partition -fsdp-autodiff -fsdp-insert-collectives | FileCheck %s

// The gradient norm with tensor ranks (fsdp-insert-collectives after
// fsdp-split-tensors): each tensor rank holds its block of the cut unit "mlp" and the
// same whole unit "mlp.whole", so the whole unit's squares count 1 / 2 before the
// sums over the shard group and then over the tensor group; every shard is updated
// with the one coefficient.

// CHECK: fsdp.unit @mlp numel 256 shard 128 ranks 2 : f32
// CHECK: fsdp.unit @mlp.whole numel 8 shard 16 ranks 2 : f32
// CHECK: %[[CUT:.+]] = fsdp.reduce_scatter %{{.+}} avg : tensor<256xf32> -> tensor<128xf32>
// CHECK: %[[CUTSQ:.+]] = fsdp.mul %[[CUT]], %[[CUT]]
// CHECK: %[[CUTSUM:.+]] = fsdp.reduce_sum %[[CUTSQ]] dims [0] : tensor<128xf32> -> tensor<f32>
// CHECK: %[[WHOLESUM:.+]] = fsdp.reduce_sum %{{.+}} dims [0] : tensor<16xf32> -> tensor<f32>
// CHECK: %[[HALF:.+]] = fsdp.scale %[[WHOLESUM]] by 0.5 : tensor<f32>
// CHECK: %[[LOCAL:.+]] = fsdp.add %[[CUTSUM]], %[[HALF]]
// CHECK: %[[SHARDS:.+]] = fsdp.all_reduce %[[LOCAL]] sum over shard : tensor<f32>
// CHECK: %[[ALL:.+]] = fsdp.all_reduce %[[SHARDS]] sum over tensor : tensor<f32>
// CHECK: %[[COEFF:.+]] = fsdp.clip_coefficient %[[ALL]] max_norm 1.0
// CHECK: fsdp.update @mlp, %[[CUT]] {{.*}} scaled %[[COEFF]]
// CHECK: fsdp.update @mlp.whole, %{{.+}} scaled %[[COEFF]]
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
