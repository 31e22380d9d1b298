// A language model with rotary position embeddings on its queries (every feature) and
// keys (half of them, with Llama 3's frequency scaling), before a causal fsdp.attention.
// Used by cuda-kernels-on-cpu.test: fsdp.rope's kernels (the halves of the features as
// pairs, the angles computed in the kernel, a slice of the features on the keys) and
// their inverse in backward, run on the CPU, give the CPU target's step.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = full_shard,
                                          optimizer = #fsdp.adamw<lr = 1.0e-2, weight_decay = 0.1>,
                                          clip_grad_norm = 1.0>} {
  fsdp.param @wte unit "embed" : tensor<37x8xf32> = #fsdp.normal<std = 0.3>
  fsdp.param @wq unit "block" : tensor<8x8xf32> = #fsdp.normal<std = 0.3>
  fsdp.param @wk unit "block" : tensor<8x8xf32> = #fsdp.normal<std = 0.3>
  fsdp.param @wv unit "block" : tensor<8x8xf32> = #fsdp.normal<std = 0.3>
  fsdp.param @lm_head unit "head" : tensor<8x37xf32> = #fsdp.normal<std = 0.2>

  func.func @loss(%tokens: tensor<6x7xi32>, %targets: tensor<6x7xi32>) -> tensor<f32> {
    %wte = fsdp.use @wte : tensor<37x8xf32>
    %x = fsdp.embedding %wte[%tokens] : tensor<37x8xf32>, tensor<6x7xi32> -> tensor<6x7x8xf32>
    %wq = fsdp.use @wq : tensor<8x8xf32>
    %wk = fsdp.use @wk : tensor<8x8xf32>
    %wv = fsdp.use @wv : tensor<8x8xf32>
    %q = fsdp.matmul %x, %wq : tensor<6x7x8xf32>, tensor<8x8xf32> -> tensor<6x7x8xf32>
    %k = fsdp.matmul %x, %wk : tensor<6x7x8xf32>, tensor<8x8xf32> -> tensor<6x7x8xf32>
    %v = fsdp.matmul %x, %wv : tensor<6x7x8xf32>, tensor<8x8xf32> -> tensor<6x7x8xf32>
    %q4 = fsdp.reshape %q : tensor<6x7x8xf32> -> tensor<6x7x2x4xf32>
    %k4 = fsdp.reshape %k : tensor<6x7x8xf32> -> tensor<6x7x2x4xf32>
    %v4 = fsdp.reshape %v : tensor<6x7x8xf32> -> tensor<6x7x2x4xf32>
    %qr = fsdp.rope %q4 positions 1 theta 10000.0 : tensor<6x7x2x4xf32>
    %kr = fsdp.rope %k4 positions 1 theta 50.0 rotary_dim 2
        llama3_scaling <factor = 4.0, low_freq_factor = 1.0, high_freq_factor = 4.0,
                                  original_max_positions = 16> : tensor<6x7x2x4xf32>
    %qh = fsdp.transpose %qr [0, 2, 1, 3] : tensor<6x7x2x4xf32> -> tensor<6x2x7x4xf32>
    %kh = fsdp.transpose %kr [0, 2, 1, 3] : tensor<6x7x2x4xf32> -> tensor<6x2x7x4xf32>
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
