// RUN: fsdp-opt %s -split-input-file -fsdp-partition -verify-diagnostics | FileCheck %s

//===----------------------------------------------------------------------===//
// Layout: offsets (`at`) and fsdp.unit
//===----------------------------------------------------------------------===//

// full_shard over 4 ranks: every unit has 4 shards. A unit's members are back
// to back in declaration order, even when another unit's parameter comes
// between them, and its fsdp.unit follows its last member. The shard is
// alignTo(ceil(numel / 4), 16): @a holds 100 + 7 = 107 elements, ceil(107/4) =
// 27 -> 32; @b holds 3 -> 1 -> 16; the bf16 @c holds 128 -> 32, no padding.
// A frozen unit is laid out like any other. The batch of 8 becomes 2.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [4], optimizer = #fsdp.sgd<lr = 0.1>>}
// CHECK-NEXT: fsdp.param @a.w unit "a" at 0 : tensor<10x10xf32> = #fsdp.fan_in_uniform
// CHECK-NEXT: fsdp.param @b.w unit "b" at 0 : tensor<3xf32> = #fsdp.zeros
// CHECK-NEXT: fsdp.unit @b numel 3 shard 16 ranks 4 : f32
// CHECK-NEXT: fsdp.param @a.b unit "a" at 100 : tensor<7xf32> = #fsdp.zeros
// CHECK-NEXT: fsdp.unit @a numel 107 shard 32 ranks 4 : f32
// CHECK-NEXT: fsdp.param frozen @c.w unit "c" at 0 : tensor<16x8xbf16> = #fsdp.ones
// CHECK-NEXT: fsdp.unit @c numel 128 shard 32 ranks 4 : bf16
// CHECK-NEXT: func.func @loss(%[[X:.+]]: tensor<2x10xf32>) -> tensor<f32>
// CHECK-NEXT: fsdp.reduce_mean %[[X]] dims [0, 1] : tensor<2x10xf32> -> tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [4], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @a.w unit "a" : tensor<10x10xf32> = #fsdp.fan_in_uniform
  fsdp.param @b.w unit "b" : tensor<3xf32> = #fsdp.zeros
  fsdp.param @a.b unit "a" : tensor<7xf32> = #fsdp.zeros
  fsdp.param frozen @c.w unit "c" : tensor<16x8xbf16> = #fsdp.ones
  func.func @loss(%x: tensor<8x10xf32>) -> tensor<f32> {
    %l = fsdp.reduce_mean %x dims [0, 1] : tensor<8x10xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// shard_grad_op shards over the whole world too.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [4], strategy = shard_grad_op
// CHECK-NEXT: fsdp.param @a.w unit "a" at 0 : tensor<10x10xf32>
// CHECK-NEXT: fsdp.param @a.b unit "a" at 100 : tensor<7xf32>
// CHECK-NEXT: fsdp.unit @a numel 107 shard 32 ranks 4 : f32
// CHECK-NEXT: func.func @loss(%{{.+}}: tensor<2x10xf32>) -> tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [4], strategy = shard_grad_op, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @a.w unit "a" : tensor<10x10xf32> = #fsdp.fan_in_uniform
  fsdp.param @a.b unit "a" : tensor<7xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<8x10xf32>) -> tensor<f32> {
    %l = fsdp.reduce_mean %x dims [0, 1] : tensor<8x10xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// no_shard: one shard per unit (alignTo(107, 16) = 112), but every rank of the
// world still gets a quarter of the batch.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [4], strategy = no_shard
// CHECK-NEXT: fsdp.param @a.w unit "a" at 0 : tensor<10x10xf32>
// CHECK-NEXT: fsdp.param @a.b unit "a" at 100 : tensor<7xf32>
// CHECK-NEXT: fsdp.unit @a numel 107 shard 112 ranks 1 : f32
// CHECK-NEXT: func.func @loss(%{{.+}}: tensor<2x10xf32>) -> tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [4], strategy = no_shard, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @a.w unit "a" : tensor<10x10xf32> = #fsdp.fan_in_uniform
  fsdp.param @a.b unit "a" : tensor<7xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<8x10xf32>) -> tensor<f32> {
    %l = fsdp.reduce_mean %x dims [0, 1] : tensor<8x10xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// hybrid_shard over [2 replicas, 4 shards]: units have 4 shards (ceil(107/4)
// = 27 -> 32) and the batch is split over all 8 ranks.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [2, 4], strategy = hybrid_shard
// CHECK-NEXT: fsdp.param @a.w unit "a" at 0 : tensor<10x10xf32>
// CHECK-NEXT: fsdp.param @a.b unit "a" at 100 : tensor<7xf32>
// CHECK-NEXT: fsdp.unit @a numel 107 shard 32 ranks 4 : f32
// CHECK-NEXT: func.func @loss(%{{.+}}: tensor<1x10xf32>) -> tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [2, 4], strategy = hybrid_shard, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @a.w unit "a" : tensor<10x10xf32> = #fsdp.fan_in_uniform
  fsdp.param @a.b unit "a" : tensor<7xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<8x10xf32>) -> tensor<f32> {
    %l = fsdp.reduce_mean %x dims [0, 1] : tensor<8x10xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// hybrid_shard over [4 replicas, 2 shards]: the shard is ceil(107/2) = 54 -> 64.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [4, 2], strategy = hybrid_shard
// CHECK-NEXT: fsdp.param @a.w unit "a" at 0 : tensor<10x10xf32>
// CHECK-NEXT: fsdp.param @a.b unit "a" at 100 : tensor<7xf32>
// CHECK-NEXT: fsdp.unit @a numel 107 shard 64 ranks 2 : f32
// CHECK-NEXT: func.func @loss(%{{.+}}: tensor<1x10xf32>) -> tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [4, 2], strategy = hybrid_shard, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @a.w unit "a" : tensor<10x10xf32> = #fsdp.fan_in_uniform
  fsdp.param @a.b unit "a" : tensor<7xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<8x10xf32>) -> tensor<f32> {
    %l = fsdp.reduce_mean %x dims [0, 1] : tensor<8x10xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Two ranks, a unit that splits exactly (64 / 2 = 32, already a multiple of
// 16): no padding.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [2]
// CHECK-NEXT: fsdp.param @w unit "u" at 0 : tensor<8x8xf32>
// CHECK-NEXT: fsdp.unit @u numel 64 shard 32 ranks 2 : f32
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "u" : tensor<8x8xf32> = #fsdp.zeros
  func.func @loss(%x: tensor<8x10xf32>) -> tensor<f32> {
    %l = fsdp.reduce_mean %x dims [0, 1] : tensor<8x10xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//===----------------------------------------------------------------------===//
// The batch split
//===----------------------------------------------------------------------===//

// -----

// A small GPT block over 2 ranks: the global batch of 4 sequences becomes 2,
// and every value derived from an input is re-typed: embedding, add with a
// broadcast positional table, layer_norm, matmul, reshape (splitting and
// merging the batch), transpose, batch_matmul, scale, causal_mask, softmax,
// reduce_mean, broadcast, rms_norm, silu, mul, gelu, cross_entropy and mse.
// Parameter reads keep their types.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [2]
// CHECK-NEXT: fsdp.param @wte unit "embed" at 0
// CHECK-NEXT: fsdp.param @wpe unit "embed" at 512
// CHECK-NEXT: fsdp.unit @embed numel 640 shard 320 ranks 2 : f32
// CHECK-NEXT: fsdp.param @ln.g unit "block" at 0
// CHECK-NEXT: fsdp.param @ln.b unit "block" at 16
// CHECK-NEXT: fsdp.param @qkv unit "block" at 32
// CHECK-NEXT: fsdp.param @ln2.g unit "block" at 800
// CHECK-NEXT: fsdp.unit @block numel 816 shard 416 ranks 2 : f32
// CHECK-NEXT: fsdp.param @head.w unit "lm" at 0
// CHECK-NEXT: fsdp.unit @lm numel 512 shard 256 ranks 2 : f32
// CHECK-NEXT: func.func @loss(%[[IDS:.+]]: tensor<2x8xi32>, %[[Y:.+]]: tensor<2x8xi32>, %[[T:.+]]: tensor<2x8x16xf32>) -> tensor<f32>
// CHECK-NEXT: %[[WTE:.+]] = fsdp.use @wte : tensor<32x16xf32>
// CHECK-NEXT: %[[TOK:.+]] = fsdp.embedding %[[WTE]][%[[IDS]]] : tensor<32x16xf32>, tensor<2x8xi32> -> tensor<2x8x16xf32>
// CHECK-NEXT: %[[WPE:.+]] = fsdp.use @wpe : tensor<8x16xf32>
// CHECK-NEXT: %[[X:.+]] = fsdp.add %[[TOK]], %[[WPE]] : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x16xf32>
// CHECK-NEXT: fsdp.use @ln.g : tensor<16xf32>
// CHECK-NEXT: fsdp.use @ln.b : tensor<16xf32>
// CHECK-NEXT: %[[H:.+]] = fsdp.layer_norm %[[X]], %{{.+}}, %{{.+}} : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
// CHECK-NEXT: fsdp.use @qkv : tensor<16x48xf32>
// CHECK-NEXT: %[[QKV:.+]] = fsdp.matmul %[[H]], %{{.+}} : tensor<2x8x16xf32>, tensor<16x48xf32> -> tensor<2x8x48xf32>
// CHECK-NEXT: fsdp.reshape %[[QKV]] : tensor<2x8x48xf32> -> tensor<2x8x3x2x8xf32>
// CHECK-NEXT: fsdp.transpose %{{.+}} [0, 2, 3, 1, 4] : tensor<2x8x3x2x8xf32> -> tensor<2x3x2x8x8xf32>
// CHECK-NEXT: %[[HEADS:.+]] = fsdp.reshape %{{.+}} : tensor<2x3x2x8x8xf32> -> tensor<2x6x8x8xf32>
// CHECK-NEXT: fsdp.batch_matmul %[[HEADS]], %[[HEADS]] transpose_rhs : tensor<2x6x8x8xf32>, tensor<2x6x8x8xf32> -> tensor<2x6x8x8xf32>
// CHECK-NEXT: fsdp.scale %{{.+}} by 0.35 : tensor<2x6x8x8xf32>
// CHECK-NEXT: fsdp.causal_mask %{{.+}} : tensor<2x6x8x8xf32>
// CHECK-NEXT: %[[P:.+]] = fsdp.softmax %{{.+}} dim 3 : tensor<2x6x8x8xf32>
// CHECK-NEXT: fsdp.batch_matmul %[[P]], %[[HEADS]] : tensor<2x6x8x8xf32>, tensor<2x6x8x8xf32> -> tensor<2x6x8x8xf32>
// CHECK-NEXT: fsdp.reduce_mean %{{.+}} dims [1] : tensor<2x6x8x8xf32> -> tensor<2x8x8xf32>
// CHECK-NEXT: fsdp.reshape %{{.+}} : tensor<2x8x8xf32> -> tensor<16x8xf32>
// CHECK-NEXT: fsdp.reshape %{{.+}} : tensor<16x8xf32> -> tensor<2x8x1x8xf32>
// CHECK-NEXT: %[[BC:.+]] = fsdp.broadcast %{{.+}} : tensor<2x8x1x8xf32> -> tensor<2x8x2x8xf32>
// CHECK-NEXT: %[[O:.+]] = fsdp.reshape %[[BC]] : tensor<2x8x2x8xf32> -> tensor<2x8x16xf32>
// CHECK-NEXT: fsdp.use @ln2.g : tensor<16xf32>
// CHECK-NEXT: fsdp.rms_norm %[[O]], %{{.+}} : tensor<2x8x16xf32>, tensor<16xf32>
// CHECK-NEXT: fsdp.silu %{{.+}} : tensor<2x8x16xf32>
// CHECK-NEXT: fsdp.mul %{{.+}}, %[[O]] : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
// CHECK-NEXT: fsdp.gelu %{{.+}} : tensor<2x8x16xf32>
// CHECK-NEXT: %[[HW:.+]] = fsdp.use @head.w : tensor<16x32xf32>
// CHECK-NEXT: %[[LG:.+]] = fsdp.matmul %{{.+}}, %[[HW]] : tensor<2x8x16xf32>, tensor<16x32xf32> -> tensor<2x8x32xf32>
// CHECK-NEXT: %[[CE:.+]] = fsdp.cross_entropy %[[LG]], %[[Y]] : tensor<2x8x32xf32>, tensor<2x8xi32> -> tensor<f32>
// CHECK-NEXT: %[[MSE:.+]] = fsdp.mse %[[O]], %[[T]] : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<f32>
// CHECK-NEXT: %[[L:.+]] = fsdp.add %[[CE]], %[[MSE]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT: return %[[L]] : tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @wte unit "embed" : tensor<32x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @wpe unit "embed" : tensor<8x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @ln.g unit "block" : tensor<16xf32> = #fsdp.ones
  fsdp.param @ln.b unit "block" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @qkv unit "block" : tensor<16x48xf32> = #fsdp.fan_in_uniform
  fsdp.param @ln2.g unit "block" : tensor<16xf32> = #fsdp.ones
  fsdp.param @head.w unit "lm" : tensor<16x32xf32> = #fsdp.fan_in_uniform
  func.func @loss(%ids: tensor<4x8xi32>, %y: tensor<4x8xi32>, %t: tensor<4x8x16xf32>) -> tensor<f32> {
    %wte = fsdp.use @wte : tensor<32x16xf32>
    %tok = fsdp.embedding %wte[%ids] : tensor<32x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
    %wpe = fsdp.use @wpe : tensor<8x16xf32>
    %x = fsdp.add %tok, %wpe : tensor<4x8x16xf32>, tensor<8x16xf32> -> tensor<4x8x16xf32>
    %g = fsdp.use @ln.g : tensor<16xf32>
    %b = fsdp.use @ln.b : tensor<16xf32>
    %h = fsdp.layer_norm %x, %g, %b : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %wqkv = fsdp.use @qkv : tensor<16x48xf32>
    %qkv = fsdp.matmul %h, %wqkv : tensor<4x8x16xf32>, tensor<16x48xf32> -> tensor<4x8x48xf32>
    %r = fsdp.reshape %qkv : tensor<4x8x48xf32> -> tensor<4x8x3x2x8xf32>
    %tr = fsdp.transpose %r [0, 2, 3, 1, 4] : tensor<4x8x3x2x8xf32> -> tensor<4x3x2x8x8xf32>
    %heads = fsdp.reshape %tr : tensor<4x3x2x8x8xf32> -> tensor<4x6x8x8xf32>
    %s = fsdp.batch_matmul %heads, %heads transpose_rhs : tensor<4x6x8x8xf32>, tensor<4x6x8x8xf32> -> tensor<4x6x8x8xf32>
    %sc = fsdp.scale %s by 0.35 : tensor<4x6x8x8xf32>
    %m = fsdp.causal_mask %sc : tensor<4x6x8x8xf32>
    %p = fsdp.softmax %m dim 3 : tensor<4x6x8x8xf32>
    %a = fsdp.batch_matmul %p, %heads : tensor<4x6x8x8xf32>, tensor<4x6x8x8xf32> -> tensor<4x6x8x8xf32>
    %am = fsdp.reduce_mean %a dims [1] : tensor<4x6x8x8xf32> -> tensor<4x8x8xf32>
    %rows = fsdp.reshape %am : tensor<4x8x8xf32> -> tensor<32x8xf32>
    %r4 = fsdp.reshape %rows : tensor<32x8xf32> -> tensor<4x8x1x8xf32>
    %bc = fsdp.broadcast %r4 : tensor<4x8x1x8xf32> -> tensor<4x8x2x8xf32>
    %o = fsdp.reshape %bc : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %g2 = fsdp.use @ln2.g : tensor<16xf32>
    %n = fsdp.rms_norm %o, %g2 : tensor<4x8x16xf32>, tensor<16xf32>
    %si = fsdp.silu %n : tensor<4x8x16xf32>
    %mu = fsdp.mul %si, %o : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x8x16xf32>
    %ge = fsdp.gelu %mu : tensor<4x8x16xf32>
    %wh = fsdp.use @head.w : tensor<16x32xf32>
    %lg = fsdp.matmul %ge, %wh : tensor<4x8x16xf32>, tensor<16x32xf32> -> tensor<4x8x32xf32>
    %ce = fsdp.cross_entropy %lg, %y : tensor<4x8x32xf32>, tensor<4x8xi32> -> tensor<f32>
    %mse = fsdp.mse %o, %t : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<f32>
    %l = fsdp.add %ce, %mse : tensor<f32>, tensor<f32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The same model over 4 ranks: one sequence per rank.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [4]
// CHECK-NEXT: fsdp.param @wte unit "embed" at 0
// CHECK-NEXT: fsdp.param @wpe unit "embed" at 512
// CHECK-NEXT: fsdp.unit @embed numel 640 shard 160 ranks 4 : f32
// CHECK-NEXT: fsdp.param @ln.g unit "block" at 0
// CHECK-NEXT: fsdp.param @ln.b unit "block" at 16
// CHECK-NEXT: fsdp.param @qkv unit "block" at 32
// CHECK-NEXT: fsdp.param @ln2.g unit "block" at 800
// CHECK-NEXT: fsdp.unit @block numel 816 shard 208 ranks 4 : f32
// CHECK-NEXT: fsdp.param @head.w unit "lm" at 0
// CHECK-NEXT: fsdp.unit @lm numel 512 shard 128 ranks 4 : f32
// CHECK-NEXT: func.func @loss(%[[IDS:.+]]: tensor<1x8xi32>, %[[Y:.+]]: tensor<1x8xi32>, %[[T:.+]]: tensor<1x8x16xf32>) -> tensor<f32>
// CHECK-NEXT: %[[WTE:.+]] = fsdp.use @wte : tensor<32x16xf32>
// CHECK-NEXT: %[[TOK:.+]] = fsdp.embedding %[[WTE]][%[[IDS]]] : tensor<32x16xf32>, tensor<1x8xi32> -> tensor<1x8x16xf32>
// CHECK-NEXT: %[[WPE:.+]] = fsdp.use @wpe : tensor<8x16xf32>
// CHECK-NEXT: %[[X:.+]] = fsdp.add %[[TOK]], %[[WPE]] : tensor<1x8x16xf32>, tensor<8x16xf32> -> tensor<1x8x16xf32>
// CHECK-NEXT: fsdp.use @ln.g : tensor<16xf32>
// CHECK-NEXT: fsdp.use @ln.b : tensor<16xf32>
// CHECK-NEXT: %[[H:.+]] = fsdp.layer_norm %[[X]], %{{.+}}, %{{.+}} : tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>
// CHECK-NEXT: fsdp.use @qkv : tensor<16x48xf32>
// CHECK-NEXT: %[[QKV:.+]] = fsdp.matmul %[[H]], %{{.+}} : tensor<1x8x16xf32>, tensor<16x48xf32> -> tensor<1x8x48xf32>
// CHECK-NEXT: fsdp.reshape %[[QKV]] : tensor<1x8x48xf32> -> tensor<1x8x3x2x8xf32>
// CHECK-NEXT: fsdp.transpose %{{.+}} [0, 2, 3, 1, 4] : tensor<1x8x3x2x8xf32> -> tensor<1x3x2x8x8xf32>
// CHECK-NEXT: %[[HEADS:.+]] = fsdp.reshape %{{.+}} : tensor<1x3x2x8x8xf32> -> tensor<1x6x8x8xf32>
// CHECK-NEXT: fsdp.batch_matmul %[[HEADS]], %[[HEADS]] transpose_rhs : tensor<1x6x8x8xf32>, tensor<1x6x8x8xf32> -> tensor<1x6x8x8xf32>
// CHECK-NEXT: fsdp.scale %{{.+}} by 0.35 : tensor<1x6x8x8xf32>
// CHECK-NEXT: fsdp.causal_mask %{{.+}} : tensor<1x6x8x8xf32>
// CHECK-NEXT: %[[P:.+]] = fsdp.softmax %{{.+}} dim 3 : tensor<1x6x8x8xf32>
// CHECK-NEXT: fsdp.batch_matmul %[[P]], %[[HEADS]] : tensor<1x6x8x8xf32>, tensor<1x6x8x8xf32> -> tensor<1x6x8x8xf32>
// CHECK-NEXT: fsdp.reduce_mean %{{.+}} dims [1] : tensor<1x6x8x8xf32> -> tensor<1x8x8xf32>
// CHECK-NEXT: fsdp.reshape %{{.+}} : tensor<1x8x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: fsdp.reshape %{{.+}} : tensor<8x8xf32> -> tensor<1x8x1x8xf32>
// CHECK-NEXT: %[[BC:.+]] = fsdp.broadcast %{{.+}} : tensor<1x8x1x8xf32> -> tensor<1x8x2x8xf32>
// CHECK-NEXT: %[[O:.+]] = fsdp.reshape %[[BC]] : tensor<1x8x2x8xf32> -> tensor<1x8x16xf32>
// CHECK-NEXT: fsdp.use @ln2.g : tensor<16xf32>
// CHECK-NEXT: fsdp.rms_norm %[[O]], %{{.+}} : tensor<1x8x16xf32>, tensor<16xf32>
// CHECK-NEXT: fsdp.silu %{{.+}} : tensor<1x8x16xf32>
// CHECK-NEXT: fsdp.mul %{{.+}}, %[[O]] : tensor<1x8x16xf32>, tensor<1x8x16xf32> -> tensor<1x8x16xf32>
// CHECK-NEXT: fsdp.gelu %{{.+}} : tensor<1x8x16xf32>
// CHECK-NEXT: %[[HW:.+]] = fsdp.use @head.w : tensor<16x32xf32>
// CHECK-NEXT: %[[LG:.+]] = fsdp.matmul %{{.+}}, %[[HW]] : tensor<1x8x16xf32>, tensor<16x32xf32> -> tensor<1x8x32xf32>
// CHECK-NEXT: %[[CE:.+]] = fsdp.cross_entropy %[[LG]], %[[Y]] : tensor<1x8x32xf32>, tensor<1x8xi32> -> tensor<f32>
// CHECK-NEXT: %[[MSE:.+]] = fsdp.mse %[[O]], %[[T]] : tensor<1x8x16xf32>, tensor<1x8x16xf32> -> tensor<f32>
// CHECK-NEXT: %[[L:.+]] = fsdp.add %[[CE]], %[[MSE]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT: return %[[L]] : tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [4], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @wte unit "embed" : tensor<32x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @wpe unit "embed" : tensor<8x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @ln.g unit "block" : tensor<16xf32> = #fsdp.ones
  fsdp.param @ln.b unit "block" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @qkv unit "block" : tensor<16x48xf32> = #fsdp.fan_in_uniform
  fsdp.param @ln2.g unit "block" : tensor<16xf32> = #fsdp.ones
  fsdp.param @head.w unit "lm" : tensor<16x32xf32> = #fsdp.fan_in_uniform
  func.func @loss(%ids: tensor<4x8xi32>, %y: tensor<4x8xi32>, %t: tensor<4x8x16xf32>) -> tensor<f32> {
    %wte = fsdp.use @wte : tensor<32x16xf32>
    %tok = fsdp.embedding %wte[%ids] : tensor<32x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
    %wpe = fsdp.use @wpe : tensor<8x16xf32>
    %x = fsdp.add %tok, %wpe : tensor<4x8x16xf32>, tensor<8x16xf32> -> tensor<4x8x16xf32>
    %g = fsdp.use @ln.g : tensor<16xf32>
    %b = fsdp.use @ln.b : tensor<16xf32>
    %h = fsdp.layer_norm %x, %g, %b : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %wqkv = fsdp.use @qkv : tensor<16x48xf32>
    %qkv = fsdp.matmul %h, %wqkv : tensor<4x8x16xf32>, tensor<16x48xf32> -> tensor<4x8x48xf32>
    %r = fsdp.reshape %qkv : tensor<4x8x48xf32> -> tensor<4x8x3x2x8xf32>
    %tr = fsdp.transpose %r [0, 2, 3, 1, 4] : tensor<4x8x3x2x8xf32> -> tensor<4x3x2x8x8xf32>
    %heads = fsdp.reshape %tr : tensor<4x3x2x8x8xf32> -> tensor<4x6x8x8xf32>
    %s = fsdp.batch_matmul %heads, %heads transpose_rhs : tensor<4x6x8x8xf32>, tensor<4x6x8x8xf32> -> tensor<4x6x8x8xf32>
    %sc = fsdp.scale %s by 0.35 : tensor<4x6x8x8xf32>
    %m = fsdp.causal_mask %sc : tensor<4x6x8x8xf32>
    %p = fsdp.softmax %m dim 3 : tensor<4x6x8x8xf32>
    %a = fsdp.batch_matmul %p, %heads : tensor<4x6x8x8xf32>, tensor<4x6x8x8xf32> -> tensor<4x6x8x8xf32>
    %am = fsdp.reduce_mean %a dims [1] : tensor<4x6x8x8xf32> -> tensor<4x8x8xf32>
    %rows = fsdp.reshape %am : tensor<4x8x8xf32> -> tensor<32x8xf32>
    %r4 = fsdp.reshape %rows : tensor<32x8xf32> -> tensor<4x8x1x8xf32>
    %bc = fsdp.broadcast %r4 : tensor<4x8x1x8xf32> -> tensor<4x8x2x8xf32>
    %o = fsdp.reshape %bc : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %g2 = fsdp.use @ln2.g : tensor<16xf32>
    %n = fsdp.rms_norm %o, %g2 : tensor<4x8x16xf32>, tensor<16xf32>
    %si = fsdp.silu %n : tensor<4x8x16xf32>
    %mu = fsdp.mul %si, %o : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x8x16xf32>
    %ge = fsdp.gelu %mu : tensor<4x8x16xf32>
    %wh = fsdp.use @head.w : tensor<16x32xf32>
    %lg = fsdp.matmul %ge, %wh : tensor<4x8x16xf32>, tensor<16x32xf32> -> tensor<4x8x32xf32>
    %ce = fsdp.cross_entropy %lg, %y : tensor<4x8x32xf32>, tensor<4x8xi32> -> tensor<f32>
    %mse = fsdp.mse %o, %t : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<f32>
    %l = fsdp.add %ce, %mse : tensor<f32>, tensor<f32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// One rank: units of one shard; the types stay those of the model file.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [1]
// CHECK-NEXT: fsdp.param @wte unit "embed" at 0
// CHECK-NEXT: fsdp.param @wpe unit "embed" at 512
// CHECK-NEXT: fsdp.unit @embed numel 640 shard 640 ranks 1 : f32
// CHECK-NEXT: fsdp.param @ln.g unit "block" at 0
// CHECK-NEXT: fsdp.param @ln.b unit "block" at 16
// CHECK-NEXT: fsdp.param @qkv unit "block" at 32
// CHECK-NEXT: fsdp.param @ln2.g unit "block" at 800
// CHECK-NEXT: fsdp.unit @block numel 816 shard 816 ranks 1 : f32
// CHECK-NEXT: fsdp.param @head.w unit "lm" at 0
// CHECK-NEXT: fsdp.unit @lm numel 512 shard 512 ranks 1 : f32
// CHECK-NEXT: func.func @loss(%[[IDS:.+]]: tensor<4x8xi32>, %[[Y:.+]]: tensor<4x8xi32>, %[[T:.+]]: tensor<4x8x16xf32>) -> tensor<f32>
// CHECK-NEXT: %[[WTE:.+]] = fsdp.use @wte : tensor<32x16xf32>
// CHECK-NEXT: %[[TOK:.+]] = fsdp.embedding %[[WTE]][%[[IDS]]] : tensor<32x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
// CHECK-NEXT: %[[WPE:.+]] = fsdp.use @wpe : tensor<8x16xf32>
// CHECK-NEXT: %[[X:.+]] = fsdp.add %[[TOK]], %[[WPE]] : tensor<4x8x16xf32>, tensor<8x16xf32> -> tensor<4x8x16xf32>
// CHECK-NEXT: fsdp.use @ln.g : tensor<16xf32>
// CHECK-NEXT: fsdp.use @ln.b : tensor<16xf32>
// CHECK-NEXT: %[[H:.+]] = fsdp.layer_norm %[[X]], %{{.+}}, %{{.+}} : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
// CHECK-NEXT: fsdp.use @qkv : tensor<16x48xf32>
// CHECK-NEXT: %[[QKV:.+]] = fsdp.matmul %[[H]], %{{.+}} : tensor<4x8x16xf32>, tensor<16x48xf32> -> tensor<4x8x48xf32>
// CHECK-NEXT: fsdp.reshape %[[QKV]] : tensor<4x8x48xf32> -> tensor<4x8x3x2x8xf32>
// CHECK-NEXT: fsdp.transpose %{{.+}} [0, 2, 3, 1, 4] : tensor<4x8x3x2x8xf32> -> tensor<4x3x2x8x8xf32>
// CHECK-NEXT: %[[HEADS:.+]] = fsdp.reshape %{{.+}} : tensor<4x3x2x8x8xf32> -> tensor<4x6x8x8xf32>
// CHECK-NEXT: fsdp.batch_matmul %[[HEADS]], %[[HEADS]] transpose_rhs : tensor<4x6x8x8xf32>, tensor<4x6x8x8xf32> -> tensor<4x6x8x8xf32>
// CHECK-NEXT: fsdp.scale %{{.+}} by 0.35 : tensor<4x6x8x8xf32>
// CHECK-NEXT: fsdp.causal_mask %{{.+}} : tensor<4x6x8x8xf32>
// CHECK-NEXT: %[[P:.+]] = fsdp.softmax %{{.+}} dim 3 : tensor<4x6x8x8xf32>
// CHECK-NEXT: fsdp.batch_matmul %[[P]], %[[HEADS]] : tensor<4x6x8x8xf32>, tensor<4x6x8x8xf32> -> tensor<4x6x8x8xf32>
// CHECK-NEXT: fsdp.reduce_mean %{{.+}} dims [1] : tensor<4x6x8x8xf32> -> tensor<4x8x8xf32>
// CHECK-NEXT: fsdp.reshape %{{.+}} : tensor<4x8x8xf32> -> tensor<32x8xf32>
// CHECK-NEXT: fsdp.reshape %{{.+}} : tensor<32x8xf32> -> tensor<4x8x1x8xf32>
// CHECK-NEXT: %[[BC:.+]] = fsdp.broadcast %{{.+}} : tensor<4x8x1x8xf32> -> tensor<4x8x2x8xf32>
// CHECK-NEXT: %[[O:.+]] = fsdp.reshape %[[BC]] : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
// CHECK-NEXT: fsdp.use @ln2.g : tensor<16xf32>
// CHECK-NEXT: fsdp.rms_norm %[[O]], %{{.+}} : tensor<4x8x16xf32>, tensor<16xf32>
// CHECK-NEXT: fsdp.silu %{{.+}} : tensor<4x8x16xf32>
// CHECK-NEXT: fsdp.mul %{{.+}}, %[[O]] : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x8x16xf32>
// CHECK-NEXT: fsdp.gelu %{{.+}} : tensor<4x8x16xf32>
// CHECK-NEXT: %[[HW:.+]] = fsdp.use @head.w : tensor<16x32xf32>
// CHECK-NEXT: %[[LG:.+]] = fsdp.matmul %{{.+}}, %[[HW]] : tensor<4x8x16xf32>, tensor<16x32xf32> -> tensor<4x8x32xf32>
// CHECK-NEXT: %[[CE:.+]] = fsdp.cross_entropy %[[LG]], %[[Y]] : tensor<4x8x32xf32>, tensor<4x8xi32> -> tensor<f32>
// CHECK-NEXT: %[[MSE:.+]] = fsdp.mse %[[O]], %[[T]] : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<f32>
// CHECK-NEXT: %[[L:.+]] = fsdp.add %[[CE]], %[[MSE]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT: return %[[L]] : tensor<f32>
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @wte unit "embed" : tensor<32x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @wpe unit "embed" : tensor<8x16xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @ln.g unit "block" : tensor<16xf32> = #fsdp.ones
  fsdp.param @ln.b unit "block" : tensor<16xf32> = #fsdp.zeros
  fsdp.param @qkv unit "block" : tensor<16x48xf32> = #fsdp.fan_in_uniform
  fsdp.param @ln2.g unit "block" : tensor<16xf32> = #fsdp.ones
  fsdp.param @head.w unit "lm" : tensor<16x32xf32> = #fsdp.fan_in_uniform
  func.func @loss(%ids: tensor<4x8xi32>, %y: tensor<4x8xi32>, %t: tensor<4x8x16xf32>) -> tensor<f32> {
    %wte = fsdp.use @wte : tensor<32x16xf32>
    %tok = fsdp.embedding %wte[%ids] : tensor<32x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
    %wpe = fsdp.use @wpe : tensor<8x16xf32>
    %x = fsdp.add %tok, %wpe : tensor<4x8x16xf32>, tensor<8x16xf32> -> tensor<4x8x16xf32>
    %g = fsdp.use @ln.g : tensor<16xf32>
    %b = fsdp.use @ln.b : tensor<16xf32>
    %h = fsdp.layer_norm %x, %g, %b : tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %wqkv = fsdp.use @qkv : tensor<16x48xf32>
    %qkv = fsdp.matmul %h, %wqkv : tensor<4x8x16xf32>, tensor<16x48xf32> -> tensor<4x8x48xf32>
    %r = fsdp.reshape %qkv : tensor<4x8x48xf32> -> tensor<4x8x3x2x8xf32>
    %tr = fsdp.transpose %r [0, 2, 3, 1, 4] : tensor<4x8x3x2x8xf32> -> tensor<4x3x2x8x8xf32>
    %heads = fsdp.reshape %tr : tensor<4x3x2x8x8xf32> -> tensor<4x6x8x8xf32>
    %s = fsdp.batch_matmul %heads, %heads transpose_rhs : tensor<4x6x8x8xf32>, tensor<4x6x8x8xf32> -> tensor<4x6x8x8xf32>
    %sc = fsdp.scale %s by 0.35 : tensor<4x6x8x8xf32>
    %m = fsdp.causal_mask %sc : tensor<4x6x8x8xf32>
    %p = fsdp.softmax %m dim 3 : tensor<4x6x8x8xf32>
    %a = fsdp.batch_matmul %p, %heads : tensor<4x6x8x8xf32>, tensor<4x6x8x8xf32> -> tensor<4x6x8x8xf32>
    %am = fsdp.reduce_mean %a dims [1] : tensor<4x6x8x8xf32> -> tensor<4x8x8xf32>
    %rows = fsdp.reshape %am : tensor<4x8x8xf32> -> tensor<32x8xf32>
    %r4 = fsdp.reshape %rows : tensor<32x8xf32> -> tensor<4x8x1x8xf32>
    %bc = fsdp.broadcast %r4 : tensor<4x8x1x8xf32> -> tensor<4x8x2x8xf32>
    %o = fsdp.reshape %bc : tensor<4x8x2x8xf32> -> tensor<4x8x16xf32>
    %g2 = fsdp.use @ln2.g : tensor<16xf32>
    %n = fsdp.rms_norm %o, %g2 : tensor<4x8x16xf32>, tensor<16xf32>
    %si = fsdp.silu %n : tensor<4x8x16xf32>
    %mu = fsdp.mul %si, %o : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x8x16xf32>
    %ge = fsdp.gelu %mu : tensor<4x8x16xf32>
    %wh = fsdp.use @head.w : tensor<16x32xf32>
    %lg = fsdp.matmul %ge, %wh : tensor<4x8x16xf32>, tensor<16x32xf32> -> tensor<4x8x32xf32>
    %ce = fsdp.cross_entropy %lg, %y : tensor<4x8x32xf32>, tensor<4x8xi32> -> tensor<f32>
    %mse = fsdp.mse %o, %t : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<f32>
    %l = fsdp.add %ce, %mse : tensor<f32>, tensor<f32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

// -----

module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "u" : tensor<4xf32> = #fsdp.ones
  // expected-error@+1 {{input #0 'tensor<3x4xf32>': the batch of 3 does not split evenly across 2 ranks}}
  func.func @loss(%x: tensor<3x4xf32>) -> tensor<f32> {
    %l = fsdp.reduce_mean %x dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Every input is batched, so every input needs a dimension 0.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "u" : tensor<4xf32> = #fsdp.ones
  // expected-error@+1 {{input #1 has no batch dimension to split across 2 ranks: 'tensor<f32>'}}
  func.func @loss(%x: tensor<2x4xf32>, %s: tensor<f32>) -> tensor<f32> {
    %l = fsdp.reduce_mean %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A reshape whose leading dimension does not hold whole blocks of rows.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "u" : tensor<4xf32> = #fsdp.ones
  func.func @loss(%x: tensor<4x6xf32>) -> tensor<f32> {
    // expected-error@+1 {{the result 'tensor<3x8xf32>': the batch of 3 does not split evenly across 2 ranks}}
    %r = fsdp.reshape %x : tensor<4x6xf32> -> tensor<3x8xf32>
    %l = fsdp.reduce_mean %r dims [0, 1] : tensor<3x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A broadcast that puts dimensions in front of the batch.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "u" : tensor<4xf32> = #fsdp.ones
  func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
    // expected-error@+1 {{broadcasting adds leading dimensions in front of the batch dimension; the batch cannot be split across 2 ranks}}
    %b = fsdp.broadcast %x : tensor<2x4xf32> -> tensor<3x2x4xf32>
    %l = fsdp.reduce_mean %b dims [0, 1, 2] : tensor<3x2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A parameter broadcast to the global batch shape is not split, so it no
// longer meets the rank's part of the batch.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "u" : tensor<4xf32> = #fsdp.ones
  func.func @loss(%x: tensor<4x4xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<4xf32>
    %b = fsdp.broadcast %w : tensor<4xf32> -> tensor<4x4xf32>
    // expected-error@+2 {{'fsdp.add' op shapes 2x4 and 4x4 do not broadcast}}
    // expected-error@+1 {{cannot compute this op on a part of the batch (split across 2 ranks)}}
    %s = fsdp.add %x, %b : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %l = fsdp.reduce_mean %s dims [0, 1] : tensor<4x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Slicing the batch dimension of a batched value would take other rows on each
// rank.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "u" : tensor<4xf32> = #fsdp.ones
  func.func @loss(%x: tensor<4x4xf32>) -> tensor<f32> {
    // expected-error@+1 {{slices the batch dimension; the batch cannot be split across 2 ranks}}
    %s = fsdp.slice %x dim 0 offset 0 size 2 : tensor<4x4xf32> -> tensor<2x4xf32>
    %l = fsdp.reduce_mean %s dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A slice of another dimension keeps the rank's part of the batch; a slice of a
// parameter's first dimension (a table's first rows) is not batched at all.
// CHECK: fsdp.param @pos
// CHECK: func.func @loss(%[[X:.+]]: tensor<2x4x6xf32>)
// CHECK: %[[XS:.+]] = fsdp.slice %[[X]] dim 2 offset 2 size 4 : tensor<2x4x6xf32> -> tensor<2x4x4xf32>
// CHECK: fsdp.slice %{{.+}} dim 0 offset 0 size 4 : tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK: fsdp.add %[[XS]], %{{.+}} : tensor<2x4x4xf32>, tensor<4x4xf32> -> tensor<2x4x4xf32>
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @pos unit "u" : tensor<8x4xf32> = #fsdp.ones
  func.func @loss(%x: tensor<4x4x6xf32>) -> tensor<f32> {
    %xs = fsdp.slice %x dim 2 offset 2 size 4 : tensor<4x4x6xf32> -> tensor<4x4x4xf32>
    %pos = fsdp.use @pos : tensor<8x4xf32>
    %p = fsdp.slice %pos dim 0 offset 0 size 4 : tensor<8x4xf32> -> tensor<4x4xf32>
    %s = fsdp.add %xs, %p : tensor<4x4x4xf32>, tensor<4x4xf32> -> tensor<4x4x4xf32>
    %l = fsdp.reduce_mean %s dims [0, 1, 2] : tensor<4x4x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// An op with no shape rule whose result is not its first operand's type.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "u" : tensor<4xf32> = #fsdp.ones
  func.func @loss(%ids: tensor<4x2xi32>, %dy: tensor<4x2x4xf32>) -> tensor<f32> {
    // expected-error@+1 {{cannot tell how this op's result depends on the batch, which is split across 2 ranks}}
    %g = fsdp.embedding_grad %ids, %dy : tensor<4x2xi32>, tensor<4x2x4xf32> -> tensor<8x4xf32>
    %l = fsdp.reduce_sum %g dims [0, 1] : tensor<8x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A unit becomes a symbol: its name must be free.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  // expected-error@+1 {{'head' names both this symbol and a unit; rename one of them}}
  fsdp.param @head unit "head" : tensor<4xf32> = #fsdp.ones
  func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
    %l = fsdp.reduce_mean %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Partitioning twice would split the batch twice.
// expected-error@+1 {{the module is partitioned already}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "u" at 0 : tensor<4xf32> = #fsdp.ones
  fsdp.unit @u numel 4 shard 16 ranks 2 : f32
  func.func @loss(%x: tensor<1x4xf32>) -> tensor<f32> {
    %l = fsdp.reduce_mean %x dims [0, 1] : tensor<1x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "u" : tensor<4xf32> = #fsdp.ones
  // expected-error@+1 {{parameter has no unit; run fsdp-form-units first}}
  fsdp.param @v : tensor<4xf32> = #fsdp.ones
  func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
    %l = fsdp.reduce_mean %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// expected-error@+1 {{the module has no 'fsdp.plan'}}
module {
  fsdp.param @w unit "u" : tensor<4xf32> = #fsdp.ones
}

// -----

// expected-error@+1 {{fsdp-partition expects one single-block function, the model's loss}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "u" : tensor<4xf32> = #fsdp.ones
  func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
    %l = fsdp.reduce_mean %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
  func.func @eval(%x: tensor<2x4xf32>) -> tensor<f32> {
    %l = fsdp.reduce_mean %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A reduction over the batch gives per-rank partial values: they are no
// longer batched, so a later reshape keeps its shape.

// CHECK-LABEL: func.func @loss(%{{.+}}: tensor<1x4xf32>)
// CHECK: fsdp.reduce_sum %{{.+}} dims [0] : tensor<1x4xf32> -> tensor<4xf32>
// CHECK: fsdp.reshape %{{.+}} : tensor<4xf32> -> tensor<2x2xf32>
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "u" : tensor<2x2xf32> = #fsdp.ones
  func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
    %s = fsdp.reduce_sum %x dims [0] : tensor<2x4xf32> -> tensor<4xf32>
    %r = fsdp.reshape %s : tensor<4xf32> -> tensor<2x2xf32>
    %w = fsdp.use @w : tensor<2x2xf32>
    %m = fsdp.mul %r, %w : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %l = fsdp.reduce_mean %m dims [0, 1] : tensor<2x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The batch must stay in dimension 0.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "u" : tensor<4xf32> = #fsdp.ones
  func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
    // expected-error@+1 {{moves the batch dimension away from dimension 0; the batch cannot be split across 2 ranks}}
    %t = fsdp.transpose %x [1, 0] : tensor<2x4xf32> -> tensor<4x2xf32>
    %l = fsdp.reduce_mean %t dims [0, 1] : tensor<4x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A parameter broadcast to the global batch shape would be stretched against
// a rank's rows by NumPy broadcasting: that is an error, not a silent mix.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "u" : tensor<4xf32> = #fsdp.ones
  func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<4xf32>
    %b = fsdp.broadcast %w : tensor<4xf32> -> tensor<2x4xf32>
    // expected-error@+1 {{combines a part of the batch ('tensor<1x4xf32>') with a value of the global batch size; the batch cannot be split across 2 ranks}}
    %m = fsdp.mul %x, %b : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    %l = fsdp.reduce_mean %m dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
