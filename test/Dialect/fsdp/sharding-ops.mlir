// The ops of a partitioned step (fsdp.unit, fsdp.all_gather, fsdp.view,
// fsdp.free, fsdp.flatten, fsdp.reduce_scatter, fsdp.all_reduce), a
// parameter's `at` offset and fsdp.update of a unit's shard parse, verify and
// print; the printed form, custom or generic, parses back to itself.
// RUN: fsdp-opt %s | FileCheck %s
// RUN: fsdp-opt %s | fsdp-opt | FileCheck %s
// RUN: fsdp-opt %s -mlir-print-op-generic | fsdp-opt | FileCheck %s
// RUN: fsdp-opt %s -mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: module attributes
module attributes {fsdp.plan = #fsdp.plan<grid = [2, 2], strategy = hybrid_shard, optimizer = #fsdp.sgd<lr = 0.1>>} {
  // Two members back to back: 32 + 8 = 40 elements, padded to 2 shards of 32.
  // CHECK: fsdp.param @fc.w unit "fc" at 0 : tensor<4x8xf32> = #fsdp.fan_in_uniform
  // CHECK-NEXT: fsdp.param @fc.b unit "fc" at 32 : tensor<8xf32> = #fsdp.zeros
  // CHECK-NEXT: fsdp.unit @fc numel 40 shard 32 ranks 2 : f32
  // GENERIC: "fsdp.param"() <{init = #fsdp.zeros, offset = 32 : i64, sym_name = "fc.b", type = tensor<8xf32>, unit = "fc"}> : () -> ()
  // GENERIC: "fsdp.unit"() <{element_type = f32, numel = 40 : i64, ranks = 2 : i64, shard = 32 : i64, sym_name = "fc"}> : () -> ()
  fsdp.param @fc.w unit "fc" at 0 : tensor<4x8xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc.b unit "fc" at 32 : tensor<8xf32> = #fsdp.zeros
  fsdp.unit @fc numel 40 shard 32 ranks 2 : f32

  // A frozen bf16 unit; `at` follows `unit` and precedes the type.
  // CHECK-NEXT: fsdp.param frozen @emb.table unit "emb" at 0 : tensor<16x4xbf16> = #fsdp.ones
  // CHECK-NEXT: fsdp.unit @emb numel 64 shard 16 ranks 4 : bf16
  fsdp.param frozen @emb.table unit "emb" at 0 : tensor<16x4xbf16> = #fsdp.ones
  fsdp.unit @emb numel 64 shard 16 ranks 4 : bf16

  // One shard (no_shard, or one rank): the flat buffer is the unit itself.
  // CHECK-NEXT: fsdp.param @head unit "whole" at 0 : tensor<10xf32> = #fsdp.zeros
  // CHECK-NEXT: fsdp.unit @whole numel 10 shard 16 ranks 1 : f32
  fsdp.param @head unit "whole" at 0 : tensor<10xf32> = #fsdp.zeros
  fsdp.unit @whole numel 10 shard 16 ranks 1 : f32

