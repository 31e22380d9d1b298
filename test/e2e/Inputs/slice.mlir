// A language model laid out as GPT-2 is: learned positions for more positions than
// the sequence has (the first 7 of 9 rows taken), one fused query-key-value product
// with its bias, split into three by fsdp.slice, before a causal fsdp.attention.
// Used by cuda-kernels-on-cpu.test: fsdp.slice's gathers and its gradient's
// placement in zeros (the three gradients of the fused product meeting in one
// tensor, the positions' rows past the sequence left at zero) run on the CPU from
// the CUDA target's kernels and give the CPU target's step.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = full_shard,
                                          optimizer = #fsdp.adamw<lr = 1.0e-2, weight_decay = 0.1>,
                                          clip_grad_norm = 1.0>} {
  fsdp.param @wte unit "embed" : tensor<37x8xf32> = #fsdp.normal<std = 0.3>
  fsdp.param @wpe unit "embed" : tensor<9x8xf32> = #fsdp.normal<std = 0.3>
  fsdp.param @c_attn.weight unit "block" : tensor<8x24xf32> = #fsdp.normal<std = 0.3>
  fsdp.param @c_attn.bias unit "block" : tensor<24xf32> = #fsdp.normal<std = 0.1>
  fsdp.param @lm_head unit "head" : tensor<8x37xf32> = #fsdp.normal<std = 0.2>

  func.func @loss(%tokens: tensor<6x7xi32>, %targets: tensor<6x7xi32>) -> tensor<f32> {
    %wte = fsdp.use @wte : tensor<37x8xf32>
    %tok = fsdp.embedding %wte[%tokens] : tensor<37x8xf32>, tensor<6x7xi32> -> tensor<6x7x8xf32>
    %wpe = fsdp.use @wpe : tensor<9x8xf32>
    %pos = fsdp.slice %wpe dim 0 offset 0 size 7 : tensor<9x8xf32> -> tensor<7x8xf32>
    %x = fsdp.add %tok, %pos : tensor<6x7x8xf32>, tensor<7x8xf32> -> tensor<6x7x8xf32>
    %w = fsdp.use @c_attn.weight : tensor<8x24xf32>
    %b = fsdp.use @c_attn.bias : tensor<24xf32>
    %qkv0 = fsdp.matmul %x, %w : tensor<6x7x8xf32>, tensor<8x24xf32> -> tensor<6x7x24xf32>
    %qkv = fsdp.add %qkv0, %b : tensor<6x7x24xf32>, tensor<24xf32> -> tensor<6x7x24xf32>
    %q = fsdp.slice %qkv dim 2 offset 0 size 8 : tensor<6x7x24xf32> -> tensor<6x7x8xf32>
    %k = fsdp.slice %qkv dim 2 offset 8 size 8 : tensor<6x7x24xf32> -> tensor<6x7x8xf32>
    %v = fsdp.slice %qkv dim 2 offset 16 size 8 : tensor<6x7x24xf32> -> tensor<6x7x8xf32>
    %q4 = fsdp.reshape %q : tensor<6x7x8xf32> -> tensor<6x7x2x4xf32>
    %k4 = fsdp.reshape %k : tensor<6x7x8xf32> -> tensor<6x7x2x4xf32>
    %v4 = fsdp.reshape %v : tensor<6x7x8xf32> -> tensor<6x7x2x4xf32>
    %qh = fsdp.transpose %q4 [0, 2, 1, 3] : tensor<6x7x2x4xf32> -> tensor<6x2x7x4xf32>
    %kh = fsdp.transpose %k4 [0, 2, 1, 3] : tensor<6x7x2x4xf32> -> tensor<6x2x7x4xf32>
    %vh = fsdp.transpose %v4 [0, 2, 1, 3] : tensor<6x7x2x4xf32> -> tensor<6x2x7x4xf32>
    %o, %lse = fsdp.attention %qh, %kh, %vh causal
        : tensor<6x2x7x4xf32>, tensor<6x2x7x4xf32>, tensor<6x2x7x4xf32>
          -> tensor<6x2x7x4xf32>, tensor<6x2x7xf32>
    %ot = fsdp.transpose %o [0, 2, 1, 3] : tensor<6x2x7x4xf32> -> tensor<6x7x2x4xf32>
    %o3 = fsdp.reshape %ot : tensor<6x7x2x4xf32> -> tensor<6x7x8xf32>
    %h = fsdp.add %x, %o3 : tensor<6x7x8xf32>, tensor<6x7x8xf32> -> tensor<6x7x8xf32>
    %head = fsdp.use @lm_head : tensor<8x37xf32>
    %logits = fsdp.matmul %h, %head : tensor<6x7x8xf32>, tensor<8x37xf32> -> tensor<6x7x37xf32>
    %l = fsdp.cross_entropy %logits, %targets : tensor<6x7x37xf32>, tensor<6x7xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
