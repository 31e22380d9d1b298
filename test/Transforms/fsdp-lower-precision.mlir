// RUN: fsdp-opt %s -split-input-file -fsdp-form-units -fsdp-partition -fsdp-autodiff -fsdp-insert-collectives -fsdp-lower-precision | FileCheck %s
// RUN: not fsdp-opt %s -split-input-file -fsdp-lower-precision 2>&1 | FileCheck %s --check-prefix=NOSTEP
// NOSTEP: error: fsdp-lower-precision needs the training step @train_step of fsdp-autodiff; the module has none

// docs/MixedPrecision.md applied to one model, a 2-layer MLP (8 -> 16, ReLU,
// 16 -> 4, cross-entropy; units fc1 and fc2), under several plans.

// param_dtype = bf16, reduce_dtype = bf16, 2 ranks, with clipping. Every line
// of the step is checked: units are gathered in bf16, the input is rounded
// once, every op computes in bf16 but the loss (f32) and the loss gradient
// cross_entropy_grad reads (f32); flat gradients are bf16 and reduced in
// bf16, then widened for clipping and the update.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[Y:.+]]: tensor<4xi32>, %[[STEP:.+]]: i64, %[[LR:.+]]: f32) -> tensor<f32>
// CHECK-NEXT: %[[XB:.+]] = fsdp.convert %[[X]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[G1:.+]] = fsdp.all_gather @fc1 : tensor<160xbf16>
// CHECK-NEXT: %[[W1:.+]] = fsdp.view @fc1.w in %[[G1]] : tensor<160xbf16> -> tensor<8x16xbf16>
// CHECK-NEXT: %[[B1:.+]] = fsdp.view @fc1.b in %[[G1]] : tensor<160xbf16> -> tensor<16xbf16>
// CHECK-NEXT: %[[M1:.+]] = fsdp.matmul %[[XB]], %[[W1]] : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
// CHECK-NEXT: %[[Z1:.+]] = fsdp.add %[[M1]], %[[B1]] : tensor<4x16xbf16>, tensor<16xbf16> -> tensor<4x16xbf16>
// CHECK-NEXT: fsdp.free %[[G1]] : tensor<160xbf16>
// CHECK-NEXT: %[[H1:.+]] = fsdp.relu %[[Z1]] : tensor<4x16xbf16>
// CHECK-NEXT: %[[G2:.+]] = fsdp.all_gather @fc2 : tensor<64xbf16>
// CHECK-NEXT: %[[W2:.+]] = fsdp.view @fc2.w in %[[G2]] : tensor<64xbf16> -> tensor<16x4xbf16>
// CHECK-NEXT: %[[Z2:.+]] = fsdp.matmul %[[H1]], %[[W2]] : tensor<4x16xbf16>, tensor<16x4xbf16> -> tensor<4x4xbf16>
// CHECK-NEXT: fsdp.free %[[G2]] : tensor<64xbf16>
// CHECK-NEXT: %[[L:.+]] = fsdp.cross_entropy %[[Z2]], %[[Y]] : tensor<4x4xbf16>, tensor<4xi32> -> tensor<f32>
// CHECK-NEXT: %[[SEED:.+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[DZ2:.+]] = fsdp.cross_entropy_grad %[[Z2]], %[[Y]], %[[SEED]] : tensor<4x4xbf16>, tensor<4xi32>, tensor<f32>
// CHECK-NEXT: %[[G2B:.+]] = fsdp.all_gather @fc2 : tensor<64xbf16>
// CHECK-NEXT: %[[W2B:.+]] = fsdp.view @fc2.w in %[[G2B]] : tensor<64xbf16> -> tensor<16x4xbf16>
// CHECK-NEXT: %[[DH1:.+]] = fsdp.matmul %[[DZ2]], %[[W2B]] transpose_rhs : tensor<4x4xbf16>, tensor<16x4xbf16> -> tensor<4x16xbf16>
// CHECK-NEXT: fsdp.free %[[G2B]] : tensor<64xbf16>
// CHECK-NEXT: %[[DW2:.+]] = fsdp.matmul %[[H1]], %[[DZ2]] transpose_lhs : tensor<4x16xbf16>, tensor<4x4xbf16> -> tensor<16x4xbf16>
// CHECK-NEXT: %[[F2:.+]] = fsdp.flatten @fc2(%[[DW2]]) : tensor<16x4xbf16> -> tensor<64xbf16>
// CHECK-NEXT: %[[R2:.+]] = fsdp.reduce_scatter %[[F2]] avg : tensor<64xbf16> -> tensor<32xbf16>
// CHECK-NEXT: %[[S2:.+]] = fsdp.convert %[[R2]] : tensor<32xbf16> -> tensor<32xf32>
// CHECK-NEXT: %[[DZ1:.+]] = fsdp.relu_grad %[[Z1]], %[[DH1]] : tensor<4x16xbf16>
// CHECK-NEXT: %[[DB1:.+]] = fsdp.reduce_sum %[[DZ1]] dims [0] : tensor<4x16xbf16> -> tensor<16xbf16>
// CHECK-NEXT: %[[DW1:.+]] = fsdp.matmul %[[XB]], %[[DZ1]] transpose_lhs : tensor<4x8xbf16>, tensor<4x16xbf16> -> tensor<8x16xbf16>
// CHECK-NEXT: %[[F1:.+]] = fsdp.flatten @fc1(%[[DW1]], %[[DB1]]) : tensor<8x16xbf16>, tensor<16xbf16> -> tensor<160xbf16>
// CHECK-NEXT: %[[R1:.+]] = fsdp.reduce_scatter %[[F1]] avg : tensor<160xbf16> -> tensor<80xbf16>
// CHECK-NEXT: %[[S1:.+]] = fsdp.convert %[[R1]] : tensor<80xbf16> -> tensor<80xf32>
// CHECK-NEXT: %[[SQ1:.+]] = fsdp.mul %[[S1]], %[[S1]] : tensor<80xf32>, tensor<80xf32> -> tensor<80xf32>
// CHECK-NEXT: %[[N1:.+]] = fsdp.reduce_sum %[[SQ1]] dims [0] : tensor<80xf32> -> tensor<f32>
// CHECK-NEXT: %[[SQ2:.+]] = fsdp.mul %[[S2]], %[[S2]] : tensor<32xf32>, tensor<32xf32> -> tensor<32xf32>
// CHECK-NEXT: %[[N2:.+]] = fsdp.reduce_sum %[[SQ2]] dims [0] : tensor<32xf32> -> tensor<f32>
// CHECK-NEXT: %[[N:.+]] = fsdp.add %[[N1]], %[[N2]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT: %[[NS:.+]] = fsdp.all_reduce %[[N]] sum over shard : tensor<f32>
// CHECK-NEXT: %[[C:.+]] = fsdp.clip_coefficient %[[NS]] max_norm 1.0 : tensor<f32>
// CHECK-NEXT: fsdp.update @fc1, %[[S1]] step %[[STEP]] lr %[[LR]] scaled %[[C]] {{.+}} : tensor<80xf32>, tensor<f32>
// CHECK-NEXT: fsdp.update @fc2, %[[S2]] step %[[STEP]] lr %[[LR]] scaled %[[C]] {{.+}} : tensor<32xf32>, tensor<f32>
// CHECK-NEXT: return %[[L]] : tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [2], param_dtype = bf16, reduce_dtype = bf16, optimizer = #fsdp.sgd<lr = 0.1>, clip_grad_norm = 1.0>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x4xf32>
    %z2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z2, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// reduce_dtype = f32 (the default): the bf16 gradients widen into f32 flat
