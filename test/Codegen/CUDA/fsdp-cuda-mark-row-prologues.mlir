// RUN: fsdp-opt %s -split-input-file -fsdp-cuda-mark-row-prologues | FileCheck %s
// RUN: fsdp-opt %s -split-input-file -fsdp-assign-buffers | FileCheck %s --check-prefix=APART
// RUN: fsdp-opt %s -split-input-file -fsdp-cuda-mark-row-prologues -fsdp-assign-buffers | FileCheck %s --check-prefix=PLAN

// A residual add, then a norm's sum of squares over each row of what it made
// (past the new buffer and the fill that starts it): the add is marked, and
// the buffer plan keeps its inputs live until the reduction, so the row sums
// get bytes of their own instead of the second input's (2176), which another
// block would still be adding when a block stores its row's sum.
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK:       linalg.generic
// CHECK-SAME:    ins(%[[X:.+]], %[[Y:.+]] : memref<4x128xf32>, memref<4x128xf32>)
// CHECK-SAME:    attrs = {fsdp.row_prologue}
// CHECK:       linalg.generic
// CHECK-NOT:     fsdp.row_prologue
// CHECK-SAME:    iterator_types = ["parallel", "reduction"]
// APART-LABEL: func.func @fsdp_train_step
// APART:       memref.view %{{.+}}[%c2176{{.*}}][] {fsdp.buffer = "activation"} : memref<6272xi8> to memref<4xf32>
// PLAN-LABEL:  func.func @fsdp_train_step
// PLAN-DAG:    memref.view %{{.+}}[%c128][] {{.*}} to memref<4x128xf32>
// PLAN-DAG:    memref.view %{{.+}}[%c2176][] {{.*}} to memref<4x128xf32>
// PLAN-DAG:    memref.view %{{.+}}[%c6272][] {{.*}} to memref<4xf32>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 128, persistent_bytes = 128, local_batch = 1, shard_ranks = 1>} {
  func.func @fsdp_train_step(%arena: memref<128xi8>, %step: i64, %lr: f32) -> f32 {
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %c0 = arith.constant 0 : index
    %x = memref.alloc() {alignment = 64 : i64} : memref<4x128xf32>
    %y = memref.alloc() {alignment = 64 : i64} : memref<4x128xf32>
    linalg.fill ins(%one : f32) outs(%x : memref<4x128xf32>)
    linalg.fill ins(%one : f32) outs(%y : memref<4x128xf32>)
    %h = memref.alloc() {alignment = 64 : i64} : memref<4x128xf32>
    linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%x, %y : memref<4x128xf32>, memref<4x128xf32>) outs(%h : memref<4x128xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    }
    %sum = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
    linalg.fill ins(%zero : f32) outs(%sum : memref<4xf32>)
    linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
        ins(%h : memref<4x128xf32>) outs(%sum : memref<4xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %sq = arith.mulf %in, %in : f32
      %s = arith.addf %sq, %acc : f32
      linalg.yield %s : f32
    }
    %out = memref.alloc() {alignment = 64 : i64} : memref<4x128xf32>
    linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%h, %sum : memref<4x128xf32>, memref<4xf32>) outs(%out : memref<4x128xf32>) {
    ^bb0(%in: f32, %total: f32, %o: f32):
      %s = arith.divf %in, %total : f32
      linalg.yield %s : f32
    }
    %v = memref.load %out[%c0, %c0] : memref<4x128xf32>
    return %v : f32
  }
}

// -----

// A block reduction over the rows of the add's second input that reads the
// add's result transposed: a block's row is not the row the add makes there.
// Not marked.
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK-NOT:   fsdp.row_prologue
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 128, persistent_bytes = 128, local_batch = 1, shard_ranks = 1>} {
  func.func @fsdp_train_step(%arena: memref<128xi8>, %step: i64, %lr: f32) -> f32 {
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %c0 = arith.constant 0 : index
    %x = memref.alloc() {alignment = 64 : i64} : memref<128x128xf32>
    %y = memref.alloc() {alignment = 64 : i64} : memref<128x128xf32>
    linalg.fill ins(%one : f32) outs(%x : memref<128x128xf32>)
    linalg.fill ins(%one : f32) outs(%y : memref<128x128xf32>)
    %h = memref.alloc() {alignment = 64 : i64} : memref<128x128xf32>
    linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%x, %y : memref<128x128xf32>, memref<128x128xf32>) outs(%h : memref<128x128xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    }
    %sum = memref.alloc() {alignment = 64 : i64} : memref<128xf32>
    linalg.fill ins(%zero : f32) outs(%sum : memref<128xf32>)
    linalg.generic {indexing_maps = [#id2, #tr, #row], iterator_types = ["parallel", "reduction"]}
        ins(%y, %h : memref<128x128xf32>, memref<128x128xf32>) outs(%sum : memref<128xf32>) {
    ^bb0(%rowwise: f32, %in: f32, %acc: f32):
      %sq = arith.mulf %rowwise, %in : f32
      %s = arith.addf %sq, %acc : f32
      linalg.yield %s : f32
    }
    %out = memref.alloc() {alignment = 64 : i64} : memref<128x128xf32>
    linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%h, %sum : memref<128x128xf32>, memref<128xf32>) outs(%out : memref<128x128xf32>) {
    ^bb0(%in: f32, %total: f32, %o: f32):
      %s = arith.divf %in, %total : f32
      linalg.yield %s : f32
    }
    %v = memref.load %out[%c0, %c0] : memref<128x128xf32>
    return %v : f32
  }
}

