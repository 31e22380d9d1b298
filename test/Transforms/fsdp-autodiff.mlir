// RUN: fsdp-opt %s -split-input-file -fsdp-autodiff -verify-diagnostics | FileCheck %s

// A linear layer: forward kept, then the backward of cross_entropy, add
// (broadcast bias) and matmul, then one update per parameter in declaration
// order. No gradient is built for the input %x.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[Y:.+]]: tensor<4xi32>, %[[STEP:.+]]: i64, %[[LR:.+]]: f32) -> tensor<f32>
// CHECK: %[[W:.+]] = fsdp.use @w
// CHECK: %[[B:.+]] = fsdp.use @b
// CHECK: %[[M:.+]] = fsdp.matmul %[[X]], %[[W]]
// CHECK: %[[Z:.+]] = fsdp.add %[[M]], %[[B]]
// CHECK: %[[L:.+]] = fsdp.cross_entropy %[[Z]], %[[Y]]
// CHECK: %[[ONE:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DZ:.+]] = fsdp.cross_entropy_grad %[[Z]], %[[Y]], %[[ONE]]
// CHECK: %[[DB:.+]] = fsdp.reduce_sum %[[DZ]] dims [0] : tensor<4x3xf32> -> tensor<3xf32>
// CHECK-NOT: transpose_rhs
// CHECK: %[[DW:.+]] = fsdp.matmul %[[X]], %[[DZ]] transpose_lhs : tensor<4x8xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
// CHECK: fsdp.update @w, %[[DW]] step %[[STEP]] lr %[[LR]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<8x3xf32>
// CHECK: fsdp.update @b, %[[DB]] step %[[STEP]] lr %[[LR]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<3xf32>
// CHECK: return %[[L]] : tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w : tensor<8x3xf32> = #fsdp.fan_in_uniform
  fsdp.param @b : tensor<3xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4xi32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<8x3xf32>
    %b = fsdp.use @b : tensor<3xf32>
    %m = fsdp.matmul %x, %w : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
    %z = fsdp.add %m, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
    %l = fsdp.cross_entropy %z, %y : tensor<4x3xf32>, tensor<4xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Tied weights: the embedding table is also the output head. Both uses
// contribute and the two gradients are summed into one update.

