// Every fsdp op and attribute parses, verifies and prints; the printed form
// parses back to itself (print | parse | print is stable).
// RUN: fsdp-opt %s | FileCheck %s
// RUN: fsdp-opt %s | fsdp-opt | FileCheck %s
// RUN: fsdp-opt %s -mlir-print-op-generic | fsdp-opt | FileCheck %s

// CHECK-LABEL: module attributes
// CHECK-SAME: fsdp.plan = #fsdp.plan<grid = [2, 4], strategy = hybrid_shard, optimizer = #fsdp.sgd<lr = 0.1, momentum = 0.9, weight_decay = 0.0001>, param_dtype = bf16, reduce_dtype = bf16, clip_grad_norm = 1.0, prefetch = 2, max_inflight_gathers = 3, remat = unit, remat_units = ["a", "b"], micro_batches = 4, accumulate = no_sync, units = auto_wrap, min_unit_params = 1000, device_memory = "79.5GiB", offload = optimizer, allow_tf32 = true, approximate_math = true>
module attributes {fsdp.plan = #fsdp.plan<min_unit_params = 1000, units = auto_wrap,
    grid = [2, 4], strategy = hybrid_shard, remat = unit, remat_units = ["a", "b"],
    optimizer = #fsdp.sgd<lr = 0.1, momentum = 0.9, weight_decay = 1.0e-4>,
    param_dtype = bf16, reduce_dtype = bf16, clip_grad_norm = 1.0, prefetch = 2,
    max_inflight_gathers = 3, accumulate = no_sync, micro_batches = 4,
    device_memory = "79.5GiB", approximate_math = true, offload = optimizer,
    allow_tf32 = true>} {

  // CHECK: fsdp.param @zeros unit "a" : tensor<8xf32> = #fsdp.zeros
  fsdp.param @zeros unit "a" : tensor<8xf32> = #fsdp.zeros
  // CHECK: fsdp.param @ones : tensor<8xbf16> = #fsdp.ones
  fsdp.param @ones : tensor<8xbf16> = #fsdp.ones
  // CHECK: fsdp.param @const : tensor<2x3xf32> = #fsdp.constant<-0.25>
  fsdp.param @const : tensor<2x3xf32> = #fsdp.constant<-0.25>
  // CHECK: fsdp.param @normal : tensor<4x4xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @normal : tensor<4x4xf32> = #fsdp.normal<std = 0.02>
  // CHECK: fsdp.param @normal.mean : tensor<4xf32> = #fsdp.normal<mean = 1.0, std = 0.1>
  fsdp.param @normal.mean : tensor<4xf32> = #fsdp.normal<std = 0.1, mean = 1.0>
  // CHECK: fsdp.param @uniform : tensor<4xf32> = #fsdp.uniform<low = -0.1, high = 0.1>
  fsdp.param @uniform : tensor<4xf32> = #fsdp.uniform<low = -0.1, high = 0.1>
  // CHECK: fsdp.param @fan.normal : tensor<16x8xf32> = #fsdp.fan_in_normal<scale = 1.4142>
  fsdp.param @fan.normal : tensor<16x8xf32> = #fsdp.fan_in_normal<scale = 1.4142>
  // CHECK: fsdp.param @fan.normal.default : tensor<16x8xf32> = #fsdp.fan_in_normal{{$}}
  fsdp.param @fan.normal.default : tensor<16x8xf32> = #fsdp.fan_in_normal<scale = 1.0>
  // CHECK: fsdp.param @fan.uniform : tensor<2x16x8xf32> = #fsdp.fan_in_uniform{{$}}
  fsdp.param @fan.uniform : tensor<2x16x8xf32> = #fsdp.fan_in_uniform
  // CHECK: fsdp.param frozen @frozen unit "b" : tensor<3xf32> = #fsdp.ones
  fsdp.param frozen @frozen unit "b" : tensor<3xf32> = #fsdp.ones
  // CHECK: fsdp.param @with.adamw : tensor<1xf32> = #fsdp.zeros {note = #fsdp.adamw<lr = 0.0003, beta2 = 0.95, eps = 1.0e-06, weight_decay = 0.1>}
  fsdp.param @with.adamw : tensor<1xf32> = #fsdp.zeros {note = #fsdp.adamw<lr = 3.0e-4, beta2 = 0.95, eps = 1.0e-6, weight_decay = 0.1>}
  // CHECK: fsdp.param @adamw.defaults : tensor<1xf32> = #fsdp.zeros {note = #fsdp.adamw<lr = 0.001>}
  fsdp.param @adamw.defaults : tensor<1xf32> = #fsdp.zeros {note = #fsdp.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01>}

  // CHECK-LABEL: func.func @ops
  func.func @ops(%x: tensor<2x8x16xf32>, %m: tensor<8x16xf32>, %ids: tensor<2x8xi32>,
                 %ids64: tensor<2x8xi64>, %q: tensor<2x4x8x4xf32>,
                 %kv: tensor<2x2x5x4xf32>) -> tensor<f32> {
    // CHECK: %[[W:.+]] = fsdp.use @fan.normal : tensor<16x8xf32>
    %w = fsdp.use @fan.normal : tensor<16x8xf32>
    // CHECK: fsdp.matmul %{{.+}}, %[[W]] : tensor<2x8x16xf32>, tensor<16x8xf32> -> tensor<2x8x8xf32>
    %mm = fsdp.matmul %x, %w : tensor<2x8x16xf32>, tensor<16x8xf32> -> tensor<2x8x8xf32>
    // CHECK: fsdp.matmul %[[W]], %{{.+}} transpose_lhs transpose_rhs : tensor<16x8xf32>, tensor<8x16xf32> -> tensor<8x8xf32>
    %mt = fsdp.matmul %w, %m transpose_lhs transpose_rhs : tensor<16x8xf32>, tensor<8x16xf32> -> tensor<8x8xf32>
    // CHECK: fsdp.matmul %{{.+}}, %{{.+}} transpose_rhs : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x8xf32>
    %mr = fsdp.matmul %m, %m transpose_rhs : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x8xf32>
    // CHECK: fsdp.batch_matmul %{{.+}}, %{{.+}} transpose_rhs : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x8xf32>
    %s = fsdp.batch_matmul %q, %q transpose_rhs : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x8xf32>
    // CHECK: fsdp.batch_matmul %{{.+}}, %{{.+}} transpose_lhs : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x4x4xf32>
    %g = fsdp.batch_matmul %q, %q transpose_lhs : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x4x4xf32>

    // CHECK: fsdp.add %{{.+}}, %{{.+}} : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x16xf32>
    %a = fsdp.add %x, %m : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x16xf32>
    // CHECK: fsdp.sub %{{.+}}, %{{.+}} : tensor<8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
    %b = fsdp.sub %m, %a : tensor<8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
    // CHECK: fsdp.mul %{{.+}}, %{{.+}} : tensor<2x8x1xf32>, tensor<1x16xf32> -> tensor<2x8x16xf32>
    %c0 = fsdp.reshape %mm : tensor<2x8x8xf32> -> tensor<2x8x1x8xf32>
    %c1 = fsdp.reduce_sum %c0 dims [3] : tensor<2x8x1x8xf32> -> tensor<2x8x1xf32>
    %c2 = fsdp.reduce_mean %m dims [0] : tensor<8x16xf32> -> tensor<16xf32>
    %c3 = fsdp.reshape %c2 : tensor<16xf32> -> tensor<1x16xf32>
    %c = fsdp.mul %c1, %c3 : tensor<2x8x1xf32>, tensor<1x16xf32> -> tensor<2x8x16xf32>
    // CHECK: fsdp.div %{{.+}}, %{{.+}} : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
    %d = fsdp.div %c, %b : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>

    // CHECK: fsdp.scale %{{.+}} by 0.125 : tensor<2x8x16xf32>
    %e = fsdp.scale %d by 0.125 : tensor<2x8x16xf32>
    // CHECK: fsdp.convert %{{.+}} : tensor<2x8x16xf32> -> tensor<2x8x16xbf16>
    %eh = fsdp.convert %e : tensor<2x8x16xf32> -> tensor<2x8x16xbf16>
    // CHECK: fsdp.relu %{{.+}} : tensor<2x8x16xf32>
    %u0 = fsdp.relu %e : tensor<2x8x16xf32>
    // CHECK: fsdp.gelu
    %u1 = fsdp.gelu %u0 : tensor<2x8x16xf32>
    // CHECK: fsdp.silu
    %u2 = fsdp.silu %u1 : tensor<2x8x16xf32>
    // CHECK: fsdp.tanh
    %u3 = fsdp.tanh %u2 : tensor<2x8x16xf32>
    // CHECK: fsdp.exp
    %u4 = fsdp.exp %u3 : tensor<2x8x16xf32>

    // CHECK: fsdp.softmax %{{.+}} dim 2 : tensor<2x8x16xf32>
    %sm = fsdp.softmax %u4 dim 2 : tensor<2x8x16xf32>
    %gamma = fsdp.use @normal.mean : tensor<4xf32>
    %beta = fsdp.use @uniform : tensor<4xf32>
    // CHECK: fsdp.layer_norm %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x4x8x4xf32>, tensor<4xf32>, tensor<4xf32>
    %ln = fsdp.layer_norm %q, %gamma, %beta : tensor<2x4x8x4xf32>, tensor<4xf32>, tensor<4xf32>
    // CHECK: fsdp.layer_norm %{{.+}}, %{{.+}}, %{{.+}} eps 1.0e-06 : tensor<2x4x8x4xf32>, tensor<4xf32>, tensor<4xf32>
    %ln2 = fsdp.layer_norm %ln, %gamma, %beta eps 1.0e-6 : tensor<2x4x8x4xf32>, tensor<4xf32>, tensor<4xf32>
    // CHECK: fsdp.rms_norm %{{.+}}, %{{.+}} : tensor<2x4x8x4xf32>, tensor<4xf32>
    %rn = fsdp.rms_norm %ln2, %gamma : tensor<2x4x8x4xf32>, tensor<4xf32>
    // CHECK: fsdp.rms_norm %{{.+}}, %{{.+}} eps 1.0e-06 : tensor<2x4x8x4xf32>, tensor<4xf32>
    %rn2 = fsdp.rms_norm %rn, %gamma eps 1.0e-6 : tensor<2x4x8x4xf32>, tensor<4xf32>
    // CHECK: fsdp.causal_mask %{{.+}} : tensor<2x4x8x8xf32>
    %cm = fsdp.causal_mask %s : tensor<2x4x8x8xf32>
    // CHECK: fsdp.slice %{{.+}} dim 3 offset 1 size 2 : tensor<2x4x8x4xf32> -> tensor<2x4x8x2xf32>
    %sl = fsdp.slice %q dim 3 offset 1 size 2 : tensor<2x4x8x4xf32> -> tensor<2x4x8x2xf32>
    // CHECK: fsdp.slice_grad %{{.+}} dim 3 offset 1 : tensor<2x4x8x2xf32> -> tensor<2x4x8x4xf32>
    %slg = fsdp.slice_grad %sl dim 3 offset 1 : tensor<2x4x8x2xf32> -> tensor<2x4x8x4xf32>
    // CHECK: fsdp.rope %{{.+}} positions 2 theta 1.0e+04 : tensor<2x4x8x4xf32>
    %rq = fsdp.rope %q positions 2 theta 10000.0 : tensor<2x4x8x4xf32>
    // CHECK: fsdp.rope %{{.+}} positions 1 theta 5.0e+05 rotary_dim 2 llama3_scaling <factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_positions = 8192> inverse : tensor<2x4x8x4xf32>
    %rk = fsdp.rope %rq positions 1 theta 500000.0 rotary_dim 2 llama3_scaling <factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_positions = 8192> inverse : tensor<2x4x8x4xf32>
    // CHECK: fsdp.rope %{{.+}} positions 1 theta 1.0e+06 yarn_scaling <factor = 4.0, beta_fast = 32.0, beta_slow = 1.0, original_max_positions = 32768, attention_factor = 1.138629436111989, truncate = true> : tensor<2x4x8x4xf32>
    %ry = fsdp.rope %rk positions 1 theta 1000000.0 yarn_scaling <factor = 4.0, beta_fast = 32.0, beta_slow = 1.0, original_max_positions = 32768, attention_factor = 1.138629436111989, truncate = true> : tensor<2x4x8x4xf32>
    // CHECK: fsdp.rope %{{.+}} positions 1 theta 1.0e+06 linear_scaling 8.0 : tensor<2x4x8x4xf32>
    %rl = fsdp.rope %ry positions 1 theta 1000000.0 linear_scaling 8.0 : tensor<2x4x8x4xf32>
    // CHECK: %{{.+}}, %{{.+}} = fsdp.attention %{{.+}}, %{{.+}}, %{{.+}} causal : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>, tensor<2x4x8xf32>
    %att, %lse = fsdp.attention %q, %q, %q causal : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>, tensor<2x4x8xf32>
    // CHECK: fsdp.attention %{{.+}}, %{{.+}}, %{{.+}} scale 0.25 key_block 64 : tensor<2x4x8x4xf32>, tensor<2x2x5x4xf32>, tensor<2x2x5x4xf32> -> tensor<2x4x8x4xf32>, tensor<2x4x8xf32>
    %gqa, %lse2 = fsdp.attention %q, %kv, %kv scale 0.25 key_block 64 : tensor<2x4x8x4xf32>, tensor<2x2x5x4xf32>, tensor<2x2x5x4xf32> -> tensor<2x4x8x4xf32>, tensor<2x4x8xf32>
    // CHECK: fsdp.attention %{{.+}}, %{{.+}}, %{{.+}} causal window 3 scale 0.25 : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>, tensor<2x4x8xf32>
    %win, %lse3 = fsdp.attention %q, %q, %q causal window 3 scale 0.25 : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>, tensor<2x4x8xf32>
    // CHECK: fsdp.attention %{{.+}}, %{{.+}}, %{{.+}} causal window 3 softcap 5.0e+01 key_block 4 : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>, tensor<2x4x8xf32>
    %cap, %lse4 = fsdp.attention %q, %q, %q causal window 3 softcap 50.0 key_block 4 : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>, tensor<2x4x8xf32>

    %table = fsdp.use @normal : tensor<4x4xf32>
    // CHECK: fsdp.embedding %{{.+}}[%{{.+}}] : tensor<4x4xf32>, tensor<2x8xi32> -> tensor<2x8x4xf32>
    %emb = fsdp.embedding %table[%ids] : tensor<4x4xf32>, tensor<2x8xi32> -> tensor<2x8x4xf32>
    // CHECK: fsdp.embedding %{{.+}}[%{{.+}}] : tensor<4x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    %emb64 = fsdp.embedding %table[%ids64] : tensor<4x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
    // CHECK: fsdp.reshape %{{.+}} : tensor<2x8x16xf32> -> tensor<256xf32>
    %flat = fsdp.reshape %sm : tensor<2x8x16xf32> -> tensor<256xf32>
    // CHECK: fsdp.transpose %{{.+}} [0, 2, 1, 3] : tensor<2x4x8x4xf32> -> tensor<2x8x4x4xf32>
    %tr = fsdp.transpose %rn2 [0, 2, 1, 3] : tensor<2x4x8x4xf32> -> tensor<2x8x4x4xf32>
    // CHECK: fsdp.reduce_sum %{{.+}} dims [0, 1, 2, 3] : tensor<2x4x8x8xf32> -> tensor<f32>
    %all = fsdp.reduce_sum %cm dims [0, 1, 2, 3] : tensor<2x4x8x8xf32> -> tensor<f32>
    // CHECK: fsdp.reduce_mean %{{.+}} dims [1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4xf32>
    %rm = fsdp.reduce_mean %tr dims [1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4xf32>

    // CHECK: fsdp.cross_entropy %{{.+}}, %{{.+}} : tensor<2x8x4xf32>, tensor<2x8xi32> -> tensor<f32>
    %ce = fsdp.cross_entropy %emb, %ids : tensor<2x8x4xf32>, tensor<2x8xi32> -> tensor<f32>
    // CHECK: fsdp.mse %{{.+}}, %{{.+}} : tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<f32>
    %mse = fsdp.mse %emb, %emb64 : tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<f32>
    %sum = fsdp.add %ce, %mse : tensor<f32>, tensor<f32> -> tensor<f32>
    %tot = fsdp.add %sum, %all : tensor<f32>, tensor<f32> -> tensor<f32>
    return %tot : tensor<f32>
  }

  // Backward-pass and optimizer ops, as fsdp-autodiff emits them.
  // CHECK-LABEL: func.func @gradients
  func.func @gradients(%x: tensor<2x4x8xf32>, %dy: tensor<2x4x8xf32>, %g: tensor<8xf32>,
                       %s: tensor<2x3x4x4xf32>, %ids: tensor<2x4xi32>, %dl: tensor<f32>,
                       %step: i64, %lr: f32, %aq: tensor<2x4x8x4xf32>, %akv: tensor<2x2x8x4xf32>,
                       %alse: tensor<2x4x8xf32>) {
    // CHECK: %{{.+}}, %{{.+}}, %{{.+}} = fsdp.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} causal key_block 4 : tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x4x8xf32>
    %adq, %adk, %adv = fsdp.attention_grad %aq, %akv, %akv, %aq, %alse, %aq, %alse causal key_block 4 : tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x4x8xf32>
    // CHECK: fsdp.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} causal window 5 key_block 4 : tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x4x8xf32>
    %wdq, %wdk, %wdv = fsdp.attention_grad %aq, %akv, %akv, %aq, %alse, %aq, %alse causal window 5 key_block 4 : tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x4x8xf32>
    // CHECK: fsdp.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} causal scale 0.5 softcap 3.0e+01 : tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x4x8xf32>
    %cdq, %cdk, %cdv = fsdp.attention_grad %aq, %akv, %akv, %aq, %alse, %aq, %alse causal scale 0.5 softcap 30.0 : tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x4x8xf32>
    // CHECK: fsdp.broadcast %{{.+}} : tensor<8xf32> -> tensor<2x4x8xf32>
    %b = fsdp.broadcast %g : tensor<8xf32> -> tensor<2x4x8xf32>
    // CHECK: fsdp.relu_grad %{{.+}}, %{{.+}} : tensor<2x4x8xf32>
    %r = fsdp.relu_grad %x, %dy : tensor<2x4x8xf32>
    // CHECK: fsdp.gelu_grad %{{.+}}, %{{.+}} : tensor<2x4x8xf32>
    %ge = fsdp.gelu_grad %x, %dy : tensor<2x4x8xf32>
    // CHECK: fsdp.silu_grad %{{.+}}, %{{.+}} : tensor<2x4x8xf32>
    %si = fsdp.silu_grad %x, %dy : tensor<2x4x8xf32>
    // CHECK: fsdp.softmax_grad %{{.+}}, %{{.+}} dim 3 : tensor<2x3x4x4xf32>
    %sg = fsdp.softmax_grad %s, %s dim 3 : tensor<2x3x4x4xf32>
    // CHECK: fsdp.causal_mask_grad %{{.+}} : tensor<2x3x4x4xf32>
    %cg = fsdp.causal_mask_grad %s : tensor<2x3x4x4xf32>
    // CHECK: %{{.+}}, %{{.+}}, %{{.+}} = fsdp.layer_norm_grad %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x4x8xf32>, tensor<8xf32>
    %dx, %dgam, %dbet = fsdp.layer_norm_grad %x, %g, %dy : tensor<2x4x8xf32>, tensor<8xf32>
    // CHECK: fsdp.layer_norm_grad %{{.+}}, %{{.+}}, %{{.+}} eps 1.0e-06 : tensor<2x4x8xf32>, tensor<8xf32>
    %dx2, %dgam2, %dbet2 = fsdp.layer_norm_grad %x, %g, %dy eps 1.0e-6 : tensor<2x4x8xf32>, tensor<8xf32>
    // CHECK: %{{.+}}, %{{.+}} = fsdp.rms_norm_grad %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x4x8xf32>, tensor<8xf32>
    %rx, %rg = fsdp.rms_norm_grad %x, %g, %dy : tensor<2x4x8xf32>, tensor<8xf32>
    // CHECK: fsdp.embedding_grad %{{.+}}, %{{.+}} : tensor<2x4xi32>, tensor<2x4x8xf32> -> tensor<16x8xf32>
    %eg = fsdp.embedding_grad %ids, %dy : tensor<2x4xi32>, tensor<2x4x8xf32> -> tensor<16x8xf32>
    // CHECK: fsdp.cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32>
    %ce = fsdp.cross_entropy_grad %x, %ids, %dl : tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<f32>
    // CHECK: %[[C:.+]] = fsdp.clip_coefficient %{{.+}} max_norm 1.0 : tensor<f32>
    %c = fsdp.clip_coefficient %dl max_norm 1.0 : tensor<f32>
    // CHECK: fsdp.update @zeros, %{{.+}} step %{{.+}} lr %{{.+}} {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<8xf32>
    fsdp.update @zeros, %g step %step lr %lr {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<8xf32>
    // CHECK: fsdp.update @zeros, %{{.+}} step %{{.+}} lr %{{.+}} scaled %[[C]] {optimizer = #fsdp.adamw<lr = 0.001>} : tensor<8xf32>, tensor<f32>
    fsdp.update @zeros, %g step %step lr %lr scaled %c {optimizer = #fsdp.adamw<lr = 0.001>} : tensor<8xf32>, tensor<f32>
    return
  }

  // bf16 models verify as well.
  // CHECK-LABEL: func.func @bf16
  func.func @bf16(%x: tensor<4x8xbf16>) -> tensor<f32> {
    %w = fsdp.use @ones : tensor<8xbf16>
    // CHECK: fsdp.mul %{{.+}}, %{{.+}} : tensor<4x8xbf16>, tensor<8xbf16> -> tensor<4x8xbf16>
    %y = fsdp.mul %x, %w : tensor<4x8xbf16>, tensor<8xbf16> -> tensor<4x8xbf16>
    // Losses are f32, whatever their operands.
    // CHECK: fsdp.mse %{{.+}}, %{{.+}} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<f32>
    %l = fsdp.mse %y, %x : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<f32>
    return %l : tensor<f32>
  }
}
