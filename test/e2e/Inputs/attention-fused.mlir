// attention.mlir with heads of 8 dimensions (4 query heads on 2 key and value heads,
// causal, a context of 7), the smallest shape cuDNN's fused attention takes: in bf16 the
// CUDA target calls the runtime's fused attention (fsdp-fuse-attention) instead of the
// key-block loops. Used by cuda-kernels-on-cpu.test: the CUDA step with its kernels run
// on the CPU, and the runtime's attention as the CPU runtime's loops, gives the CPU
// target's step, whose attention is the key-block loops.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = full_shard,
                                          optimizer = #fsdp.adamw<lr = 1.0e-2, weight_decay = 0.1>,
                                          clip_grad_norm = 1.0>} {
  fsdp.param @wte unit "embed" : tensor<37x32xf32> = #fsdp.normal<std = 0.3>
  fsdp.param @wq unit "block" : tensor<32x32xf32> = #fsdp.normal<std = 0.3>
  fsdp.param @wk unit "block" : tensor<32x16xf32> = #fsdp.normal<std = 0.3>
  fsdp.param @wv unit "block" : tensor<32x16xf32> = #fsdp.normal<std = 0.3>
  fsdp.param @wo unit "block" : tensor<32x32xf32> = #fsdp.normal<std = 0.3>
  fsdp.param @lm_head unit "head" : tensor<32x37xf32> = #fsdp.normal<std = 0.2>

  func.func @loss(%tokens: tensor<6x7xi32>, %targets: tensor<6x7xi32>) -> tensor<f32> {
    %wte = fsdp.use @wte : tensor<37x32xf32>
    %x = fsdp.embedding %wte[%tokens] : tensor<37x32xf32>, tensor<6x7xi32> -> tensor<6x7x32xf32>
    %wq = fsdp.use @wq : tensor<32x32xf32>
    %wk = fsdp.use @wk : tensor<32x16xf32>
    %wv = fsdp.use @wv : tensor<32x16xf32>
    %q = fsdp.matmul %x, %wq : tensor<6x7x32xf32>, tensor<32x32xf32> -> tensor<6x7x32xf32>
    %k = fsdp.matmul %x, %wk : tensor<6x7x32xf32>, tensor<32x16xf32> -> tensor<6x7x16xf32>
    %v = fsdp.matmul %x, %wv : tensor<6x7x32xf32>, tensor<32x16xf32> -> tensor<6x7x16xf32>
    %q4 = fsdp.reshape %q : tensor<6x7x32xf32> -> tensor<6x7x4x8xf32>
    %k4 = fsdp.reshape %k : tensor<6x7x16xf32> -> tensor<6x7x2x8xf32>
    %v4 = fsdp.reshape %v : tensor<6x7x16xf32> -> tensor<6x7x2x8xf32>
    %qh = fsdp.transpose %q4 [0, 2, 1, 3] : tensor<6x7x4x8xf32> -> tensor<6x4x7x8xf32>
    %kh = fsdp.transpose %k4 [0, 2, 1, 3] : tensor<6x7x2x8xf32> -> tensor<6x2x7x8xf32>
    %vh = fsdp.transpose %v4 [0, 2, 1, 3] : tensor<6x7x2x8xf32> -> tensor<6x2x7x8xf32>
    %o, %lse = fsdp.attention %qh, %kh, %vh causal key_block 4
        : tensor<6x4x7x8xf32>, tensor<6x2x7x8xf32>, tensor<6x2x7x8xf32>
          -> tensor<6x4x7x8xf32>, tensor<6x4x7xf32>
    %ot = fsdp.transpose %o [0, 2, 1, 3] : tensor<6x4x7x8xf32> -> tensor<6x7x4x8xf32>
    %o3 = fsdp.reshape %ot : tensor<6x7x4x8xf32> -> tensor<6x7x32xf32>
    %wo = fsdp.use @wo : tensor<32x32xf32>
    %y = fsdp.matmul %o3, %wo : tensor<6x7x32xf32>, tensor<32x32xf32> -> tensor<6x7x32xf32>
    %h = fsdp.add %x, %y : tensor<6x7x32xf32>, tensor<6x7x32xf32> -> tensor<6x7x32xf32>
    %head = fsdp.use @lm_head : tensor<32x37xf32>
    %logits = fsdp.matmul %h, %head : tensor<6x7x32xf32>, tensor<32x37xf32> -> tensor<6x7x37xf32>
    %l = fsdp.cross_entropy %logits, %targets : tensor<6x7x37xf32>, tensor<6x7xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
