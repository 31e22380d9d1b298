// RUN: fsdp-opt %s -split-input-file -fsdp-record-step-flops -verify-diagnostics | FileCheck %s

// Counted by hand:
// - products: an f32 product of 8x32 by 32x16, 2 x 8 x 16 x 32 = 8,192; a bf16
//   batched one, 3 matrices of 4x16 by 16x8, 2 x 3 x 4 x 8 x 16 = 3,072 (bf16); one
//   marked as computed before (fsdp.recomputed), 2x4 by 4x4, 64. Together 11,328, of
//   which 3,072 in bf16.
// - attention: a causal forward of batch 2, 4 heads, 16 positions, head dim 8:
//   2 products of 2 x 2 x 4 x 16 x 16 x 8, halved: 2 x 16,384 = 32,768; its
//   backward, 5 of the same: 81,920. Together 114,688.
// - other: a loop nest over 4x8 points with an addition, a product and an
//   exponential (3 each; its select, conversion and comparison none): 96; and
//   a loop of 5 trips over a maximum of 16 points: 80. Together 176.
// - recomputed: the marked product (64); the attention backward's scores, one of
//   its 5 products (16,384); the manifest's remat products (1,000) and its
//   attentions' forward products (2,048 as loops; 1,536 as fused calls, which
//   halve the causal 1,024 of them): the step fuses attention, so 1,000 + 1,536 =
//   2,536. Together 18,984.

// CHECK-LABEL: module attributes {fsdp.manifest = #fsdp.manifest<
// CHECK-SAME: step_flops = #fsdp.step_flops<products = 11328, bf16_products = 3072, attention = 114688, recomputed = 18984, other = 176>
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 4096, persistent_bytes = 4096, local_batch = 1, shard_ranks = 1, recompute = #fsdp.recompute<ops = 3, products = 1, product_flops = 1000, other_elements = 0, step_product_flops = 12328, attention_flops = 2048, fused_attention_flops = 1536>>} {
  func.func private @fsdprt_sgemm(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64)
  func.func private @fsdprt_gemm_bf16_batched(i32, i32, i64, i64, i64, i64, f32, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, f32, !llvm.ptr, i64, i64)
  func.func private @fsdprt_attention_bf16(i64, i64, i64, i64, i64, i32, i64, f32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64)
  func.func private @fsdprt_attention_grad_bf16(i64, i64, i64, i64, i64, i32, i64, f32, i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64)
  func.func @fsdp_train_step(%arena: memref<4096xi8>, %step: i64, %lr: f32) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c5 = arith.constant 5 : index
    %i0 = arith.constant 0 : i32
    %i1 = arith.constant 1 : i32
    %c0_i64 = arith.constant 0 : i64
    %c2_i64 = arith.constant 2 : i64
    %c3_i64 = arith.constant 3 : i64
    %c4_i64 = arith.constant 4 : i64
    %c8_i64 = arith.constant 8 : i64
    %c16_i64 = arith.constant 16 : i64
    %c32_i64 = arith.constant 32 : i64
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %p = llvm.mlir.zero : !llvm.ptr
    func.call @fsdprt_sgemm(%i0, %i0, %c8_i64, %c16_i64, %c32_i64, %one, %p, %c32_i64, %p, %c16_i64, %zero, %p, %c16_i64) : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> ()
    func.call @fsdprt_sgemm(%i0, %i0, %c2_i64, %c4_i64, %c4_i64, %one, %p, %c4_i64, %p, %c4_i64, %zero, %p, %c4_i64) {fsdp.recomputed} : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> ()
    func.call @fsdprt_gemm_bf16_batched(%i0, %i0, %c3_i64, %c4_i64, %c8_i64, %c16_i64, %one, %p, %c16_i64, %c4_i64, %p, %c8_i64, %c8_i64, %zero, %p, %c8_i64, %c8_i64) : (i32, i32, i64, i64, i64, i64, f32, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, f32, !llvm.ptr, i64, i64) -> ()
    func.call @fsdprt_attention_bf16(%c2_i64, %c4_i64, %c4_i64, %c16_i64, %c8_i64, %i1, %c0_i64, %one, %i0, %p, %p, %p, %p, %p, %p, %c8_i64) : (i64, i64, i64, i64, i64, i32, i64, f32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64) -> ()
    func.call @fsdprt_attention_grad_bf16(%c2_i64, %c4_i64, %c4_i64, %c16_i64, %c8_i64, %i1, %c0_i64, %one, %i0, %i0, %p, %p, %p, %p, %p, %p, %p, %p, %p, %p, %c8_i64) : (i64, i64, i64, i64, i64, i32, i64, f32, i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64) -> ()
    %x = memref.alloc() : memref<4x8xbf16>
    %y = memref.alloc() : memref<4x8xf32>
    linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                    iterator_types = ["parallel", "parallel"]}
        ins(%x : memref<4x8xbf16>) outs(%y : memref<4x8xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %wide = arith.extf %in : bf16 to f32
      %sum = arith.addf %wide, %out : f32
      %scaled = arith.mulf %sum, %wide : f32
      %e = math.exp %scaled : f32
      %positive = arith.cmpf ogt, %e, %out : f32
      %kept = arith.select %positive, %e, %out : f32
      linalg.yield %kept : f32
    }
    %z = memref.alloc() : memref<16xf32>
    scf.for %i = %c0 to %c5 step %c1 {
      linalg.generic {indexing_maps = [affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
          outs(%z : memref<16xf32>) {
      ^bb0(%out: f32):
        %m = arith.maximumf %out, %zero : f32
        linalg.yield %m : f32
      }
    }
    return %zero : f32
  }
}

