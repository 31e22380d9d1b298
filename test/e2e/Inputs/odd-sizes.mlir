// Every kind of compute op the examples use, at sizes that are not multiples
// of a GPU block (vocabulary 37, context 7, width 13, hidden 29, batch 6):
// partial blocks everywhere. Used by cuda-kernels-on-cpu.test.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = full_shard,
                                          optimizer = #fsdp.adamw<lr = 1.0e-2, weight_decay = 0.1>,
                                          clip_grad_norm = 1.0>} {
  fsdp.param @wte unit "embed" : tensor<37x13xf32> = #fsdp.normal<std = 0.3>
  fsdp.param @wpe unit "embed" : tensor<7x13xf32> = #fsdp.normal<std = 0.1>
  fsdp.param @rms.g unit "block" : tensor<13xf32> = #fsdp.ones
  fsdp.param @wq unit "block" : tensor<13x13xf32> = #fsdp.normal<std = 0.2>
  fsdp.param @wk unit "block" : tensor<13x13xf32> = #fsdp.normal<std = 0.2>
  fsdp.param @wv unit "block" : tensor<13x13xf32> = #fsdp.normal<std = 0.2>
  fsdp.param @ln.g unit "block" : tensor<13xf32> = #fsdp.ones
  fsdp.param @ln.b unit "block" : tensor<13xf32> = #fsdp.zeros
  fsdp.param @w1 unit "block" : tensor<13x29xf32> = #fsdp.fan_in_uniform
  fsdp.param @b1 unit "block" : tensor<29xf32> = #fsdp.zeros
  fsdp.param @w2 unit "block" : tensor<29x13xf32> = #fsdp.fan_in_uniform
  fsdp.param @lm_head unit "head" : tensor<13x37xf32> = #fsdp.normal<std = 0.2>

  func.func @loss(%tokens: tensor<6x7xi32>, %targets: tensor<6x7xi32>) -> tensor<f32> {
    %wte = fsdp.use @wte : tensor<37x13xf32>
    %wpe = fsdp.use @wpe : tensor<7x13xf32>
    %tok = fsdp.embedding %wte[%tokens] : tensor<37x13xf32>, tensor<6x7xi32> -> tensor<6x7x13xf32>
    %x0 = fsdp.add %tok, %wpe : tensor<6x7x13xf32>, tensor<7x13xf32> -> tensor<6x7x13xf32>

    // Attention with one head: scores, causal mask, softmax.
    %g = fsdp.use @rms.g : tensor<13xf32>
    %a = fsdp.rms_norm %x0, %g : tensor<6x7x13xf32>, tensor<13xf32>
    %wq = fsdp.use @wq : tensor<13x13xf32>
    %wk = fsdp.use @wk : tensor<13x13xf32>
    %wv = fsdp.use @wv : tensor<13x13xf32>
    %q = fsdp.matmul %a, %wq : tensor<6x7x13xf32>, tensor<13x13xf32> -> tensor<6x7x13xf32>
    %k = fsdp.matmul %a, %wk : tensor<6x7x13xf32>, tensor<13x13xf32> -> tensor<6x7x13xf32>
    %v = fsdp.matmul %a, %wv : tensor<6x7x13xf32>, tensor<13x13xf32> -> tensor<6x7x13xf32>
    %s = fsdp.batch_matmul %q, %k transpose_rhs : tensor<6x7x13xf32>, tensor<6x7x13xf32> -> tensor<6x7x7xf32>
    %ss = fsdp.scale %s by 0.277 : tensor<6x7x7xf32>
    %m = fsdp.causal_mask %ss : tensor<6x7x7xf32>
    %p = fsdp.softmax %m dim 2 : tensor<6x7x7xf32>
    %o = fsdp.batch_matmul %p, %v : tensor<6x7x7xf32>, tensor<6x7x13xf32> -> tensor<6x7x13xf32>
    %x1 = fsdp.add %x0, %o : tensor<6x7x13xf32>, tensor<6x7x13xf32> -> tensor<6x7x13xf32>

    // MLP with a SiLU-gated tanh, through a transpose and back.
    %lg = fsdp.use @ln.g : tensor<13xf32>
    %lb = fsdp.use @ln.b : tensor<13xf32>
    %n = fsdp.layer_norm %x1, %lg, %lb : tensor<6x7x13xf32>, tensor<13xf32>, tensor<13xf32>
    %w1 = fsdp.use @w1 : tensor<13x29xf32>
    %b1 = fsdp.use @b1 : tensor<29xf32>
    %h = fsdp.matmul %n, %w1 : tensor<6x7x13xf32>, tensor<13x29xf32> -> tensor<6x7x29xf32>
    %hb = fsdp.add %h, %b1 : tensor<6x7x29xf32>, tensor<29xf32> -> tensor<6x7x29xf32>
    %act = fsdp.silu %hb : tensor<6x7x29xf32>
    %t = fsdp.tanh %hb : tensor<6x7x29xf32>
    %gated = fsdp.mul %act, %t : tensor<6x7x29xf32>, tensor<6x7x29xf32> -> tensor<6x7x29xf32>
    %ht = fsdp.transpose %gated [0, 2, 1] : tensor<6x7x29xf32> -> tensor<6x29x7xf32>
    %hback = fsdp.transpose %ht [0, 2, 1] : tensor<6x29x7xf32> -> tensor<6x7x29xf32>
    %w2 = fsdp.use @w2 : tensor<29x13xf32>
    %y = fsdp.matmul %hback, %w2 : tensor<6x7x29xf32>, tensor<29x13xf32> -> tensor<6x7x13xf32>
    %x2 = fsdp.add %x1, %y : tensor<6x7x13xf32>, tensor<6x7x13xf32> -> tensor<6x7x13xf32>

    %head = fsdp.use @lm_head : tensor<13x37xf32>
    %logits = fsdp.matmul %x2, %head : tensor<6x7x13xf32>, tensor<13x37xf32> -> tensor<6x7x37xf32>
    %loss = fsdp.cross_entropy %logits, %targets : tensor<6x7x37xf32>, tensor<6x7xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
