// A 3-layer MLP classifier: 784 -> 256 -> 256 -> 10, ReLU, cross-entropy.
// Each linear layer is one FSDP unit; the plan fully shards them over 2 ranks.
// Shapes are for the global batch of 64 samples.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = full_shard,
                                          optimizer = #fsdp.adamw<lr = 1.0e-3, weight_decay = 0.0>>} {
  fsdp.param @fc1.w unit "fc1" : tensor<784x256xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<256xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<256x256xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc2.b unit "fc2" : tensor<256xf32> = #fsdp.zeros
  fsdp.param @fc3.w unit "fc3" : tensor<256x10xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc3.b unit "fc3" : tensor<10xf32> = #fsdp.zeros

  func.func @loss(%x: tensor<64x784xf32>, %y: tensor<64xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<784x256xf32>
    %b1 = fsdp.use @fc1.b : tensor<256xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<64x784xf32>, tensor<784x256xf32> -> tensor<64x256xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<64x256xf32>, tensor<256xf32> -> tensor<64x256xf32>
    %h1 = fsdp.relu %z1 : tensor<64x256xf32>

    %w2 = fsdp.use @fc2.w : tensor<256x256xf32>
    %b2 = fsdp.use @fc2.b : tensor<256xf32>
    %m2 = fsdp.matmul %h1, %w2 : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
    %z2 = fsdp.add %m2, %b2 : tensor<64x256xf32>, tensor<256xf32> -> tensor<64x256xf32>
    %h2 = fsdp.relu %z2 : tensor<64x256xf32>

    %w3 = fsdp.use @fc3.w : tensor<256x10xf32>
    %b3 = fsdp.use @fc3.b : tensor<10xf32>
    %m3 = fsdp.matmul %h2, %w3 : tensor<64x256xf32>, tensor<256x10xf32> -> tensor<64x10xf32>
    %logits = fsdp.add %m3, %b3 : tensor<64x10xf32>, tensor<10xf32> -> tensor<64x10xf32>

    %l = fsdp.cross_entropy %logits, %y : tensor<64x10xf32>, tensor<64xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
