// RUN: fsdp-opt %s -split-input-file -fsdp-form-units -fsdp-autodiff -fsdp-remat -verify-diagnostics | FileCheck %s
// With fsdp-insert-collectives: the re-gather of a unit for backward comes before
// the copies of its forward ops, which read the gathered parameters.
// RUN: fsdp-opt %s -split-input-file -fsdp-form-units -fsdp-partition -fsdp-autodiff -fsdp-remat -fsdp-insert-collectives -verify-diagnostics | FileCheck %s --check-prefix=GATHER
// The pass needs fsdp-autodiff's @train_step.
// RUN: not fsdp-opt %s -split-input-file -fsdp-form-units -fsdp-remat 2>&1 | FileCheck %s --check-prefix=NOSTEP
// NOSTEP: error: fsdp-remat needs the training step @train_step of fsdp-autodiff; the module has none

// Two residual blocks (units a and b: h = x + tanh(x W)) and a head (unit head)
// with the loss. tanh's gradient reads its result, so each block's backward needs
// tanh(x W): with remat = unit it is computed again, from the block's input (the
// residual stream, which a part hands to the next and is kept) and the parameter,
// right before the first backward op that reads it. The head computes the loss
// and is never recomputed.

// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, remat = unit>, fsdp.recompute = #fsdp.recompute<ops = 4, products = 2, product_flops = 1024, other_elements = 64, step_product_flops = 4352, attention_flops = 0, fused_attention_flops = 0>}
// CHECK: func.func @train_step(%[[X:.+]]: tensor<4x8xf32>, %[[Y:.+]]: tensor<4x4xf32>,
// CHECK-NEXT: %[[WA:.+]] = fsdp.use @a.w
// CHECK-NEXT: %[[MA:.+]] = fsdp.matmul %[[X]], %[[WA]]
// CHECK-NEXT: %[[TA:.+]] = fsdp.tanh %[[MA]]
// CHECK-NEXT: %[[HA:.+]] = fsdp.add %[[X]], %[[TA]]
// CHECK-NEXT: %[[WB:.+]] = fsdp.use @b.w
// CHECK-NEXT: %[[MB:.+]] = fsdp.matmul %[[HA]], %[[WB]]
// CHECK-NEXT: %[[TB:.+]] = fsdp.tanh %[[MB]]
// CHECK-NEXT: %[[HB:.+]] = fsdp.add %[[HA]], %[[TB]]
// CHECK-NEXT: %[[WC:.+]] = fsdp.use @head.w
// CHECK-NEXT: %[[P:.+]] = fsdp.matmul %[[HB]], %[[WC]]
// CHECK-NEXT: %[[L:.+]] = fsdp.mse %[[P]], %[[Y]]
// The head's backward reads its forward values: kept.
// CHECK: %[[DP:.+]] = fsdp.mul
// CHECK-NEXT: %[[DHB:.+]] = fsdp.matmul %[[DP]], %[[WC]] transpose_rhs
// CHECK-NEXT: fsdp.matmul %[[HB]], %[[DP]] transpose_lhs
// Block b again, from the kept residual stream, then its backward.
// CHECK-NEXT: %[[MB2:.+]] = fsdp.matmul %[[HA]], %[[WB]]
// CHECK-NEXT: %[[TB2:.+]] = fsdp.tanh %[[MB2]]
// CHECK-NEXT: fsdp.mul %[[DHB]], %[[TB2]]
// CHECK: fsdp.matmul %[[HA]], %{{.+}} transpose_lhs
// Block a again, from the input.
// CHECK: %[[MA2:.+]] = fsdp.matmul %[[X]], %[[WA]]
// CHECK-NEXT: %[[TA2:.+]] = fsdp.tanh %[[MA2]]
// CHECK-NEXT: fsdp.mul %{{.+}}, %[[TA2]]
// The forward's tanh results are read by the forward alone.
// CHECK-NOT: %[[TA]]{{[, ]}}
// CHECK-NOT: %[[TB]]{{[, ]}}
// CHECK: return %[[L]]

