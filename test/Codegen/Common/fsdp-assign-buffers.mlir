// RUN: fsdp-opt %s -split-input-file -fsdp-assign-buffers -verify-diagnostics | FileCheck %s

// Five buffers after a 128-byte persistent part, placed largest first at the
// lowest 64-byte aligned offset free during their life:
// - %b (128 B) is live to the end: transient offset 0 (arena 128);
// - %a (64 B), live through the fill of its expand_shape: 64 (arena 256);
// - %g (64 B) starts after %a's last use, so it reuses its bytes, and lives
//   until the wait of the collective that got its address: arena 256;
// - %c (32 B) overlaps %b and %g: 192 (arena 320);
// - %d (16 B) starts before the wait, so it must not share %g's bytes: 256
//   (arena 384).
// The arena grows to 128 + 272 bytes; at most 240 bytes are live at once.

// CHECK-LABEL: module attributes {fsdp.manifest = #fsdp.manifest<
// CHECK-SAME: arena_bytes = 400, persistent_bytes = 128,
// CHECK-SAME: transient = #fsdp.transient_plan<peak_bytes = 272, live_bytes = 240, buffers = 5, live_buffers = 4, gathered_bytes = 64, gradient_bytes = 0, collective_bytes = 0, gradient_shard_bytes = 0, activation_bytes = 176, dtype_bytes = {bytes = 64 : i64, f32 = 176 : i64}>>}
// CHECK: func.func @fsdp_train_step(%[[ARENA:.+]]: memref<400xi8>, %{{.+}}: i64, %{{.+}}: f32) -> f32
// CHECK-NOT: memref.alloc
// CHECK: %[[A:.+]] = memref.view %[[ARENA]][%c256][] {fsdp.buffer = "activation"} : memref<400xi8> to memref<16xf32>
// CHECK: %[[B:.+]] = memref.view %[[ARENA]][%c128][] {fsdp.buffer = "activation"} : memref<400xi8> to memref<32xf32>
// CHECK: memref.expand_shape %[[A]]
// CHECK: %[[C:.+]] = memref.view %[[ARENA]][%c320][] {fsdp.buffer = "activation"} : memref<400xi8> to memref<8xf32>
// CHECK: %[[G:.+]] = memref.view %[[ARENA]][%c256{{.*}}][] {fsdp.buffer = "gathered"} : memref<400xi8> to memref<64xi8>
// CHECK: memref.extract_aligned_pointer_as_index %[[G]]
// CHECK: %[[D:.+]] = memref.view %[[ARENA]][%c384][] {fsdp.buffer = "activation"} : memref<400xi8> to memref<4xf32>
// CHECK: call @fsdprt_wait
// CHECK: memref.load %[[B]]
// CHECK: memref.load %[[C]]
// CHECK-NOT: memref.alloc
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 128, persistent_bytes = 128, local_batch = 1, shard_ranks = 1>} {
  func.func private @fsdprt_all_gather_start(!llvm.ptr, !llvm.ptr, i64, i32) -> i32
  func.func private @fsdprt_wait(i32)
  func.func @fsdp_train_step(%arena: memref<128xi8>, %step: i64, %lr: f32) -> f32 {
    %zero = arith.constant 0.0 : f32
    %c0 = arith.constant 0 : index
    %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
    %b = memref.alloc() {alignment = 64 : i64} : memref<32xf32>
    linalg.fill ins(%zero : f32) outs(%a : memref<16xf32>)
    %a2 = memref.expand_shape %a [[0, 1]] output_shape [4, 4] : memref<16xf32> into memref<4x4xf32>
    linalg.fill ins(%zero : f32) outs(%a2 : memref<4x4xf32>)
    %c = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
    linalg.fill ins(%zero : f32) outs(%c : memref<8xf32>)
    %g = memref.alloc() {alignment = 64 : i64, fsdp.buffer = "gathered"} : memref<64xi8>
    %p = memref.extract_aligned_pointer_as_index %g : memref<64xi8> -> index
    %p64 = arith.index_cast %p : index to i64
    %ptr = llvm.inttoptr %p64 : i64 to !llvm.ptr
    %n = arith.constant 32 : i64
    %grp = arith.constant 1 : i32
    %h = func.call @fsdprt_all_gather_start(%ptr, %ptr, %n, %grp) : (!llvm.ptr, !llvm.ptr, i64, i32) -> i32
    %d = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
    linalg.fill ins(%zero : f32) outs(%d : memref<4xf32>)
    func.call @fsdprt_wait(%h) : (i32) -> ()
    %v = memref.load %b[%c0] : memref<32xf32>
    %w = memref.load %c[%c0] : memref<8xf32>
    %s = arith.addf %v, %w : f32
    return %s : f32
  }
}

// -----