// -----

// A sliding window of 4 over 16 positions: the fused calls count the band,
// 4 x 16 - 4 x 3 / 2 = 58 pairs per batch and head (not the causal half, 128):
// a product is 2 x 2 x 4 x 58 x 8 = 7,424 FLOPs; forward 2, backward 5 of them
// (one recomputed): 51,968; the remat's attention as fused calls, 7,424 (not
// its loops' 8,192).
// CHECK-LABEL: module attributes {fsdp.manifest = #fsdp.manifest<
// CHECK-SAME: step_flops = #fsdp.step_flops<products = 0, bf16_products = 0, attention = 51968, recomputed = 14848, other = 0>
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 4096, persistent_bytes = 4096, local_batch = 1, shard_ranks = 1, recompute = #fsdp.recompute<ops = 1, products = 0, product_flops = 0, other_elements = 0, step_product_flops = 0, attention_flops = 8192, fused_attention_flops = 7424>>} {
  func.func private @fsdprt_attention_bf16(i64, i64, i64, i64, i64, i32, i64, f32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64)
  func.func private @fsdprt_attention_grad_bf16(i64, i64, i64, i64, i64, i32, i64, f32, i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64)
  func.func @fsdp_train_step(%arena: memref<4096xi8>, %step: i64, %lr: f32) -> f32 {
    %i0 = arith.constant 0 : i32
    %i1 = arith.constant 1 : i32
    %c2_i64 = arith.constant 2 : i64
    %c4_i64 = arith.constant 4 : i64
    %c8_i64 = arith.constant 8 : i64
    %c16_i64 = arith.constant 16 : i64
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %p = llvm.mlir.zero : !llvm.ptr
    func.call @fsdprt_attention_bf16(%c2_i64, %c4_i64, %c4_i64, %c16_i64, %c8_i64, %i1, %c4_i64, %one, %i0, %p, %p, %p, %p, %p, %p, %c8_i64) : (i64, i64, i64, i64, i64, i32, i64, f32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64) -> ()
    func.call @fsdprt_attention_grad_bf16(%c2_i64, %c4_i64, %c4_i64, %c16_i64, %c8_i64, %i1, %c4_i64, %one, %i0, %i0, %p, %p, %p, %p, %p, %p, %p, %p, %p, %p, %c8_i64) : (i64, i64, i64, i64, i64, i32, i64, f32, i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64) -> ()
    return %zero : f32
  }
}

// -----

// The step's FLOPs go into the manifest the runtime reads: without it,
// nothing to write them to.
// expected-error @below {{fsdp-record-step-flops needs the step, as one block, and the manifest of convert-fsdp-to-runtime}}
module {
  func.func @fsdp_train_step(%arena: memref<64xi8>, %step: i64, %lr: f32) -> f32 {
    %zero = arith.constant 0.0 : f32
    return %zero : f32
  }
}
