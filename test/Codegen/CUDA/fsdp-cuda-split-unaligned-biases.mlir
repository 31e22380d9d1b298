// RUN: fsdp-opt %s -fsdp-cuda-split-unaligned-biases | FileCheck %s

// Three f32 products with a bias, as fsdp-lower-gemms and the buffer plan
// leave them. The first bias lies at 512 bytes into the arena: cuBLASLt's
// epilogue keeps it. The second at 5,996 (4-byte aligned only) and the third
// at 8 bytes into a subview of a view at 512 (520): each becomes the plain
// product and an add of the bias to every row of C.
// CHECK-DAG:   #[[$COLUMNS:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG:   #[[$ROWS:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK-SAME:    (%[[ARENA:.+]]: memref<8192xi8>
// CHECK-DAG:     %[[C:.+]] = memref.view %[[ARENA]][%c1024{{.*}}][] : memref<8192xi8> to memref<4x6xf32>
// CHECK-DAG:     %[[ALIGNED:.+]] = memref.view %[[ARENA]][%c512{{.*}}][] : memref<8192xi8> to memref<6xf32>
// CHECK-DAG:     %[[UNALIGNED:.+]] = memref.view %[[ARENA]][%c5996{{.*}}][] : memref<8192xi8> to memref<6xf32>
// CHECK:         call @fsdprt_sgemm_bias(
// CHECK-NOT:     linalg.generic
// CHECK:         call @fsdprt_sgemm(%{{.+}}) : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> ()
// CHECK-NEXT:    linalg.generic {indexing_maps = [#[[$COLUMNS]], #[[$ROWS]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[UNALIGNED]] : memref<6xf32>) outs(%[[C]] : memref<4x6xf32>)
// CHECK-NEXT:    ^bb0(%[[B:.+]]: f32, %[[OUT:.+]]: f32):
// CHECK-NEXT:      %[[SUM:.+]] = arith.addf %[[OUT]], %[[B]] : f32
// CHECK-NEXT:      linalg.yield %[[SUM]] : f32
// CHECK:         call @fsdprt_sgemm(
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      ins(%{{.+}} : memref<6xf32, strided<[1], offset: 2>>) outs(%[[C]] : memref<4x6xf32>)
// CHECK-NOT:     fsdprt_sgemm_bias
// CHECK:         return
module {
  func.func private @fsdprt_sgemm_bias(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64, !llvm.ptr)

  func.func @fsdp_train_step(%arena: memref<8192xi8>, %step: i64, %lr: f32) -> f32 {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c512 = arith.constant 512 : index
    %c1024 = arith.constant 1024 : index
    %c5996 = arith.constant 5996 : index
    %no = arith.constant 0 : i32
    %m = arith.constant 4 : i64
    %n = arith.constant 6 : i64
    %k = arith.constant 3 : i64
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %c = memref.view %arena[%c1024][] : memref<8192xi8> to memref<4x6xf32>
    %aligned = memref.view %arena[%c512][] : memref<8192xi8> to memref<6xf32>
    %unaligned = memref.view %arena[%c5996][] : memref<8192xi8> to memref<6xf32>
    %wide = memref.view %arena[%c512][] : memref<8192xi8> to memref<8xf32>
    %sub = memref.subview %wide[2] [6] [1] : memref<8xf32> to memref<6xf32, strided<[1], offset: 2>>
    %p = llvm.mlir.zero : !llvm.ptr
    %cp = memref.extract_aligned_pointer_as_index %c : memref<4x6xf32> -> index
    %ci = arith.index_cast %cp : index to i64
    %cptr = llvm.inttoptr %ci : i64 to !llvm.ptr
    %ap = memref.extract_aligned_pointer_as_index %aligned : memref<6xf32> -> index
    %ai = arith.index_cast %ap : index to i64
    %aptr = llvm.inttoptr %ai : i64 to !llvm.ptr
    call @fsdprt_sgemm_bias(%no, %no, %m, %n, %k, %one, %p, %k, %p, %n, %zero, %cptr, %n, %aptr) : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64, !llvm.ptr) -> ()
    %up = memref.extract_aligned_pointer_as_index %unaligned : memref<6xf32> -> index
    %ui = arith.index_cast %up : index to i64
    %uptr = llvm.inttoptr %ui : i64 to !llvm.ptr
    call @fsdprt_sgemm_bias(%no, %no, %m, %n, %k, %one, %p, %k, %p, %n, %zero, %cptr, %n, %uptr) : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64, !llvm.ptr) -> ()
    // fsdp::bufferAddress of a strided view: the aligned pointer plus its offset in bytes.
    %sp = memref.extract_aligned_pointer_as_index %sub : memref<6xf32, strided<[1], offset: 2>> -> index
    %base, %offset, %size, %stride = memref.extract_strided_metadata %sub : memref<6xf32, strided<[1], offset: 2>> -> memref<f32>, index, index, index
    %bytes = arith.muli %offset, %c4 : index
    %sa = arith.addi %sp, %bytes : index
    %si = arith.index_cast %sa : index to i64
    %sptr = llvm.inttoptr %si : i64 to !llvm.ptr
    call @fsdprt_sgemm_bias(%no, %no, %m, %n, %k, %one, %p, %k, %p, %n, %zero, %cptr, %n, %sptr) : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64, !llvm.ptr) -> ()
    return %zero : f32
  }
}
