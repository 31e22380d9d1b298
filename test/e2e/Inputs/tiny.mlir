// A linear regression: the smallest model fsdpc compiles into a trainer.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w : tensor<3x2xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<4x3xf32>, %t: tensor<4x2xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<3x2xf32>
    %p = fsdp.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
    %l = fsdp.mse %p, %t : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