// -----

// Rows of 32 elements are summed by a thread each, not by a block: not marked.
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK-NOT:   fsdp.row_prologue
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 128, persistent_bytes = 128, local_batch = 1, shard_ranks = 1>} {
  func.func @fsdp_train_step(%arena: memref<128xi8>, %step: i64, %lr: f32) -> f32 {
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %c0 = arith.constant 0 : index
    %x = memref.alloc() {alignment = 64 : i64} : memref<4x32xf32>
    %y = memref.alloc() {alignment = 64 : i64} : memref<4x32xf32>
    linalg.fill ins(%one : f32) outs(%x : memref<4x32xf32>)
    linalg.fill ins(%one : f32) outs(%y : memref<4x32xf32>)
    %h = memref.alloc() {alignment = 64 : i64} : memref<4x32xf32>
    linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%x, %y : memref<4x32xf32>, memref<4x32xf32>) outs(%h : memref<4x32xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    }
    %sum = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
    linalg.fill ins(%zero : f32) outs(%sum : memref<4xf32>)
    linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
        ins(%h : memref<4x32xf32>) outs(%sum : memref<4xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %sq = arith.mulf %in, %in : f32
      %s = arith.addf %sq, %acc : f32
      linalg.yield %s : f32
    }
    %out = memref.alloc() {alignment = 64 : i64} : memref<4x32xf32>
    linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%h, %sum : memref<4x32xf32>, memref<4xf32>) outs(%out : memref<4x32xf32>) {
    ^bb0(%in: f32, %total: f32, %o: f32):
      %s = arith.divf %in, %total : f32
      linalg.yield %s : f32
    }
    %v = memref.load %out[%c0, %c0] : memref<4x32xf32>
    return %v : f32
  }
}

// -----

// A collective between them: not marked.
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK-NOT:   fsdp.row_prologue
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 128, persistent_bytes = 128, local_batch = 1, shard_ranks = 1>} {
  func.func private @fsdprt_collective(i64)
  func.func @fsdp_train_step(%arena: memref<128xi8>, %step: i64, %lr: f32) -> f32 {
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %c0 = arith.constant 0 : index
    %x = memref.alloc() {alignment = 64 : i64} : memref<4x128xf32>
    %y = memref.alloc() {alignment = 64 : i64} : memref<4x128xf32>
    linalg.fill ins(%one : f32) outs(%x : memref<4x128xf32>)
    linalg.fill ins(%one : f32) outs(%y : memref<4x128xf32>)
    %h = memref.alloc() {alignment = 64 : i64} : memref<4x128xf32>
    linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%x, %y : memref<4x128xf32>, memref<4x128xf32>) outs(%h : memref<4x128xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    }
    func.call @fsdprt_collective(%step) : (i64) -> ()
    %sum = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
    linalg.fill ins(%zero : f32) outs(%sum : memref<4xf32>)
    linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
        ins(%h : memref<4x128xf32>) outs(%sum : memref<4xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %sq = arith.mulf %in, %in : f32
      %s = arith.addf %sq, %acc : f32
      linalg.yield %s : f32
    }
    %out = memref.alloc() {alignment = 64 : i64} : memref<4x128xf32>
    linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%h, %sum : memref<4x128xf32>, memref<4xf32>) outs(%out : memref<4x128xf32>) {
    ^bb0(%in: f32, %total: f32, %o: f32):
      %s = arith.divf %in, %total : f32
      linalg.yield %s : f32
    }
    %v = memref.load %out[%c0, %c0] : memref<4x128xf32>
    return %v : f32
  }
}
