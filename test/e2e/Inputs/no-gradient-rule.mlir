module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w : tensor<4xf32> = #fsdp.ones
  func.func @loss(%t: tensor<4xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<4xf32>
    %d = arith.addf %w, %w : tensor<4xf32>
    %l = fsdp.mse %d, %t : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
