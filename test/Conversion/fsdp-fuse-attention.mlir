// RUN: fsdp-opt %s -fsdp-fuse-attention -verify-diagnostics -split-input-file | FileCheck %s --check-prefixes=CHECK,FAST
// RUN: fsdp-opt %s -fsdp-fuse-attention=deterministic=true -verify-diagnostics -split-input-file | FileCheck %s --check-prefixes=CHECK,DET

// A bf16 attention is one call of the runtime's fused attention: the shape (batch 2,
// 8 query heads on 2 key heads, 128 positions of 64), causal, the scale; the operands'
// buffers read as they are; the output and the f32 log-sum-exp in buffers of their own;
// cuDNN's 256-byte forward workspace.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[Q:.+]]: tensor<2x8x128x64xbf16>, %[[K:.+]]: tensor<2x2x128x64xbf16>, %[[V:.+]]: tensor<2x2x128x64xbf16>)
// CHECK-DAG: %[[B:.+]] = arith.constant 2 : i64
// CHECK-DAG: %[[H:.+]] = arith.constant 8 : i64
// CHECK-DAG: %[[T:.+]] = arith.constant 128 : i64
// CHECK-DAG: %[[D:.+]] = arith.constant 64 : i64
// CHECK-DAG: %[[CAUSAL:.+]] = arith.constant 1 : i32
// CHECK-DAG: %[[NOWINDOW:.+]] = arith.constant 0 : i64
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 1.250000e-01 : f32
// CHECK-DAG: %[[BHSD:.+]] = arith.constant 0 : i32
// CHECK: %[[QB:.+]] = bufferization.to_buffer %[[Q]] read_only : tensor<2x8x128x64xbf16> to memref<2x8x128x64xbf16>
// CHECK: %[[KB:.+]] = bufferization.to_buffer %[[K]] read_only
// CHECK: %[[VB:.+]] = bufferization.to_buffer %[[V]] read_only
// CHECK: %[[OUT:.+]] = memref.alloc() : memref<2x8x128x64xbf16>
// CHECK: %[[LSE:.+]] = memref.alloc() : memref<2x8x128xf32>
// CHECK: %[[WS:.+]] = memref.alloc() : memref<256xi8>
// CHECK: %[[WSB:.+]] = arith.constant 256 : i64
// CHECK: call @fsdprt_attention_bf16(%[[B]], %[[H]], %{{[^,]+}}, %[[T]], %[[D]], %[[CAUSAL]], %[[NOWINDOW]], %[[SCALE]], %[[BHSD]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[WSB]]) : (i64, i64, i64, i64, i64, i32, i64, f32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64) -> ()
// The results are the buffers' tensors from after the call on, where nothing reads them
// before the call writes them.
// CHECK-NEXT: %[[O:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-NEXT: %[[L:.+]] = bufferization.to_tensor %[[LSE]] restrict writable
// CHECK: return %[[O]], %[[L]]
// CHECK-NOT: fsdp.attention
func.func @forward(%q: tensor<2x8x128x64xbf16>, %k: tensor<2x2x128x64xbf16>, %v: tensor<2x2x128x64xbf16>)
    -> (tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>) {
  %o, %lse = fsdp.attention %q, %k, %v causal
      : tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>
        -> tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>
  return %o, %lse : tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>
}

// -----