// gradients, reduced in f32, which are the shards' type: no conversion back.
// CHECK-LABEL: func.func @train_step
// CHECK: fsdp.all_gather @fc1 : tensor<160xbf16>
// CHECK: %[[F2:.+]] = fsdp.flatten @fc2(%{{.+}}) : tensor<16x4xbf16> -> tensor<64xf32>
// CHECK-NEXT: %[[R2:.+]] = fsdp.reduce_scatter %[[F2]] avg : tensor<64xf32> -> tensor<32xf32>
// CHECK-NOT: fsdp.convert
// CHECK: %[[F1:.+]] = fsdp.flatten @fc1(%{{.+}}, %{{.+}}) : tensor<8x16xbf16>, tensor<16xbf16> -> tensor<160xf32>
// CHECK-NEXT: %[[R1:.+]] = fsdp.reduce_scatter %[[F1]] avg : tensor<160xf32> -> tensor<80xf32>
// CHECK-NEXT: fsdp.update @fc1, %[[R1]]
// CHECK-NEXT: fsdp.update @fc2, %[[R2]]
module attributes {fsdp.plan = #fsdp.plan<grid = [2], param_dtype = bf16, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x4xf32>
    %z2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z2, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// One rank: no gathers, each parameter read is rounded where it is read; a
// flat gradient no collective reduces is the gradient shard, in f32 whatever
// reduce_dtype says.
// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: fsdp.convert %{{.+}} : tensor<8x8xf32> -> tensor<8x8xbf16>
// CHECK-NEXT: %[[W1:.+]] = fsdp.use @fc1.w : tensor<8x16xf32>
// CHECK-NEXT: fsdp.convert %[[W1]] : tensor<8x16xf32> -> tensor<8x16xbf16>
// CHECK-NEXT: %[[B1:.+]] = fsdp.use @fc1.b : tensor<16xf32>
// CHECK-NEXT: fsdp.convert %[[B1]] : tensor<16xf32> -> tensor<16xbf16>
// CHECK-NOT: all_gather
// CHECK: %[[F2:.+]] = fsdp.flatten @fc2(%{{.+}}) : tensor<16x4xbf16> -> tensor<64xf32>
// CHECK: %[[F1:.+]] = fsdp.flatten @fc1(%{{.+}}, %{{.+}}) : tensor<8x16xbf16>, tensor<16xbf16> -> tensor<144xf32>
// CHECK-NEXT: fsdp.update @fc1, %[[F1]]
// CHECK-NEXT: fsdp.update @fc2, %[[F2]]
module attributes {fsdp.plan = #fsdp.plan<grid = [1], param_dtype = bf16, reduce_dtype = bf16, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x4xf32>
    %z2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z2, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// hybrid_shard: the replica all-reduce runs in reduce_dtype too; the
// gradient returns to f32 after the last collective.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[F2:.+]] = fsdp.flatten @fc2(%{{.+}}) : tensor<16x4xbf16> -> tensor<64xbf16>
// CHECK-NEXT: %[[R2:.+]] = fsdp.reduce_scatter %[[F2]] avg : tensor<64xbf16> -> tensor<32xbf16>
// CHECK-NEXT: %[[A2:.+]] = fsdp.all_reduce %[[R2]] avg over replica : tensor<32xbf16>
// CHECK-NEXT: %[[S2:.+]] = fsdp.convert %[[A2]] : tensor<32xbf16> -> tensor<32xf32>
// CHECK: fsdp.update @fc2, %[[S2]]
module attributes {fsdp.plan = #fsdp.plan<grid = [2, 2], strategy = hybrid_shard, param_dtype = bf16, reduce_dtype = bf16, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc2.w unit "fc2" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %m1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x4xf32>
    %z2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z2, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// f32 compute with bf16 reductions: the f32 gradients are rounded before the
// flat gradient, and widened back after the reduce-scatter.
// CHECK-LABEL: func.func @train_step
// CHECK: fsdp.all_gather @fc1 : tensor<160xf32>
// CHECK: %[[DW2:.+]] = fsdp.matmul %{{.+}}, %{{.+}} transpose_lhs : tensor<4x16xf32>, tensor<4x4xf32> -> tensor<16x4xf32>
// CHECK-NEXT: %[[DW2B:.+]] = fsdp.convert %[[DW2]] : tensor<16x4xf32> -> tensor<16x4xbf16>
// CHECK-NEXT: %[[F2:.+]] = fsdp.flatten @fc2(%[[DW2B]]) : tensor<16x4xbf16> -> tensor<64xbf16>
// CHECK-NEXT: %[[R2:.+]] = fsdp.reduce_scatter %[[F2]] avg : tensor<64xbf16> -> tensor<32xbf16>
// CHECK-NEXT: fsdp.convert %[[R2]] : tensor<32xbf16> -> tensor<32xf32>
module attributes {fsdp.plan = #fsdp.plan<grid = [2], reduce_dtype = bf16, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @fc1.w unit "fc1" : tensor<8x16xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<16x4xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<8x8xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w1 = fsdp.use @fc1.w : tensor<8x16xf32>
    %b1 = fsdp.use @fc1.b : tensor<16xf32>
    %m1 = fsdp.matmul %x, %w1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    %z1 = fsdp.add %m1, %b1 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    %h1 = fsdp.relu %z1 : tensor<8x16xf32>
    %w2 = fsdp.use @fc2.w : tensor<16x4xf32>
    %z2 = fsdp.matmul %h1, %w2 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z2, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// mse: the regression target is an input, rounded once; the loss gradient
// (a constant) meets bf16 values in a mul, and is rebuilt as a bf16 constant.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[T:.+]]: tensor<4x2xf32>
// CHECK-NEXT: %[[XB:.+]] = fsdp.convert %[[X]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[TB:.+]] = fsdp.convert %[[T]] : tensor<4x2xf32> -> tensor<4x2xbf16>
// CHECK: %[[P:.+]] = fsdp.matmul
// CHECK-NEXT: %[[L:.+]] = fsdp.mse %[[P]], %[[TB]] : tensor<4x2xbf16>, tensor<4x2xbf16> -> tensor<f32>
// CHECK: %[[DL:.+]] = arith.constant dense<1.000000e+00> : tensor<bf16>
// CHECK-NEXT: fsdp.mul %{{.+}}, %[[DL]] : tensor<4x2xbf16>, tensor<bf16> -> tensor<4x2xbf16>
// CHECK: return %[[L]] : tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [1], param_dtype = bf16, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "lin" : tensor<8x2xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<4x8xf32>, %t: tensor<4x2xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<8x2xf32>
    %p = fsdp.matmul %x, %w : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
    %l = fsdp.mse %p, %t : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// f32 everywhere (the default plan): nothing changes.
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: bf16
// CHECK-NOT: fsdp.convert
// CHECK: return
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "lin" : tensor<8x2xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<4x8xf32>, %t: tensor<4x2xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<8x2xf32>
    %p = fsdp.matmul %x, %w : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
    %l = fsdp.mse %p, %t : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Attention in bf16: query, key, value and output bf16, the log-sum-exp and its
// (zero) gradient f32, the gradients of the operands bf16.

// CHECK-LABEL: func.func @train_step
// CHECK: fsdp.attention %{{.+}}, %{{.+}}, %{{.+}} causal : tensor<1x2x4x3xbf16>, tensor<1x1x4x3xbf16>, tensor<1x1x4x3xbf16> -> tensor<1x2x4x3xbf16>, tensor<1x2x4xf32>
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<1x2x4xf32>
// CHECK: fsdp.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ZERO]] causal : tensor<1x2x4x3xbf16>, tensor<1x1x4x3xbf16>, tensor<1x1x4x3xbf16>, tensor<1x2x4xf32>
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>, param_dtype = bf16>} {
  fsdp.param @q unit "u" : tensor<1x2x4x3xf32> = #fsdp.normal<std = 1.0>
  fsdp.param @k unit "u" : tensor<1x1x4x3xf32> = #fsdp.normal<std = 1.0>
  func.func @loss(%t: tensor<1x2x4x3xf32>) -> tensor<f32> {
    %q = fsdp.use @q : tensor<1x2x4x3xf32>
    %k = fsdp.use @k : tensor<1x1x4x3xf32>
    %o, %lse = fsdp.attention %q, %k, %k causal : tensor<1x2x4x3xf32>, tensor<1x1x4x3xf32>, tensor<1x1x4x3xf32> -> tensor<1x2x4x3xf32>, tensor<1x2x4xf32>
    %l = fsdp.mse %o, %t : tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
