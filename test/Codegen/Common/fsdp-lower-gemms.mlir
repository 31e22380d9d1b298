// RUN: fsdp-opt %s -fsdp-lower-gemms -canonicalize | FileCheck %s

#mk = affine_map<(m, n, k) -> (m, k)>
#km = affine_map<(m, n, k) -> (k, m)>
#kn = affine_map<(m, n, k) -> (k, n)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>

// A plain product: M = 4, N = 16, K = 8, row strides 8, 16, 16, beta 1.
// CHECK-LABEL: func.func @plain
// CHECK-DAG: %[[F:.+]] = arith.constant 0 : i32
// CHECK-DAG: %[[M:.+]] = arith.constant 4 : i64
// CHECK-DAG: %[[N:.+]] = arith.constant 16 : i64
// CHECK-DAG: %[[K:.+]] = arith.constant 8 : i64
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[A:.+]] = llvm.inttoptr
// CHECK: %[[B:.+]] = llvm.inttoptr
// CHECK: %[[C:.+]] = llvm.inttoptr
// CHECK: call @fsdprt_sgemm(%[[F]], %[[F]], %[[M]], %[[N]], %[[K]], %[[ONE]], %[[A]], %{{.+}}, %[[B]], %{{.+}}, %[[ONE]], %[[C]], %{{.+}}) : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> ()
// CHECK-NOT: linalg.matmul
func.func @plain(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}

// Transposes become BLAS's flags.
// CHECK-LABEL: func.func @both_transposed
// CHECK-DAG: %[[T:.+]] = arith.constant 1 : i32
// CHECK: call @fsdprt_sgemm(%[[T]], %[[T]],
func.func @both_transposed(%a: memref<8x4xf32>, %b: memref<16x8xf32>, %c: memref<4x16xf32>) {
  linalg.matmul indexing_maps = [#km, #nk, #mn] ins(%a, %b : memref<8x4xf32>, memref<16x8xf32>) outs(%c : memref<4x16xf32>)
  return
}

// A view into a larger buffer passes its address (offset 3 floats = 12 bytes in)
// and its row stride.
// CHECK-LABEL: func.func @strided_rows
// CHECK-DAG: %[[TWELVE:.+]] = arith.constant 12 : index
// CHECK-DAG: %[[LDA:.+]] = arith.constant 32 : i64
// CHECK: %[[BASE:.+]] = memref.extract_aligned_pointer_as_index %{{.+}} : memref<4x8xf32, strided<[32, 1], offset: 3>>
// CHECK: %[[ADDRESS:.+]] = arith.addi %[[BASE]], %[[TWELVE]] : index
// CHECK: %[[A64:.+]] = arith.index_cast %[[ADDRESS]] : index to i64
// CHECK: %[[A:.+]] = llvm.inttoptr %[[A64]]
// CHECK: call @fsdprt_sgemm({{.+}}, %[[A]], %[[LDA]],
func.func @strided_rows(%a: memref<4x8xf32, strided<[32, 1], offset: 3>>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32, strided<[32, 1], offset: 3>>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}

// Columns that are not contiguous are left to loops.
// CHECK-LABEL: func.func @strided_columns
// CHECK: linalg.matmul
// CHECK-NOT: call @fsdprt_sgemm
func.func @strided_columns(%a: memref<4x8xf32, strided<[16, 2]>>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32, strided<[16, 2]>>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}

// Tensors (before bufferization) are not touched.
// CHECK-LABEL: func.func @tensors
// CHECK: linalg.matmul
func.func @tensors(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// Batches: one call with the distance between matrices.
// CHECK-LABEL: func.func @batched
// CHECK-DAG: %[[BATCH:.+]] = arith.constant 6 : i64
// CHECK: call @fsdprt_sgemm_batched(%{{.+}}, %{{.+}}, %[[BATCH]], {{.+}}) : (i32, i32, i64, i64, i64, i64, f32, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, f32, !llvm.ptr, i64, i64) -> ()
func.func @batched(%a: memref<6x4x5xf32>, %b: memref<6x5x3xf32>, %c: memref<6x4x3xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<6x4x5xf32>, memref<6x5x3xf32>) outs(%c : memref<6x4x3xf32>)
  return
}

// A product into a buffer just zeroed: C = A B (beta 0), and the fill goes.
// CHECK-LABEL: func.func @zeroed
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT: linalg.fill
// CHECK: call @fsdprt_sgemm({{.+}}, %[[ZERO]], %{{.+}}, %{{.+}}) :
func.func @zeroed(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}

// A fill of another value, or of another buffer, stays.
// CHECK-LABEL: func.func @filled_with_one
// CHECK: linalg.fill
// CHECK: call @fsdprt_sgemm({{.+}}, %[[ONE:.+]], %{{.+}}, %{{.+}}) :
func.func @filled_with_one(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%c : memref<4x16xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}

// bf16 products (summed in f32, rounded once: docs/MixedPrecision.md) call
// the runtime's bf16 GEMMs with the same arguments.
// CHECK-LABEL: func.func @bf16
// CHECK: call @fsdprt_gemm_bf16(%{{.+}}) : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> ()
// CHECK: call @fsdprt_gemm_bf16_batched(%{{.+}}) : (i32, i32, i64, i64, i64, i64, f32, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, f32, !llvm.ptr, i64, i64) -> ()
// CHECK-NOT: linalg
func.func @bf16(%a: memref<4x8xbf16>, %b: memref<8x16xbf16>, %c: memref<4x16xbf16>,
                %ba: memref<6x4x5xbf16>, %bb: memref<6x5x3xbf16>, %bc: memref<6x4x3xbf16>) {
  linalg.matmul ins(%a, %b : memref<4x8xbf16>, memref<8x16xbf16>) outs(%c : memref<4x16xbf16>)
  linalg.batch_matmul ins(%ba, %bb : memref<6x4x5xbf16>, memref<6x5x3xbf16>) outs(%bc : memref<6x4x3xbf16>)
  return
}

// Each runtime function is declared once.
// CHECK-COUNT-1: func.func private @fsdprt_sgemm(
// CHECK-COUNT-1: func.func private @fsdprt_sgemm_batched(
// CHECK-COUNT-1: func.func private @fsdprt_gemm_bf16(
// CHECK-COUNT-1: func.func private @fsdprt_gemm_bf16_batched(