// GATHER-LABEL: func.func @train_step
// GATHER: fsdp.reduce_scatter
// GATHER-NEXT: %[[GB:.+]] = fsdp.all_gather @b
// GATHER-NEXT: %[[WB:.+]] = fsdp.view @b.w in %[[GB]]
// GATHER-NEXT: %[[MB2:.+]] = fsdp.matmul %{{.+}}, %[[WB]]
// GATHER-NEXT: fsdp.tanh %[[MB2]]
// GATHER: fsdp.free %[[GB]]
// GATHER: %[[GA:.+]] = fsdp.all_gather @a
// GATHER-NEXT: %[[WA:.+]] = fsdp.view @a.w in %[[GA]]
// GATHER-NEXT: %[[MA2:.+]] = fsdp.matmul %{{.+}}, %[[WA]]
// GATHER-NEXT: fsdp.free %[[GA]]
// GATHER-NEXT: fsdp.tanh %[[MA2]]
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, remat = unit>} {
  fsdp.param @a.w unit "a" : tensor<8x8xf32> = #fsdp.fan_in_uniform
  fsdp.param @b.w unit "b" : tensor<8x8xf32> = #fsdp.fan_in_uniform
  fsdp.param @head.w unit "head" : tensor<8x4xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x4xf32>) -> tensor<f32> {
    %wa = fsdp.use @a.w : tensor<8x8xf32>
    %ma = fsdp.matmul %x, %wa : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %ta = fsdp.tanh %ma : tensor<4x8xf32>
    %ha = fsdp.add %x, %ta : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %wb = fsdp.use @b.w : tensor<8x8xf32>
    %mb = fsdp.matmul %ha, %wb : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %tb = fsdp.tanh %mb : tensor<4x8xf32>
    %hb = fsdp.add %ha, %tb : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %wc = fsdp.use @head.w : tensor<8x4xf32>
    %p = fsdp.matmul %hb, %wc : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
    %l = fsdp.mse %p, %y : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// remat = selective keeps the results of matrix products: the blocks' backward
// recompute only tanh, from the kept product.

// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, remat = selective>, fsdp.recompute = #fsdp.recompute<ops = 2, products = 0, product_flops = 0, other_elements = 64, step_product_flops = 3328, attention_flops = 0, fused_attention_flops = 0>}
// CHECK: %[[MA:.+]] = fsdp.matmul %{{[^ ]+}}, %{{[^ ]+}} :
// CHECK-NEXT: %[[TA:.+]] = fsdp.tanh %[[MA]]
// CHECK: %[[MB:.+]] = fsdp.matmul %{{[^ ]+}}, %{{[^ ]+}} :
// CHECK-NEXT: %[[TB:.+]] = fsdp.tanh %[[MB]]
// CHECK: fsdp.mse
// CHECK: %[[TB2:.+]] = fsdp.tanh %[[MB]]
// CHECK-NEXT: fsdp.mul %{{.+}}, %[[TB2]]
// CHECK: %[[TA2:.+]] = fsdp.tanh %[[MA]]
// CHECK-NEXT: fsdp.mul %{{.+}}, %[[TA2]]
// CHECK-NOT: fsdp.matmul %{{[^ ]+}}, %{{[^ ]+}} :
// CHECK: return
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, remat = selective>} {
  fsdp.param @a.w unit "a" : tensor<8x8xf32> = #fsdp.fan_in_uniform
  fsdp.param @b.w unit "b" : tensor<8x8xf32> = #fsdp.fan_in_uniform
  fsdp.param @head.w unit "head" : tensor<8x4xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x4xf32>) -> tensor<f32> {
    %wa = fsdp.use @a.w : tensor<8x8xf32>
    %ma = fsdp.matmul %x, %wa : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %ta = fsdp.tanh %ma : tensor<4x8xf32>
    %ha = fsdp.add %x, %ta : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %wb = fsdp.use @b.w : tensor<8x8xf32>
    %mb = fsdp.matmul %ha, %wb : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %tb = fsdp.tanh %mb : tensor<4x8xf32>
    %hb = fsdp.add %ha, %tb : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %wc = fsdp.use @head.w : tensor<8x4xf32>
    %p = fsdp.matmul %hb, %wc : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
    %l = fsdp.mse %p, %y : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// remat_units chooses units by name: block b only; block a's tanh is kept.

// CHECK-LABEL: remat_units = ["b"]>, fsdp.recompute = #fsdp.recompute<ops = 2,
// CHECK: %[[TA:.+]] = fsdp.tanh
// CHECK: %[[MB:.+]] = fsdp.matmul %{{[^ ]+}}, %[[WB:[^ ]+]] :
// CHECK: fsdp.mse
// CHECK: %[[MB2:.+]] = fsdp.matmul %{{[^ ]+}}, %[[WB]] :
// CHECK-NEXT: fsdp.tanh %[[MB2]]
// CHECK: fsdp.mul %{{.+}}, %[[TA]]
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, remat = unit, remat_units = ["b"]>} {
  fsdp.param @a.w unit "a" : tensor<8x8xf32> = #fsdp.fan_in_uniform
  fsdp.param @b.w unit "b" : tensor<8x8xf32> = #fsdp.fan_in_uniform
  fsdp.param @head.w unit "head" : tensor<8x4xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x4xf32>) -> tensor<f32> {
    %wa = fsdp.use @a.w : tensor<8x8xf32>
    %ma = fsdp.matmul %x, %wa : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %ta = fsdp.tanh %ma : tensor<4x8xf32>
    %ha = fsdp.add %x, %ta : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %wb = fsdp.use @b.w : tensor<8x8xf32>
    %mb = fsdp.matmul %ha, %wb : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %tb = fsdp.tanh %mb : tensor<4x8xf32>
    %hb = fsdp.add %ha, %tb : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %wc = fsdp.use @head.w : tensor<8x4xf32>
    %p = fsdp.matmul %hb, %wc : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
    %l = fsdp.mse %p, %y : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// remat_every = 2: the 1st, 3rd, ... unit of the forward pass: block a, not b.

// CHECK-LABEL: remat_every = 2>, fsdp.recompute = #fsdp.recompute<ops = 2,
// CHECK: %[[MA:.+]] = fsdp.matmul %[[X:[^ ]+]], %[[WA:[^ ]+]] :
// CHECK: fsdp.use @b.w
// CHECK: %[[TB:.+]] = fsdp.tanh
// CHECK: fsdp.mse
// CHECK: fsdp.mul %{{.+}}, %[[TB]]
// CHECK: %[[MA2:.+]] = fsdp.matmul %[[X]], %[[WA]] :
// CHECK-NEXT: fsdp.tanh %[[MA2]]
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, remat = unit, remat_every = 2>} {
  fsdp.param @a.w unit "a" : tensor<8x8xf32> = #fsdp.fan_in_uniform
  fsdp.param @b.w unit "b" : tensor<8x8xf32> = #fsdp.fan_in_uniform
  fsdp.param @head.w unit "head" : tensor<8x4xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x4xf32>) -> tensor<f32> {
    %wa = fsdp.use @a.w : tensor<8x8xf32>
    %ma = fsdp.matmul %x, %wa : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %ta = fsdp.tanh %ma : tensor<4x8xf32>
    %ha = fsdp.add %x, %ta : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %wb = fsdp.use @b.w : tensor<8x8xf32>
    %mb = fsdp.matmul %ha, %wb : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %tb = fsdp.tanh %mb : tensor<4x8xf32>
    %hb = fsdp.add %ha, %tb : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %wc = fsdp.use @head.w : tensor<8x4xf32>
    %p = fsdp.matmul %hb, %wc : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
    %l = fsdp.mse %p, %y : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// remat = none (the default): nothing changes, nothing is recorded.

// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
// CHECK: fsdp.mse
// CHECK-NOT: fsdp.tanh
// CHECK: return
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @a.w unit "a" : tensor<8x8xf32> = #fsdp.fan_in_uniform
  fsdp.param @head.w unit "head" : tensor<8x4xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x4xf32>) -> tensor<f32> {
    %wa = fsdp.use @a.w : tensor<8x8xf32>
    %ma = fsdp.matmul %x, %wa : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %ta = fsdp.tanh %ma : tensor<4x8xf32>
    %wc = fsdp.use @head.w : tensor<8x4xf32>
    %p = fsdp.matmul %ta, %wc : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
    %l = fsdp.mse %p, %y : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// expected-error@+1 {{remat_units names "c", which is no unit the forward pass reads first}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, remat = unit, remat_units = ["c"]>} {
  fsdp.param @a.w unit "a" : tensor<8x8xf32> = #fsdp.fan_in_uniform
  fsdp.param @head.w unit "head" : tensor<8x4xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x4xf32>) -> tensor<f32> {
    %wa = fsdp.use @a.w : tensor<8x8xf32>
    %ma = fsdp.matmul %x, %wa : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %ta = fsdp.tanh %ma : tensor<4x8xf32>
    %wc = fsdp.use @head.w : tensor<8x4xf32>
    %p = fsdp.matmul %ta, %wc : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
    %l = fsdp.mse %p, %y : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// expected-error@+1 {{remat_units names "head", the unit that computes the loss: its backward starts where its forward ends, so nothing of it can be recomputed}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, remat = unit, remat_units = ["head"]>} {
  fsdp.param @a.w unit "a" : tensor<8x8xf32> = #fsdp.fan_in_uniform
  fsdp.param @head.w unit "head" : tensor<8x4xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<4x8xf32>, %y: tensor<4x4xf32>) -> tensor<f32> {
    %wa = fsdp.use @a.w : tensor<8x8xf32>
    %ma = fsdp.matmul %x, %wa : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %ta = fsdp.tanh %ma : tensor<4x8xf32>
    %wc = fsdp.use @head.w : tensor<8x4xf32>
    %p = fsdp.matmul %ta, %wc : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
    %l = fsdp.mse %p, %y : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A windowed attention recomputed for its backward: its forward products counted as
// its key-block loops compute them and as a fused call would. Batch 2, 2 heads, 16
// positions of 8, a window of 4 in blocks of 8 queries: each block scores the
// 8 + 4 - 1 = 11 keys its window reaches, 2 x 8 x 11 = 176 pairs a head, against the
// band's 4 x 16 - 4 x 3 / 2 = 58; 2 products of 2 x 8 FLOPs a pair over 4 heads in all:
// 22,528 as loops, 7,424 fused.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>, remat = unit>, fsdp.recompute = #fsdp.recompute<ops = {{[0-9]+}}, products = 1, product_flops = 8192, other_elements = {{[0-9]+}}, step_product_flops = {{[0-9]+}}, attention_flops = 22528, fused_attention_flops = 7424>}
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>, remat = unit>} {
  fsdp.param @a.w unit "a" : tensor<8x8xf32> = #fsdp.fan_in_uniform
  fsdp.param @head.w unit "head" : tensor<8x8xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<2x2x16x8xf32>, %y: tensor<2x2x16x8xf32>) -> tensor<f32> {
    %w = fsdp.use @a.w : tensor<8x8xf32>
    %q = fsdp.matmul %x, %w : tensor<2x2x16x8xf32>, tensor<8x8xf32> -> tensor<2x2x16x8xf32>
    %o, %lse = fsdp.attention %q, %q, %q causal window 4 key_block 8
        : tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
          -> tensor<2x2x16x8xf32>, tensor<2x2x16xf32>
    %h = fsdp.add %x, %o : tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<2x2x16x8xf32>
    %wc = fsdp.use @head.w : tensor<8x8xf32>
    %p = fsdp.matmul %h, %wc : tensor<2x2x16x8xf32>, tensor<8x8xf32> -> tensor<2x2x16x8xf32>
    %l = fsdp.mse %p, %y : tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
