// RUN: fsdp-opt %s -fsdp-lower-gemms=fuse-bias=true | FileCheck %s
// RUN: fsdp-opt %s -fsdp-lower-gemms | FileCheck %s --check-prefix=UNFUSED

// A product whose only reader adds a bias to every row computes the sum
// itself (cuBLASLt's bias epilogue on the CUDA target): the add and the
// product's own buffer go.

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last3 = affine_map<(d0, d1, d2) -> (d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#last2 = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @linear
// CHECK-SAME:    (%[[A:.+]]: memref<128x64xf32>, %[[W:.+]]: memref<64x256xf32>, %[[BIAS:.+]]: memref<256xf32>)
// CHECK-NOT:   linalg
// CHECK:       %[[OUT:.+]] = memref.alloc() : memref<4x32x256xf32>
// CHECK-NEXT:  %[[ROWS:.+]] = memref.collapse_shape %[[OUT]] {{\[}}[0, 1], [2]] : memref<4x32x256xf32> into memref<128x256xf32>
// CHECK:       %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK:       memref.extract_aligned_pointer_as_index %[[ROWS]]
// CHECK:       %[[M:.+]] = arith.constant 128 : i64
// CHECK-NEXT:  %[[N:.+]] = arith.constant 256 : i64
// CHECK-NEXT:  %[[K:.+]] = arith.constant 64 : i64
// CHECK-NEXT:  memref.extract_aligned_pointer_as_index %[[BIAS]]
// CHECK:       %[[B:.+]] = llvm.inttoptr
// CHECK-NEXT:  call @fsdprt_sgemm_bias(%{{.+}}, %{{.+}}, %[[M]], %[[N]], %[[K]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ZERO]], %{{.+}}, %{{.+}}, %[[B]]) : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64, !llvm.ptr) -> ()
// CHECK-NOT:   linalg
// CHECK:       return %[[OUT]]
// UNFUSED-LABEL: func.func @linear
// UNFUSED:       call @fsdprt_sgemm(
// UNFUSED:       linalg.generic
func.func @linear(%a: memref<128x64xf32>, %w: memref<64x256xf32>, %bias: memref<256xf32>) -> memref<4x32x256xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<128x256xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<128x256xf32>)
  linalg.matmul ins(%a, %w : memref<128x64xf32>, memref<64x256xf32>) outs(%c : memref<128x256xf32>)
  %e = memref.expand_shape %c [[0, 1], [2]] output_shape [4, 32, 256] : memref<128x256xf32> into memref<4x32x256xf32>
  %out = memref.alloc() : memref<4x32x256xf32>
  linalg.generic {indexing_maps = [#id3, #last3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%e, %bias : memref<4x32x256xf32>, memref<256xf32>) outs(%out : memref<4x32x256xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return %out : memref<4x32x256xf32>
}

// The bias first, the product read directly (no expand_shape).
// CHECK-LABEL: func.func @bias_first
// CHECK:       call @fsdprt_sgemm_bias(
// CHECK-NOT:   linalg
func.func @bias_first(%a: memref<8x16xf32>, %w: memref<16x32xf32>, %bias: memref<32xf32>, %out: memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x32xf32>)
  linalg.matmul ins(%a, %w : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  linalg.generic {indexing_maps = [#last2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%bias, %c : memref<32xf32>, memref<8x32xf32>) outs(%out : memref<8x32xf32>) {
  ^bb0(%y: f32, %x: f32, %o: f32):
    %s = arith.addf %y, %x : f32
    linalg.yield %s : f32
  }
  return
}

// bf16 keeps its add: the epilogue would add the bias before the product's
// one rounding, where the bf16 step rounds the product, then the sum.
// CHECK-LABEL: func.func @linear_bf16
// CHECK:       call @fsdprt_gemm_bf16(
// CHECK:       linalg.generic
func.func @linear_bf16(%a: memref<8x16xbf16>, %w: memref<16x32xbf16>, %bias: memref<32xbf16>, %out: memref<8x32xbf16>) {
  %zero = arith.constant 0.0 : bf16
  %c = memref.alloc() : memref<8x32xbf16>
  linalg.fill ins(%zero : bf16) outs(%c : memref<8x32xbf16>)
  linalg.matmul ins(%a, %w : memref<8x16xbf16>, memref<16x32xbf16>) outs(%c : memref<8x32xbf16>)
  linalg.generic {indexing_maps = [#id2, #last2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<8x32xbf16>, memref<32xbf16>) outs(%out : memref<8x32xbf16>) {
  ^bb0(%x: bf16, %y: bf16, %o: bf16):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %s = arith.addf %xf, %yf : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  }
  return
}

// Not an epilogue: the product is read again later, the vector is added
// along columns, the add does more than add, the product accumulates (no
// zero fill), and something between them writes memory.
// CHECK-LABEL: func.func @not_epilogues
// CHECK-NOT:   fsdprt_sgemm_bias
// CHECK-COUNT-5: call @fsdprt_sgemm(
// CHECK-NOT:   fsdprt_sgemm_bias
// CHECK:       return
func.func @not_epilogues(%a: memref<8x16xf32>, %w: memref<16x32xf32>, %bias: memref<32xf32>,
                         %column: memref<8xf32>, %out: memref<8x32xf32>, %acc: memref<8x32xf32>,
                         %other: memref<8x32xf32>) -> f32 {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %i = arith.constant 0 : index
  // Read again.
  %c0 = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c0 : memref<8x32xf32>)
  linalg.matmul ins(%a, %w : memref<8x16xf32>, memref<16x32xf32>) outs(%c0 : memref<8x32xf32>)
  linalg.generic {indexing_maps = [#id2, #last2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c0, %bias : memref<8x32xf32>, memref<32xf32>) outs(%out : memref<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  %again = memref.load %c0[%i, %i] : memref<8x32xf32>
  // Along columns.
  %c1 = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c1 : memref<8x32xf32>)
  linalg.matmul ins(%a, %w : memref<8x16xf32>, memref<16x32xf32>) outs(%c1 : memref<8x32xf32>)
  linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> (d0)>, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c1, %column : memref<8x32xf32>, memref<8xf32>) outs(%out : memref<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  // More than an add.
  %c2 = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c2 : memref<8x32xf32>)
  linalg.matmul ins(%a, %w : memref<8x16xf32>, memref<16x32xf32>) outs(%c2 : memref<8x32xf32>)
  linalg.generic {indexing_maps = [#id2, #last2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c2, %bias : memref<8x32xf32>, memref<32xf32>) outs(%out : memref<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %t = arith.mulf %s, %two : f32
    linalg.yield %t : f32
  }
  // Accumulating.
  linalg.matmul ins(%a, %w : memref<8x16xf32>, memref<16x32xf32>) outs(%acc : memref<8x32xf32>)
  linalg.generic {indexing_maps = [#id2, #last2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%acc, %bias : memref<8x32xf32>, memref<32xf32>) outs(%out : memref<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  // A write in between.
  %c3 = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c3 : memref<8x32xf32>)
  linalg.matmul ins(%a, %w : memref<8x16xf32>, memref<16x32xf32>) outs(%c3 : memref<8x32xf32>)
  linalg.fill ins(%zero : f32) outs(%other : memref<8x32xf32>)
  linalg.generic {indexing_maps = [#id2, #last2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c3, %bias : memref<8x32xf32>, memref<32xf32>) outs(%out : memref<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return %again : f32
}
