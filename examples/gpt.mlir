// A small decoder-only transformer (GPT-2 style): token and positional embeddings,
// 2 pre-norm blocks of causal multi-head attention (4 heads of 16) and a GELU MLP,
// a final layer norm, an LM head and cross-entropy on next-token targets.
// Attention is fsdp.attention: its tiled lowering never holds a row's scores beyond a
// block of 16 keys (so every row past the 16th crosses a block boundary) and keeps
// only each row's log-sum-exp for backward.
// Sizes: vocabulary 256, context 32, width 64, global batch 8 sequences.
// One FSDP unit per block, plus one for the embeddings and one for the head.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = full_shard,
                                          optimizer = #fsdp.adamw<lr = 3.0e-4, weight_decay = 0.1>,
                                          clip_grad_norm = 1.0>} {
  fsdp.param @wte unit "embed" : tensor<256x64xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @wpe unit "embed" : tensor<32x64xf32> = #fsdp.normal<std = 0.01>

  fsdp.param @h0.ln1.g unit "block0" : tensor<64xf32> = #fsdp.ones
  fsdp.param @h0.ln1.b unit "block0" : tensor<64xf32> = #fsdp.zeros
  fsdp.param @h0.attn.wq unit "block0" : tensor<64x64xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @h0.attn.wk unit "block0" : tensor<64x64xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @h0.attn.wv unit "block0" : tensor<64x64xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @h0.attn.wo unit "block0" : tensor<64x64xf32> = #fsdp.normal<std = 0.01>
  fsdp.param @h0.ln2.g unit "block0" : tensor<64xf32> = #fsdp.ones
  fsdp.param @h0.ln2.b unit "block0" : tensor<64xf32> = #fsdp.zeros
  fsdp.param @h0.mlp.w1 unit "block0" : tensor<64x256xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @h0.mlp.b1 unit "block0" : tensor<256xf32> = #fsdp.zeros
  fsdp.param @h0.mlp.w2 unit "block0" : tensor<256x64xf32> = #fsdp.normal<std = 0.01>
  fsdp.param @h0.mlp.b2 unit "block0" : tensor<64xf32> = #fsdp.zeros

  fsdp.param @h1.ln1.g unit "block1" : tensor<64xf32> = #fsdp.ones
  fsdp.param @h1.ln1.b unit "block1" : tensor<64xf32> = #fsdp.zeros
  fsdp.param @h1.attn.wq unit "block1" : tensor<64x64xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @h1.attn.wk unit "block1" : tensor<64x64xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @h1.attn.wv unit "block1" : tensor<64x64xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @h1.attn.wo unit "block1" : tensor<64x64xf32> = #fsdp.normal<std = 0.01>
  fsdp.param @h1.ln2.g unit "block1" : tensor<64xf32> = #fsdp.ones
  fsdp.param @h1.ln2.b unit "block1" : tensor<64xf32> = #fsdp.zeros
  fsdp.param @h1.mlp.w1 unit "block1" : tensor<64x256xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @h1.mlp.b1 unit "block1" : tensor<256xf32> = #fsdp.zeros
  fsdp.param @h1.mlp.w2 unit "block1" : tensor<256x64xf32> = #fsdp.normal<std = 0.01>
  fsdp.param @h1.mlp.b2 unit "block1" : tensor<64xf32> = #fsdp.zeros

  fsdp.param @lnf.g unit "head" : tensor<64xf32> = #fsdp.ones
  fsdp.param @lnf.b unit "head" : tensor<64xf32> = #fsdp.zeros
  fsdp.param @lm_head unit "head" : tensor<64x256xf32> = #fsdp.normal<std = 0.02>

  func.func @loss(%tokens: tensor<8x32xi32>, %targets: tensor<8x32xi32>) -> tensor<f32> {
    %wte = fsdp.use @wte : tensor<256x64xf32>
    %wpe = fsdp.use @wpe : tensor<32x64xf32>
    %tok = fsdp.embedding %wte[%tokens] : tensor<256x64xf32>, tensor<8x32xi32> -> tensor<8x32x64xf32>
    %x0 = fsdp.add %tok, %wpe : tensor<8x32x64xf32>, tensor<32x64xf32> -> tensor<8x32x64xf32>

    // block 0: x = x + attn(ln1(x)); x = x + mlp(ln2(x))
    %b0_ln1g = fsdp.use @h0.ln1.g : tensor<64xf32>
    %b0_ln1b = fsdp.use @h0.ln1.b : tensor<64xf32>
    %b0_a = fsdp.layer_norm %x0, %b0_ln1g, %b0_ln1b : tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>
    %b0_wq = fsdp.use @h0.attn.wq : tensor<64x64xf32>
    %b0_q = fsdp.matmul %b0_a, %b0_wq : tensor<8x32x64xf32>, tensor<64x64xf32> -> tensor<8x32x64xf32>
    %b0_q4 = fsdp.reshape %b0_q : tensor<8x32x64xf32> -> tensor<8x32x4x16xf32>
    %b0_qh = fsdp.transpose %b0_q4 [0, 2, 1, 3] : tensor<8x32x4x16xf32> -> tensor<8x4x32x16xf32>
    %b0_wk = fsdp.use @h0.attn.wk : tensor<64x64xf32>
    %b0_k = fsdp.matmul %b0_a, %b0_wk : tensor<8x32x64xf32>, tensor<64x64xf32> -> tensor<8x32x64xf32>
    %b0_k4 = fsdp.reshape %b0_k : tensor<8x32x64xf32> -> tensor<8x32x4x16xf32>
    %b0_kh = fsdp.transpose %b0_k4 [0, 2, 1, 3] : tensor<8x32x4x16xf32> -> tensor<8x4x32x16xf32>
    %b0_wv = fsdp.use @h0.attn.wv : tensor<64x64xf32>
    %b0_v = fsdp.matmul %b0_a, %b0_wv : tensor<8x32x64xf32>, tensor<64x64xf32> -> tensor<8x32x64xf32>
    %b0_v4 = fsdp.reshape %b0_v : tensor<8x32x64xf32> -> tensor<8x32x4x16xf32>
    %b0_vh = fsdp.transpose %b0_v4 [0, 2, 1, 3] : tensor<8x32x4x16xf32> -> tensor<8x4x32x16xf32>
    %b0_o, %b0_lse = fsdp.attention %b0_qh, %b0_kh, %b0_vh causal key_block 16 : tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32> -> tensor<8x4x32x16xf32>, tensor<8x4x32xf32>
    %b0_ot = fsdp.transpose %b0_o [0, 2, 1, 3] : tensor<8x4x32x16xf32> -> tensor<8x32x4x16xf32>
    %b0_oc = fsdp.reshape %b0_ot : tensor<8x32x4x16xf32> -> tensor<8x32x64xf32>
    %b0_wo = fsdp.use @h0.attn.wo : tensor<64x64xf32>
    %b0_proj = fsdp.matmul %b0_oc, %b0_wo : tensor<8x32x64xf32>, tensor<64x64xf32> -> tensor<8x32x64xf32>
    %b0_x1 = fsdp.add %x0, %b0_proj : tensor<8x32x64xf32>, tensor<8x32x64xf32> -> tensor<8x32x64xf32>
    %b0_ln2g = fsdp.use @h0.ln2.g : tensor<64xf32>
    %b0_ln2b = fsdp.use @h0.ln2.b : tensor<64xf32>
    %b0_c = fsdp.layer_norm %b0_x1, %b0_ln2g, %b0_ln2b : tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>
    %b0_w1 = fsdp.use @h0.mlp.w1 : tensor<64x256xf32>
    %b0_b1 = fsdp.use @h0.mlp.b1 : tensor<256xf32>
    %b0_f = fsdp.matmul %b0_c, %b0_w1 : tensor<8x32x64xf32>, tensor<64x256xf32> -> tensor<8x32x256xf32>
    %b0_fb = fsdp.add %b0_f, %b0_b1 : tensor<8x32x256xf32>, tensor<256xf32> -> tensor<8x32x256xf32>
    %b0_g = fsdp.gelu %b0_fb : tensor<8x32x256xf32>
    %b0_w2 = fsdp.use @h0.mlp.w2 : tensor<256x64xf32>
    %b0_b2 = fsdp.use @h0.mlp.b2 : tensor<64xf32>
    %b0_d = fsdp.matmul %b0_g, %b0_w2 : tensor<8x32x256xf32>, tensor<256x64xf32> -> tensor<8x32x64xf32>
    %b0_db = fsdp.add %b0_d, %b0_b2 : tensor<8x32x64xf32>, tensor<64xf32> -> tensor<8x32x64xf32>
    %b0_out = fsdp.add %b0_x1, %b0_db : tensor<8x32x64xf32>, tensor<8x32x64xf32> -> tensor<8x32x64xf32>

    // block 1: x = x + attn(ln1(x)); x = x + mlp(ln2(x))
    %b1_ln1g = fsdp.use @h1.ln1.g : tensor<64xf32>
    %b1_ln1b = fsdp.use @h1.ln1.b : tensor<64xf32>
    %b1_a = fsdp.layer_norm %b0_out, %b1_ln1g, %b1_ln1b : tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>
    %b1_wq = fsdp.use @h1.attn.wq : tensor<64x64xf32>
    %b1_q = fsdp.matmul %b1_a, %b1_wq : tensor<8x32x64xf32>, tensor<64x64xf32> -> tensor<8x32x64xf32>
    %b1_q4 = fsdp.reshape %b1_q : tensor<8x32x64xf32> -> tensor<8x32x4x16xf32>
    %b1_qh = fsdp.transpose %b1_q4 [0, 2, 1, 3] : tensor<8x32x4x16xf32> -> tensor<8x4x32x16xf32>
    %b1_wk = fsdp.use @h1.attn.wk : tensor<64x64xf32>
    %b1_k = fsdp.matmul %b1_a, %b1_wk : tensor<8x32x64xf32>, tensor<64x64xf32> -> tensor<8x32x64xf32>
    %b1_k4 = fsdp.reshape %b1_k : tensor<8x32x64xf32> -> tensor<8x32x4x16xf32>
    %b1_kh = fsdp.transpose %b1_k4 [0, 2, 1, 3] : tensor<8x32x4x16xf32> -> tensor<8x4x32x16xf32>
    %b1_wv = fsdp.use @h1.attn.wv : tensor<64x64xf32>
    %b1_v = fsdp.matmul %b1_a, %b1_wv : tensor<8x32x64xf32>, tensor<64x64xf32> -> tensor<8x32x64xf32>
    %b1_v4 = fsdp.reshape %b1_v : tensor<8x32x64xf32> -> tensor<8x32x4x16xf32>
    %b1_vh = fsdp.transpose %b1_v4 [0, 2, 1, 3] : tensor<8x32x4x16xf32> -> tensor<8x4x32x16xf32>
    %b1_o, %b1_lse = fsdp.attention %b1_qh, %b1_kh, %b1_vh causal key_block 16 : tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32> -> tensor<8x4x32x16xf32>, tensor<8x4x32xf32>
    %b1_ot = fsdp.transpose %b1_o [0, 2, 1, 3] : tensor<8x4x32x16xf32> -> tensor<8x32x4x16xf32>
    %b1_oc = fsdp.reshape %b1_ot : tensor<8x32x4x16xf32> -> tensor<8x32x64xf32>
    %b1_wo = fsdp.use @h1.attn.wo : tensor<64x64xf32>
    %b1_proj = fsdp.matmul %b1_oc, %b1_wo : tensor<8x32x64xf32>, tensor<64x64xf32> -> tensor<8x32x64xf32>
    %b1_x1 = fsdp.add %b0_out, %b1_proj : tensor<8x32x64xf32>, tensor<8x32x64xf32> -> tensor<8x32x64xf32>
    %b1_ln2g = fsdp.use @h1.ln2.g : tensor<64xf32>
    %b1_ln2b = fsdp.use @h1.ln2.b : tensor<64xf32>
    %b1_c = fsdp.layer_norm %b1_x1, %b1_ln2g, %b1_ln2b : tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>
    %b1_w1 = fsdp.use @h1.mlp.w1 : tensor<64x256xf32>
    %b1_b1 = fsdp.use @h1.mlp.b1 : tensor<256xf32>
    %b1_f = fsdp.matmul %b1_c, %b1_w1 : tensor<8x32x64xf32>, tensor<64x256xf32> -> tensor<8x32x256xf32>
    %b1_fb = fsdp.add %b1_f, %b1_b1 : tensor<8x32x256xf32>, tensor<256xf32> -> tensor<8x32x256xf32>
    %b1_g = fsdp.gelu %b1_fb : tensor<8x32x256xf32>
    %b1_w2 = fsdp.use @h1.mlp.w2 : tensor<256x64xf32>
    %b1_b2 = fsdp.use @h1.mlp.b2 : tensor<64xf32>
    %b1_d = fsdp.matmul %b1_g, %b1_w2 : tensor<8x32x256xf32>, tensor<256x64xf32> -> tensor<8x32x64xf32>
    %b1_db = fsdp.add %b1_d, %b1_b2 : tensor<8x32x64xf32>, tensor<64xf32> -> tensor<8x32x64xf32>
    %b1_out = fsdp.add %b1_x1, %b1_db : tensor<8x32x64xf32>, tensor<8x32x64xf32> -> tensor<8x32x64xf32>

    %lnfg = fsdp.use @lnf.g : tensor<64xf32>
    %lnfb = fsdp.use @lnf.b : tensor<64xf32>
    %xf = fsdp.layer_norm %b1_out, %lnfg, %lnfb : tensor<8x32x64xf32>, tensor<64xf32>, tensor<64xf32>
    %head = fsdp.use @lm_head : tensor<64x256xf32>
    %logits = fsdp.matmul %xf, %head : tensor<8x32x64xf32>, tensor<64x256xf32> -> tensor<8x32x256xf32>
    %loss = fsdp.cross_entropy %logits, %targets : tensor<8x32x256xf32>, tensor<8x32xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