// A buffer of a loop's body (the attention's key blocks) lives within an
// iteration, every iteration reusing its bytes: %a does not share bytes with
// %x, which the loop reads to its end, but %b, allocated after %a's last use
// in the same iteration, takes %a's; %y, after the loop, takes %x's (arena
// 64 + 128).
// CHECK-LABEL: module attributes {fsdp.manifest = #fsdp.manifest<
// CHECK-SAME: arena_bytes = 192,
// CHECK: %[[X:.+]] = memref.view %[[ARENA:.+]][%c64][] {fsdp.buffer = "activation"} : memref<192xi8> to memref<16xf32>
// CHECK: scf.for
// CHECK: %[[A:.+]] = memref.view %[[ARENA]][%c128][] {fsdp.buffer = "activation"} : memref<192xi8> to memref<16xf32>
// CHECK: linalg.copy ins(%[[X]] : memref<16xf32>) outs(%[[A]] : memref<16xf32>)
// CHECK: %[[B:.+]] = memref.view %[[ARENA]][%c128{{.*}}][] {fsdp.buffer = "activation"} : memref<192xi8> to memref<16xf32>
// CHECK: linalg.copy ins(%[[X]] : memref<16xf32>) outs(%[[B]] : memref<16xf32>)
// CHECK: memref.view %[[ARENA]][%c64{{.*}}][] {fsdp.buffer = "activation"} : memref<192xi8> to memref<16xf32>
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 64, persistent_bytes = 64, local_batch = 1, shard_ranks = 1>} {
  func.func @fsdp_train_step(%arena: memref<64xi8>, %step: i64, %lr: f32) -> f32 {
    %zero = arith.constant 0.0 : f32
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %x = memref.alloc() : memref<16xf32>
    linalg.fill ins(%zero : f32) outs(%x : memref<16xf32>)
    scf.for %i = %c0 to %c2 step %c1 {
      %a = memref.alloc() : memref<16xf32>
      linalg.copy ins(%x : memref<16xf32>) outs(%a : memref<16xf32>)
      %b = memref.alloc() : memref<16xf32>
      linalg.copy ins(%x : memref<16xf32>) outs(%b : memref<16xf32>)
    }
    %y = memref.alloc() : memref<16xf32>
    linalg.fill ins(%zero : f32) outs(%y : memref<16xf32>)
    %v = memref.load %y[%c0] : memref<16xf32>
    return %v : f32
  }
}

// -----

// A buffer of any other region has no single life in the step's block.
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 64, persistent_bytes = 64, local_batch = 1, shard_ranks = 1>} {
  func.func @fsdp_train_step(%arena: memref<64xi8>, %step: i64, %lr: f32) -> f32 {
    %zero = arith.constant 0.0 : f32
    %true = arith.constant true
    scf.if %true {
      // expected-error@+1 {{'memref.alloc' op is not a static buffer of the step's block or of a loop in it; the arena plan cannot place it}}
      %a = memref.alloc() : memref<4xf32>
      linalg.fill ins(%zero : f32) outs(%a : memref<4xf32>)
    }
    return %zero : f32
  }
}

// -----

// expected-error@+1 {{fsdp-assign-buffers needs the manifest of convert-fsdp-to-runtime}}
module {
  func.func @fsdp_train_step(%arena: memref<64xi8>, %step: i64, %lr: f32) -> f32 {
    %zero = arith.constant 0.0 : f32
    return %zero : f32
  }
}

// -----

// A unit's gradient shard (fsdp.gradient_of) is the step's result for the
// trainer to read after it: it lives to the end of the step, so %t, allocated
// after its last use, cannot take its bytes, and its offset is written into
// the manifest's unit as grad_offset.
// CHECK-LABEL: module attributes {fsdp.manifest = #fsdp.manifest<
// CHECK-SAME: units = [#fsdp.manifest_unit<name = "fc", dtype = f32, trainable = true, numel = 16, shard_numel = 16, param_offset = 0, grad_offset = 64>]
// CHECK-SAME: gradient_shard_bytes = 64
// CHECK: %[[GRAD:.+]] = memref.view %{{.+}}[%c64][] {fsdp.buffer = "gradient_shard"} : memref<192xi8> to memref<16xf32>
// CHECK: %[[T:.+]] = memref.view %{{.+}}[%c128][] {fsdp.buffer = "activation"} : memref<192xi8> to memref<16xf32>
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 64, persistent_bytes = 64, local_batch = 1, shard_ranks = 1, units = [#fsdp.manifest_unit<name = "fc", dtype = f32, trainable = true, numel = 16, shard_numel = 16, param_offset = 0>]>} {
  func.func @fsdp_train_step(%arena: memref<64xi8>, %step: i64, %lr: f32) -> f32 {
    %zero = arith.constant 0.0 : f32
    %c0 = arith.constant 0 : index
    %g = memref.alloc() {alignment = 64 : i64, fsdp.buffer = "gradient_shard", fsdp.gradient_of = "fc"} : memref<16xf32>
    linalg.fill ins(%zero : f32) outs(%g : memref<16xf32>)
    %v = memref.load %g[%c0] : memref<16xf32>
    %t = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
    linalg.fill ins(%v : f32) outs(%t : memref<16xf32>)
    %w = memref.load %t[%c0] : memref<16xf32>
    return %w : f32
  }
}