// The gradient, when nothing differentiates the log-sum-exp: six operands read, three
// gradients written, the determinism flag, and the workspace cuDNN 9's backward plans
// ask for: the query gradient in f32 twice (2 x 2*8*100*64 x 4 B), one f32 per query row,
// 256 B (825,856 B); the deterministic algorithm adds the scores' bf16 gradient,
// [2, 8, 128, 128] with T rounded up to 64 (+ 524,288 B).
// CHECK-LABEL: func.func @backward
// CHECK: %[[CAUSAL:.+]] = arith.constant 1 : i32
// CHECK: arith.constant 1.250000e-01 : f32
// CHECK: %[[LAYOUT:.+]] = arith.constant 0 : i32
// FAST: %[[FLAG:.+]] = arith.constant 0 : i32
// DET: %[[FLAG:.+]] = arith.constant 1 : i32
// CHECK-COUNT-6: bufferization.to_buffer {{.*}} read_only
// CHECK-COUNT-3: memref.alloc() : memref<
// FAST: memref.alloc() : memref<825856xi8>
// DET: memref.alloc() : memref<1350144xi8>
// CHECK: call @fsdprt_attention_grad_bf16({{.*}}, %[[CAUSAL]], %{{[^,]+}}, %{{[^,]+}}, %[[LAYOUT]], %[[FLAG]], {{.*}}) : (i64, i64, i64, i64, i64, i32, i64, f32, i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64) -> ()
// CHECK-NOT: fsdp.attention_grad
func.func @backward(%q: tensor<2x8x100x64xbf16>, %k: tensor<2x2x100x64xbf16>, %v: tensor<2x2x100x64xbf16>,
                    %o: tensor<2x8x100x64xbf16>, %lse: tensor<2x8x100xf32>, %do: tensor<2x8x100x64xbf16>)
    -> (tensor<2x8x100x64xbf16>, tensor<2x2x100x64xbf16>, tensor<2x2x100x64xbf16>) {
  %zero = arith.constant dense<0.0> : tensor<2x8x100xf32>
  %dq, %dk, %dv = fsdp.attention_grad %q, %k, %v, %o, %lse, %do, %zero causal
      : tensor<2x8x100x64xbf16>, tensor<2x2x100x64xbf16>, tensor<2x2x100x64xbf16>, tensor<2x8x100xf32>
  return %dq, %dk, %dv : tensor<2x8x100x64xbf16>, tensor<2x2x100x64xbf16>, tensor<2x2x100x64xbf16>
}

// -----