// CHECK-LABEL: func.func @train_step
// CHECK: %[[E:.+]] = fsdp.use @emb
// CHECK: %[[H:.+]] = fsdp.use @emb
// CHECK: %[[DHEAD:.+]] = fsdp.matmul %{{.+}}, %{{.+}} transpose_lhs : tensor<8x16xf32>, tensor<8x4xf32> -> tensor<16x4xf32>
// CHECK: %[[DEMB:.+]] = fsdp.embedding_grad %{{.+}}, %{{.+}} : tensor<2x4xi32>, tensor<2x4x4xf32> -> tensor<16x4xf32>
// CHECK: %[[SUM:.+]] = fsdp.add %[[DHEAD]], %[[DEMB]] : tensor<16x4xf32>, tensor<16x4xf32> -> tensor<16x4xf32>
// CHECK: fsdp.update @emb, %[[SUM]]
// CHECK-NOT: fsdp.update
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.adamw<lr = 0.001>>} {
  fsdp.param @emb : tensor<16x4xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%ids: tensor<2x4xi32>, %y: tensor<2x4xi32>) -> tensor<f32> {
    %e = fsdp.use @emb : tensor<16x4xf32>
    %x = fsdp.embedding %e[%ids] : tensor<16x4xf32>, tensor<2x4xi32> -> tensor<2x4x4xf32>
    %h = fsdp.use @emb : tensor<16x4xf32>
    %z = fsdp.matmul %x, %h transpose_rhs : tensor<2x4x4xf32>, tensor<16x4xf32> -> tensor<2x4x16xf32>
    %l = fsdp.cross_entropy %z, %y : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Frozen parameters get no gradient and no update; the backward stops where
// only frozen values remain. Fan-out: %h feeds two ops, whose gradients add.

// CHECK-LABEL: func.func @train_step
// CHECK-NOT: fsdp.update @frozen
// CHECK: arith.constant dense<1.000000e+00>
// CHECK: %[[DH1:.+]] = fsdp.mul %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[DH2:.+]] = fsdp.mul %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[DH:.+]] = fsdp.add %[[DH1]], %[[DH2]]
// CHECK: fsdp.relu_grad %{{.+}}, %[[DH]]
// CHECK-NOT: fsdp.update @frozen
// CHECK: fsdp.update @w
// CHECK-NOT: fsdp.update
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param frozen @frozen : tensor<8x8xf32> = #fsdp.normal<std = 1.0>
  fsdp.param @w : tensor<8x8xf32> = #fsdp.normal<std = 1.0>
  func.func @loss(%x: tensor<4x8xf32>, %t: tensor<4x8xf32>) -> tensor<f32> {
    %f = fsdp.use @frozen : tensor<8x8xf32>
    %a = fsdp.matmul %x, %f : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %w = fsdp.use @w : tensor<8x8xf32>
    %b = fsdp.matmul %a, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h = fsdp.relu %b : tensor<4x8xf32>
    %sq = fsdp.mul %h, %h : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %l = fsdp.mse %sq, %t : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Gradient clipping: the squared norms of all gradients are summed into one
// clip coefficient that scales every update.

// CHECK-LABEL: func.func @train_step
// CHECK: %[[S1:.+]] = fsdp.reduce_sum %{{.+}} dims [0, 1] : tensor<8x8xf32> -> tensor<f32>
// CHECK: %[[S2:.+]] = fsdp.reduce_sum %{{.+}} dims [0] : tensor<8xf32> -> tensor<f32>
// CHECK: %[[S:.+]] = fsdp.add %[[S1]], %[[S2]]
// CHECK: %[[C:.+]] = fsdp.clip_coefficient %[[S]] max_norm 0.5 : tensor<f32>
// CHECK: fsdp.update @w, %{{.+}} step %{{.+}} lr %{{.+}} scaled %[[C]] {{.+}} : tensor<8x8xf32>, tensor<f32>
// CHECK: fsdp.update @g, %{{.+}} step %{{.+}} lr %{{.+}} scaled %[[C]] {{.+}} : tensor<8xf32>, tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>, clip_grad_norm = 0.5>} {
  fsdp.param @w : tensor<8x8xf32> = #fsdp.normal<std = 1.0>
  fsdp.param @g : tensor<8xf32> = #fsdp.ones
  func.func @loss(%x: tensor<4x8xf32>, %t: tensor<4x8xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<8x8xf32>
    %g = fsdp.use @g : tensor<8xf32>
    %a = fsdp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %n = fsdp.rms_norm %a, %g : tensor<4x8xf32>, tensor<8xf32>
    %l = fsdp.mse %n, %t : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Every other op kind's gradient rule, in one attention-like chain.

// CHECK-LABEL: func.func @train_step
// CHECK-DAG: fsdp.layer_norm_grad
// CHECK-DAG: fsdp.softmax_grad %{{.+}}, %{{.+}} dim 3
// CHECK-DAG: fsdp.causal_mask_grad
// CHECK-DAG: fsdp.gelu_grad
// CHECK-DAG: fsdp.silu_grad
// CHECK-DAG: fsdp.batch_matmul %{{.+}}, %{{.+}} transpose_lhs : tensor<2x2x4x4xf32>, tensor<2x2x4x2xf32> -> tensor<2x2x4x2xf32>
// CHECK-DAG: fsdp.transpose %{{.+}} [0, 2, 1, 3] : tensor<2x2x4x2xf32> -> tensor<2x4x2x2xf32>
// CHECK-DAG: fsdp.reshape %{{.+}} : tensor<2x4x2x2xf32> -> tensor<2x4x4xf32>
// CHECK-DAG: fsdp.broadcast %{{.+}} : tensor<2x4x1xf32> -> tensor<2x4x4xf32>
// CHECK-DAG: fsdp.div
// CHECK-DAG: fsdp.scale %{{.+}} by -1.0
// CHECK: fsdp.update @ln.g
// CHECK: fsdp.update @ln.b
// CHECK: fsdp.update @wq
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @ln.g : tensor<4xf32> = #fsdp.ones
  fsdp.param @ln.b : tensor<4xf32> = #fsdp.zeros
  fsdp.param @wq : tensor<4x4xf32> = #fsdp.normal<std = 0.5>
  func.func @loss(%x: tensor<2x4x4xf32>, %t: tensor<2x4xf32>) -> tensor<f32> {
    %g = fsdp.use @ln.g : tensor<4xf32>
    %b = fsdp.use @ln.b : tensor<4xf32>
    %n = fsdp.layer_norm %x, %g, %b : tensor<2x4x4xf32>, tensor<4xf32>, tensor<4xf32>
    %wq = fsdp.use @wq : tensor<4x4xf32>
    %q = fsdp.matmul %n, %wq : tensor<2x4x4xf32>, tensor<4x4xf32> -> tensor<2x4x4xf32>
    %q4 = fsdp.reshape %q : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
    %qh = fsdp.transpose %q4 [0, 2, 1, 3] : tensor<2x4x2x2xf32> -> tensor<2x2x4x2xf32>
    %s = fsdp.batch_matmul %qh, %qh transpose_rhs : tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32> -> tensor<2x2x4x4xf32>
    %m = fsdp.causal_mask %s : tensor<2x2x4x4xf32>
    %p = fsdp.softmax %m dim 3 : tensor<2x2x4x4xf32>
    %o = fsdp.batch_matmul %p, %qh : tensor<2x2x4x4xf32>, tensor<2x2x4x2xf32> -> tensor<2x2x4x2xf32>
    %ot = fsdp.transpose %o [0, 2, 1, 3] : tensor<2x2x4x2xf32> -> tensor<2x4x2x2xf32>
    %oc = fsdp.reshape %ot : tensor<2x4x2x2xf32> -> tensor<2x4x4xf32>
    %a = fsdp.gelu %oc : tensor<2x4x4xf32>
    %c = fsdp.silu %a : tensor<2x4x4xf32>
    %e = fsdp.exp %c : tensor<2x4x4xf32>
    %th = fsdp.tanh %e : tensor<2x4x4xf32>
    %r = fsdp.reduce_mean %th dims [2] : tensor<2x4x4xf32> -> tensor<2x4xf32>
    %r3 = fsdp.reshape %r : tensor<2x4xf32> -> tensor<2x4x1xf32>
    %d = fsdp.div %th, %r3 : tensor<2x4x4xf32>, tensor<2x4x1xf32> -> tensor<2x4x4xf32>
    %s2 = fsdp.reduce_sum %d dims [2] : tensor<2x4x4xf32> -> tensor<2x4xf32>
    %sc = fsdp.scale %s2 by 0.5 : tensor<2x4xf32>
    %df = fsdp.sub %sc, %t : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    %l = fsdp.mse %df, %t : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A parameter that does not reach the loss is reported, not updated.

module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  // expected-warning@+1 {{parameter does not affect the loss; it is not updated}}
  fsdp.param @unused : tensor<4xf32> = #fsdp.zeros
  fsdp.param @w : tensor<4xf32> = #fsdp.ones
  func.func @loss(%t: tensor<4xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<4xf32>
    %l = fsdp.mse %w, %t : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The pass needs the plan.
// expected-error@+1 {{fsdp-autodiff needs the module's 'fsdp.plan' (it names the optimizer)}}
module {
  func.func @loss(%t: tensor<4xf32>) -> tensor<f32> {
    %l = fsdp.mse %t, %t : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The loss must be a scalar.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  // expected-error@+1 {{the loss function must return one rank-0 float tensor}}
  func.func @loss(%t: tensor<4xf32>) -> tensor<4xf32> {
    return %t : tensor<4xf32>
  }
}

// -----

// One function per model.
// expected-error@+1 {{fsdp-autodiff expects exactly one function, the model's loss, found 2}}
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  func.func @a(%t: tensor<f32>) -> tensor<f32> {
    return %t : tensor<f32>
  }
  func.func @b(%t: tensor<f32>) -> tensor<f32> {
    return %t : tensor<f32>
  }
}

// -----

// Attention: one fsdp.attention_grad from the operands, the output, the kept
// log-sum-exp and the output's gradient; the log-sum-exp, unused by the loss, has a
// zero gradient. Key and value are the same parameter: their gradients add up.

// CHECK-LABEL: func.func @train_step
// CHECK: %[[O:.+]], %[[LSE:.+]] = fsdp.attention %[[Q:.+]], %[[K:.+]], %[[K]] causal
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<1x2x4xf32>
// CHECK: %[[DQ:.+]], %[[DK:.+]], %[[DV:.+]] = fsdp.attention_grad %[[Q]], %[[K]], %[[K]], %[[O]], %[[LSE]], %{{.+}}, %[[ZERO]] causal
// CHECK: %[[DKV:.+]] = fsdp.add %[[DK]], %[[DV]]
// CHECK: fsdp.update @q, %[[DQ]]
// CHECK: fsdp.update @k, %[[DKV]]
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @q : tensor<1x2x4x3xf32> = #fsdp.normal<std = 1.0>
  fsdp.param @k : tensor<1x1x4x3xf32> = #fsdp.normal<std = 1.0>
  func.func @loss(%t: tensor<1x2x4x3xf32>) -> tensor<f32> {
    %q = fsdp.use @q : tensor<1x2x4x3xf32>
    %k = fsdp.use @k : tensor<1x1x4x3xf32>
    %o, %lse = fsdp.attention %q, %k, %k causal : tensor<1x2x4x3xf32>, tensor<1x1x4x3xf32>, tensor<1x1x4x3xf32> -> tensor<1x2x4x3xf32>, tensor<1x2x4xf32>
    %l = fsdp.mse %o, %t : tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Tensor-parallel regions: fsdp.tensor_copy's gradient is the tensor ranks' sum
// (fsdp.tensor_sum) of its result's, fsdp.tensor_sum's is its result's itself.

// CHECK-LABEL: func.func @train_step({{.+}}: tensor<4x8xf32>, {{.+}}: tensor<4x8xf32>, {{.+}}: i64, {{.+}}: f32)
// CHECK: %[[W1:.+]] = fsdp.use @w1
// CHECK: %[[H:.+]] = fsdp.tensor_copy %[[H0:.+]] : tensor<4x8xf32>
// CHECK: %[[P:.+]] = fsdp.matmul %[[H]], %[[W1]]
// CHECK: %[[W2:.+]] = fsdp.use @w2
// CHECK: %[[Q:.+]] = fsdp.matmul %[[P]], %[[W2]]
// CHECK: %[[S:.+]] = fsdp.tensor_sum %[[Q]] : tensor<4x8xf32>
// CHECK: %[[DS:.+]] = fsdp.mul
// CHECK-NOT: fsdp.tensor_sum
// CHECK: %[[DP:.+]] = fsdp.matmul %[[DS]], %[[W2]] transpose_rhs
// CHECK-NOT: fsdp.tensor_sum
// CHECK: %[[DH:.+]] = fsdp.matmul %[[DP]], %[[W1]] transpose_rhs
// CHECK-NOT: fsdp.tensor_sum
// CHECK: %[[DH0:.+]] = fsdp.tensor_sum %[[DH]] : tensor<4x8xf32>
// CHECK: fsdp.matmul %arg0, %[[DH0]] transpose_lhs
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w0 : tensor<8x8xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w1 split 1 : tensor<8x2xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w2 split 0 : tensor<2x8xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<f32> {
    %w0 = fsdp.use @w0 : tensor<8x8xf32>
    %w1 = fsdp.use @w1 : tensor<8x2xf32>
    %h0 = fsdp.matmul %x, %w0 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h = fsdp.tensor_copy %h0 : tensor<4x8xf32>
    %p = fsdp.matmul %h, %w1 : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
    %w2 = fsdp.use @w2 : tensor<2x8xf32>
    %q = fsdp.matmul %p, %w2 : tensor<4x2xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
    %s = fsdp.tensor_sum %q : tensor<4x8xf32>
    %l = fsdp.mse %s, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Sequence blocks: fsdp.tensor_reduce_scatter's gradient is the tensor ranks'
// all-gather of its result's, fsdp.tensor_all_gather's their reduce-scatter;
// fsdp.tensor_chunk's gradient is the whole (fsdp.tensor_unchunk), and
// fsdp.tensor_unchunk's this rank's block of it (fsdp.tensor_chunk).

// CHECK-LABEL: func.func @train_step({{.+}}: tensor<2x8x4xf32>, {{.+}}: tensor<2x8x4xf32>, {{.+}}: i64, {{.+}}: f32)
// CHECK: %[[X0:.+]] = fsdp.matmul %arg0
// CHECK: %[[B:.+]] = fsdp.tensor_chunk %[[X0]] dim 1 : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
// CHECK: fsdp.tensor_all_gather %[[B]] dim 1 : tensor<2x4x4xf32> -> tensor<2x8x4xf32>
// CHECK: fsdp.tensor_reduce_scatter %{{.+}} dim 1 : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
// CHECK: %[[W:.+]] = fsdp.tensor_unchunk %{{.+}} dim 1 : tensor<2x4x4xf32> -> tensor<2x8x4xf32>
// CHECK: fsdp.mse %[[W]]
// CHECK: %[[DR:.+]] = fsdp.tensor_chunk %{{.+}} dim 1 : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
// CHECK: fsdp.tensor_all_gather %[[DR]] dim 1 : tensor<2x4x4xf32> -> tensor<2x8x4xf32>
// CHECK: %[[DG:.+]] = fsdp.tensor_reduce_scatter %{{.+}} dim 1 : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
// CHECK: %[[DB:.+]] = fsdp.add %[[DR]], %[[DG]]
// CHECK: %[[DX0:.+]] = fsdp.tensor_unchunk %[[DB]] dim 1 : tensor<2x4x4xf32> -> tensor<2x8x4xf32>
// CHECK: fsdp.reshape %[[DX0]] : tensor<2x8x4xf32> -> tensor<16x4xf32>
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, sequence_parallel = true, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w0 : tensor<4x4xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w1 split 1 : tensor<4x2xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w2 split 0 : tensor<2x4xf32> = #fsdp.normal<std = 0.02>
  func.func @loss(%x: tensor<2x8x4xf32>, %y: tensor<2x8x4xf32>) -> tensor<f32> {
    %w0 = fsdp.use @w0 : tensor<4x4xf32>
    %x0 = fsdp.matmul %x, %w0 : tensor<2x8x4xf32>, tensor<4x4xf32> -> tensor<2x8x4xf32>
    %b = fsdp.tensor_chunk %x0 dim 1 : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
    %w1 = fsdp.use @w1 : tensor<4x2xf32>
    %g = fsdp.tensor_all_gather %b dim 1 : tensor<2x4x4xf32> -> tensor<2x8x4xf32>
    %h = fsdp.matmul %g, %w1 : tensor<2x8x4xf32>, tensor<4x2xf32> -> tensor<2x8x2xf32>
    %w2 = fsdp.use @w2 : tensor<2x4xf32>
    %p = fsdp.matmul %h, %w2 : tensor<2x8x2xf32>, tensor<2x4xf32> -> tensor<2x8x4xf32>
    %s = fsdp.tensor_reduce_scatter %p dim 1 : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
    %r = fsdp.add %b, %s : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x4x4xf32>
    %w = fsdp.tensor_unchunk %r dim 1 : tensor<2x4x4xf32> -> tensor<2x8x4xf32>
    %l = fsdp.mse %w, %y : tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
