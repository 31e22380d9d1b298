module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w : tensor<4x3xf32> = #fsdp.ones
  func.func @loss(%x: tensor<2x5xf32>, %t: tensor<2x3xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<4x3xf32>
    %p = fsdp.matmul %x, %w : tensor<2x5xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
    %l = fsdp.mse %p, %t : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