// Operands that are transposes of [B, S, H, D] tensors (the projections' rows split into
// heads) are read where they lie: the call takes those tensors (layout 1,
// FSDPRT_ATTENTION_BSHD) and writes its output and gradients as [B, S, H, D]; a transpose
// of a result back to [B, S, H, D] is the result itself, and no transpose is left. The
// backward finds the forward's output as such a transpose too; the log-sum-exp stays
// [B, H, S].
// CHECK-LABEL: func.func @sequence_major
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x128x8x64xbf16>, %[[K:[^:]+]]: tensor<2x128x2x64xbf16>, %[[V:[^:]+]]: tensor<2x128x2x64xbf16>, %[[DO:[^:]+]]: tensor<2x128x8x64xbf16>)
// CHECK: arith.constant 1.250000e-01 : f32
// CHECK-NEXT: %[[BSHD:.+]] = arith.constant 1 : i32
// CHECK: bufferization.to_buffer %[[Q]] read_only : tensor<2x128x8x64xbf16>
// CHECK: bufferization.to_buffer %[[K]] read_only : tensor<2x128x2x64xbf16>
// CHECK: bufferization.to_buffer %[[V]] read_only : tensor<2x128x2x64xbf16>
// CHECK: %[[OUTB:.+]] = memref.alloc() : memref<2x128x8x64xbf16>
// CHECK: memref.alloc() : memref<2x8x128xf32>
// CHECK: call @fsdprt_attention_bf16(%{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %[[BSHD]],
// CHECK-NEXT: %[[OUT:.+]] = bufferization.to_tensor %[[OUTB]] restrict writable : memref<2x128x8x64xbf16>
// CHECK: arith.constant 1.250000e-01 : f32
// CHECK-NEXT: %[[GRAD_BSHD:.+]] = arith.constant 1 : i32
// CHECK: bufferization.to_buffer %[[OUT]] read_only : tensor<2x128x8x64xbf16>
// CHECK: bufferization.to_buffer %[[DO]] read_only : tensor<2x128x8x64xbf16>
// CHECK: %[[DQB:.+]] = memref.alloc() : memref<2x128x8x64xbf16>
// CHECK: %[[DKB:.+]] = memref.alloc() : memref<2x128x2x64xbf16>
// CHECK: call @fsdprt_attention_grad_bf16(%{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %[[GRAD_BSHD]],
// CHECK-NEXT: %[[DQ:.+]] = bufferization.to_tensor %[[DQB]] restrict writable : memref<2x128x8x64xbf16>
// CHECK-NEXT: %[[DK:.+]] = bufferization.to_tensor %[[DKB]] restrict writable : memref<2x128x2x64xbf16>
// CHECK-NOT: fsdp.transpose
// CHECK: return %[[OUT]], %[[DQ]], %[[DK]]
func.func @sequence_major(%q: tensor<2x128x8x64xbf16>, %k: tensor<2x128x2x64xbf16>,
                          %v: tensor<2x128x2x64xbf16>, %dot: tensor<2x128x8x64xbf16>)
    -> (tensor<2x128x8x64xbf16>, tensor<2x128x8x64xbf16>, tensor<2x128x2x64xbf16>) {
  %qh = fsdp.transpose %q [0, 2, 1, 3] : tensor<2x128x8x64xbf16> -> tensor<2x8x128x64xbf16>
  %kh = fsdp.transpose %k [0, 2, 1, 3] : tensor<2x128x2x64xbf16> -> tensor<2x2x128x64xbf16>
  %vh = fsdp.transpose %v [0, 2, 1, 3] : tensor<2x128x2x64xbf16> -> tensor<2x2x128x64xbf16>
  %o, %lse = fsdp.attention %qh, %kh, %vh causal
      : tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>
        -> tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>
  %ot = fsdp.transpose %o [0, 2, 1, 3] : tensor<2x8x128x64xbf16> -> tensor<2x128x8x64xbf16>
  %do = fsdp.transpose %dot [0, 2, 1, 3] : tensor<2x128x8x64xbf16> -> tensor<2x8x128x64xbf16>
  %zero = arith.constant dense<0.0> : tensor<2x8x128xf32>
  %dq, %dk, %dv = fsdp.attention_grad %qh, %kh, %vh, %o, %lse, %do, %zero causal
      : tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x8x128xf32>
  %dqt = fsdp.transpose %dq [0, 2, 1, 3] : tensor<2x8x128x64xbf16> -> tensor<2x128x8x64xbf16>
  %dkt = fsdp.transpose %dk [0, 2, 1, 3] : tensor<2x2x128x64xbf16> -> tensor<2x128x2x64xbf16>
  return %ot, %dqt, %dkt : tensor<2x128x8x64xbf16>, tensor<2x128x8x64xbf16>, tensor<2x128x2x64xbf16>
}

// -----

// What the fused call cannot compute keeps the loops, said once per reason at the first
// such op, with how many ops it concerns.
// CHECK-LABEL: func.func @f32
// CHECK: fsdp.attention
// CHECK: fsdp.attention_grad
func.func @f32(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>,
               %do: tensor<1x2x16x8xf32>)
    -> (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) {
  // expected-remark @below {{attention runs as key-block loops, not cuDNN's fused kernel (2 ops, forward and backward): its operands are not bf16}}
  %o, %lse = fsdp.attention %q, %k, %v causal
      : tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>
        -> tensor<1x2x16x8xf32>, tensor<1x2x16xf32>
  %zero = arith.constant dense<0.0> : tensor<1x2x16xf32>
  %dq, %dk, %dv = fsdp.attention_grad %q, %k, %v, %o, %lse, %do, %zero causal
      : tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16xf32>
  return %o, %dq : tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>
}

// -----