  // CHECK-LABEL: func.func @step
  // CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>, %[[STEP:.+]]: i64, %[[LR:.+]]: f32)
  func.func @step(%x: tensor<2x4xf32>, %step: i64, %lr: f32) -> tensor<f32> {
    // CHECK-NEXT: %[[G:.+]] = fsdp.all_gather @fc : tensor<64xf32>
    // CHECK-NEXT: %[[W:.+]] = fsdp.view @fc.w in %[[G]] : tensor<64xf32> -> tensor<4x8xf32>
    // CHECK-NEXT: %[[B:.+]] = fsdp.view @fc.b in %[[G]] : tensor<64xf32> -> tensor<8xf32>
    // CHECK-NEXT: %[[M:.+]] = fsdp.matmul %[[X]], %[[W]]
    // CHECK-NEXT: fsdp.free %[[G]] : tensor<64xf32>
    // GENERIC: %[[GG:.+]] = "fsdp.all_gather"() <{unit = @fc}> : () -> tensor<64xf32>
    // GENERIC-NEXT: "fsdp.view"(%[[GG]]) <{param = @fc.w}> : (tensor<64xf32>) -> tensor<4x8xf32>
    // GENERIC: "fsdp.free"(%[[GG]]) : (tensor<64xf32>) -> ()
    %g = fsdp.all_gather @fc : tensor<64xf32>
    %w = fsdp.view @fc.w in %g : tensor<64xf32> -> tensor<4x8xf32>
    %b = fsdp.view @fc.b in %g : tensor<64xf32> -> tensor<8xf32>
    %m = fsdp.matmul %x, %w : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
    fsdp.free %g : tensor<64xf32>

    // CHECK-NEXT: %[[F:.+]] = fsdp.flatten @fc(%[[W]], %[[B]]) : tensor<4x8xf32>, tensor<8xf32> -> tensor<64xf32>
    // CHECK-NEXT: %[[SA:.+]] = fsdp.reduce_scatter %[[F]] avg : tensor<64xf32> -> tensor<32xf32>
    // CHECK-NEXT: %[[SS:.+]] = fsdp.reduce_scatter %[[F]] sum : tensor<64xf32> -> tensor<32xf32>
    // CHECK-NEXT: %[[RA:.+]] = fsdp.all_reduce %[[SA]] avg over replica : tensor<32xf32>
    // CHECK-NEXT: %[[RS:.+]] = fsdp.all_reduce %[[SS]] sum over world : tensor<32xf32>
    // GENERIC: "fsdp.flatten"(%{{.+}}, %{{.+}}) <{unit = @fc}> : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<64xf32>
    // GENERIC-NEXT: "fsdp.reduce_scatter"(%{{.+}}) <{reduction = 1 : i32}> : (tensor<64xf32>) -> tensor<32xf32>
    // GENERIC-NEXT: "fsdp.reduce_scatter"(%{{.+}}) <{reduction = 0 : i32}> : (tensor<64xf32>) -> tensor<32xf32>
    // GENERIC-NEXT: "fsdp.all_reduce"(%{{.+}}) <{group = 2 : i32, reduction = 1 : i32}> : (tensor<32xf32>) -> tensor<32xf32>
    // GENERIC-NEXT: "fsdp.all_reduce"(%{{.+}}) <{group = 0 : i32, reduction = 0 : i32}> : (tensor<32xf32>) -> tensor<32xf32>
    %f = fsdp.flatten @fc (%w, %b) : tensor<4x8xf32>, tensor<8xf32> -> tensor<64xf32>
    %sa = fsdp.reduce_scatter %f avg : tensor<64xf32> -> tensor<32xf32>
    %ss = fsdp.reduce_scatter %f sum : tensor<64xf32> -> tensor<32xf32>
    %ra = fsdp.all_reduce %sa avg over replica : tensor<32xf32>
    %rs = fsdp.all_reduce %ss sum over world : tensor<32xf32>

    // CHECK-NEXT: %[[L:.+]] = fsdp.reduce_sum %[[M]] dims [0, 1]
    // CHECK-NEXT: %[[LS:.+]] = fsdp.all_reduce %[[L]] sum over shard : tensor<f32>
    // CHECK-NEXT: %[[C:.+]] = fsdp.clip_coefficient %[[LS]] max_norm 1.0 : tensor<f32>
    // GENERIC: "fsdp.all_reduce"(%{{.+}}) <{group = 1 : i32, reduction = 0 : i32}> : (tensor<f32>) -> tensor<f32>
    %l = fsdp.reduce_sum %m dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
    %ls = fsdp.all_reduce %l sum over shard : tensor<f32>
    %c = fsdp.clip_coefficient %ls max_norm 1.0 : tensor<f32>

    // The update of a unit takes this rank's shard of its gradient.
    // CHECK-NEXT: fsdp.update @fc, %[[RA]] step %[[STEP]] lr %[[LR]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<32xf32>
    // CHECK-NEXT: fsdp.update @fc, %[[RS]] step %[[STEP]] lr %[[LR]] scaled %[[C]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<32xf32>, tensor<f32>
    // GENERIC: "fsdp.update"(%{{.+}}, %{{.+}}, %{{.+}}) <{optimizer = #fsdp.sgd<lr = 0.1>, param = @fc}> : (tensor<32xf32>, i64, f32) -> ()
    fsdp.update @fc, %ra step %step lr %lr {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<32xf32>
    fsdp.update @fc, %rs step %step lr %lr scaled %c {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<32xf32>, tensor<f32>

    // A one-shard unit: flatten without a reduce_scatter, a replica all_reduce.
    // CHECK-NEXT: %[[HG:.+]] = fsdp.use @head : tensor<10xf32>
    // CHECK-NEXT: %[[HF:.+]] = fsdp.flatten @whole(%[[HG]]) : tensor<10xf32> -> tensor<16xf32>
    // CHECK-NEXT: %[[HR:.+]] = fsdp.all_reduce %[[HF]] avg over replica : tensor<16xf32>
    // CHECK-NEXT: fsdp.update @whole, %[[HR]] step %[[STEP]] lr %[[LR]] {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<16xf32>
    %h = fsdp.use @head : tensor<10xf32>
    %hf = fsdp.flatten @whole (%h) : tensor<10xf32> -> tensor<16xf32>
    %hr = fsdp.all_reduce %hf avg over replica : tensor<16xf32>
    fsdp.update @whole, %hr step %step lr %lr {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<16xf32>

    // bf16 collectives.
    // CHECK-NEXT: %[[E:.+]] = fsdp.all_gather @emb : tensor<64xbf16>
    // CHECK-NEXT: fsdp.view @emb.table in %[[E]] : tensor<64xbf16> -> tensor<16x4xbf16>
    // CHECK-NEXT: fsdp.free %[[E]] : tensor<64xbf16>
    %e = fsdp.all_gather @emb : tensor<64xbf16>
    %t = fsdp.view @emb.table in %e : tensor<64xbf16> -> tensor<16x4xbf16>
    fsdp.free %e : tensor<64xbf16>

    // Mixed precision: an f32 unit gathered in bf16, its bf16 gradients
    // widened into an f32 flat gradient.
    // CHECK-NEXT: %[[MG:.+]] = fsdp.all_gather @fc : tensor<64xbf16>
    // CHECK-NEXT: %[[MW:.+]] = fsdp.view @fc.w in %[[MG]] : tensor<64xbf16> -> tensor<4x8xbf16>
    // CHECK-NEXT: %[[MB:.+]] = fsdp.view @fc.b in %[[MG]] : tensor<64xbf16> -> tensor<8xbf16>
    // CHECK-NEXT: fsdp.flatten @fc(%[[MW]], %[[MB]]) : tensor<4x8xbf16>, tensor<8xbf16> -> tensor<64xf32>
    // CHECK-NEXT: fsdp.flatten @fc(%[[MW]], %[[MB]]) : tensor<4x8xbf16>, tensor<8xbf16> -> tensor<64xbf16>
    %mg = fsdp.all_gather @fc : tensor<64xbf16>
    %mw = fsdp.view @fc.w in %mg : tensor<64xbf16> -> tensor<4x8xbf16>
    %mb = fsdp.view @fc.b in %mg : tensor<64xbf16> -> tensor<8xbf16>
    %mf = fsdp.flatten @fc (%mw, %mb) : tensor<4x8xbf16>, tensor<8xbf16> -> tensor<64xf32>
    %mh = fsdp.flatten @fc (%mw, %mb) : tensor<4x8xbf16>, tensor<8xbf16> -> tensor<64xbf16>
    // CHECK-NEXT: return %[[L]] : tensor<f32>
    return %l : tensor<f32>
  }
}