// CHECK-LABEL: func.func @refused
func.func @refused(%q: tensor<1x2x16x12xbf16>, %k: tensor<1x2x16x12xbf16>, %q8: tensor<1x2x16x8xbf16>,
                   %k8: tensor<1x2x24x8xbf16>, %lse8: tensor<1x2x16xf32>, %dlse: tensor<1x2x16xf32>)
    -> (tensor<1x2x16x12xbf16>, tensor<1x2x16x8xbf16>, tensor<1x2x16x8xbf16>) {
  // expected-remark @below {{(1 op, forward and backward): its head dimension 12 is not a multiple of 8 up to 256}}
  %o, %lse = fsdp.attention %q, %k, %k
      : tensor<1x2x16x12xbf16>, tensor<1x2x16x12xbf16>, tensor<1x2x16x12xbf16>
        -> tensor<1x2x16x12xbf16>, tensor<1x2x16xf32>
  // expected-remark @below {{(1 op, forward and backward): it has 16 queries and 24 keys}}
  %o8, %lse8b = fsdp.attention %q8, %k8, %k8
      : tensor<1x2x16x8xbf16>, tensor<1x2x24x8xbf16>, tensor<1x2x24x8xbf16>
        -> tensor<1x2x16x8xbf16>, tensor<1x2x16xf32>
  // expected-remark @below {{(1 op, forward and backward): the gradient of its log-sum-exp is not zero}}
  %dq, %dk, %dv = fsdp.attention_grad %q8, %q8, %q8, %q8, %lse8, %q8, %dlse causal
      : tensor<1x2x16x8xbf16>, tensor<1x2x16x8xbf16>, tensor<1x2x16x8xbf16>, tensor<1x2x16xf32>
  return %o, %o8, %dq : tensor<1x2x16x12xbf16>, tensor<1x2x16x8xbf16>, tensor<1x2x16x8xbf16>
}

// -----

// A sliding window is the call's `window` (cuDNN's band: its left bound), forward and
// backward.
// CHECK-LABEL: func.func @window
// CHECK: %[[CAUSAL:.+]] = arith.constant 1 : i32
// CHECK-NEXT: %[[WINDOW:.+]] = arith.constant 4 : i64
// CHECK: call @fsdprt_attention_bf16(%{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %[[CAUSAL]], %[[WINDOW]],
// CHECK: %[[GRAD_CAUSAL:.+]] = arith.constant 1 : i32
// CHECK-NEXT: %[[GRAD_WINDOW:.+]] = arith.constant 4 : i64
// CHECK: call @fsdprt_attention_grad_bf16(%{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %[[GRAD_CAUSAL]], %[[GRAD_WINDOW]],
// CHECK-NOT: fsdp.attention
func.func @window(%q: tensor<1x2x16x8xbf16>) -> (tensor<1x2x16x8xbf16>, tensor<1x2x16x8xbf16>) {
  %o, %lse = fsdp.attention %q, %q, %q causal window 4
      : tensor<1x2x16x8xbf16>, tensor<1x2x16x8xbf16>, tensor<1x2x16x8xbf16>
        -> tensor<1x2x16x8xbf16>, tensor<1x2x16xf32>
  %zero = arith.constant dense<0.0> : tensor<1x2x16xf32>
  %dq, %dk, %dv = fsdp.attention_grad %q, %q, %q, %o, %lse, %q, %zero causal window 4
      : tensor<1x2x16x8xbf16>, tensor<1x2x16x8xbf16>, tensor<1x2x16x8xbf16>, tensor<1x2x16xf32>
  return %o, %dq : tensor<1x2x16x8xbf16>, tensor<1x2x16x8xbf16>
}

// -----

// Soft-capped scores (Gemma 2's) keep the loops: the fused call has no cap.
// CHECK-LABEL: func.func @softcap
// CHECK: fsdp.attention %{{.+}} causal softcap 5.0e+01
func.func @softcap(%q: tensor<1x2x16x8xbf16>) -> tensor<1x2x16x8xbf16> {
  // expected-remark @below {{(1 op, forward and backward): its scores are soft-capped (the fused call has no cap)}}
  %o, %lse = fsdp.attention %q, %q, %q causal softcap 50.0
      : tensor<1x2x16x8xbf16>, tensor<1x2x16x8xbf16>, tensor<1x2x16x8xbf16>
        -> tensor<1x2x16x8xbf16>, tensor<1x2x16xf32>
  return %o : tensor<1x2x16x8xbf16>
}
