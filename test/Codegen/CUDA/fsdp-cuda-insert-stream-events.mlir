// RUN: fsdp-opt %s --fsdp-cuda-insert-stream-events | FileCheck %s

// The step's buffers are fixed byte ranges of the arena: every pair of ops on
// different streams (0 compute, 1 all-gather, 2 reduce-scatter, 4 tensor) that touch
// overlapping bytes, one of them writing, gets an event unless the streams
// are already ordered.

#id = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @fsdp_train_step
func.func @fsdp_train_step(%arena: memref<65536xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c4096 = arith.constant 4096 : index
  %c8192 = arith.constant 8192 : index
  %c12288 = arith.constant 12288 : index
  %c16384 = arith.constant 16384 : index
  %bytes = arith.constant 4096 : i64
  %count = arith.constant 512 : i64
  %shard_group = arith.constant 1 : i32
  %avg = arith.constant 1 : i32
  %f32 = arith.constant 0 : i32
  %a = memref.view %arena[%c0][] : memref<65536xi8> to memref<1024xf32>
  %r = memref.view %arena[%c4096][] : memref<65536xi8> to memref<1024xf32>
  %g = memref.view %arena[%c8192][] : memref<65536xi8> to memref<1024xf32>
  %s = memref.view %arena[%c12288][] : memref<65536xi8> to memref<1024xf32>
  %far = memref.view %arena[%c16384][] : memref<65536xi8> to memref<1024xf32>
  %a_ptr_index = memref.extract_aligned_pointer_as_index %a : memref<1024xf32> -> index
  %a_ptr_i64 = arith.index_cast %a_ptr_index : index to i64
  %a_ptr = llvm.inttoptr %a_ptr_i64 : i64 to !llvm.ptr

  // The last kernel to read %r before a gather overwrites it: an event on
  // the compute stream right after it...
  // CHECK:      linalg.generic
  // CHECK-SAME:   ins(%[[R:.+]] : memref<1024xf32>)
  // CHECK-NEXT: ^bb0
  // CHECK-NEXT:   linalg.yield
  // CHECK-NEXT: }
  // CHECK-DAG:  %[[E0:.+]] = arith.constant 0 : i32
  // CHECK-DAG:  %[[COMPUTE:.+]] = arith.constant 0 : i32
  // CHECK:      call @fsdprt_event_record(%[[E0]], %[[COMPUTE]]) : (i32, i32) -> ()
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%r : memref<1024xf32>) outs(%a : memref<1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  // ... which the all-gather stream waits for.
  // CHECK:      %[[GATHER_STREAM:.+]] = arith.constant 1 : i32
  // CHECK-NEXT: %[[E0_AGAIN:.+]] = arith.constant 0 : i32
  // CHECK-NEXT: call @fsdprt_stream_wait_event(%[[GATHER_STREAM]], %[[E0_AGAIN]]) : (i32, i32) -> ()
  // CHECK-NEXT: %[[H0:.+]] = call @fsdprt_all_gather_start
  %r_ptr_index = memref.extract_aligned_pointer_as_index %r : memref<1024xf32> -> index
  %r_ptr_i64 = arith.index_cast %r_ptr_index : index to i64
  %r_ptr = llvm.inttoptr %r_ptr_i64 : i64 to !llvm.ptr
  %far_ptr_index = memref.extract_aligned_pointer_as_index %far : memref<1024xf32> -> index
  %far_ptr_i64 = arith.index_cast %far_ptr_index : index to i64
  %far_ptr = llvm.inttoptr %far_ptr_i64 : i64 to !llvm.ptr
  %h0 = call @fsdprt_all_gather_start(%far_ptr, %r_ptr, %bytes, %shard_group) : (!llvm.ptr, !llvm.ptr, i64, i32) -> i32
  // CHECK-NEXT: call @fsdprt_wait(%[[H0]])
  call @fsdprt_wait(%h0) : (i32) -> ()

  // After the wait, compute reading the gathered %r needs no event.
  // CHECK-NEXT: linalg.generic
  // CHECK-NOT:  fsdprt_stream_wait_event
  // CHECK:      call @fsdprt_event_record
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%r : memref<1024xf32>) outs(%g : memref<1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    %x = arith.mulf %in, %lr : f32
    linalg.yield %x : f32
  }
  // A reduce-scatter reads the gradient %g the kernel above wrote: its stream
  // waits for the event recorded after that kernel.
  // CHECK:      %[[RS_STREAM:.+]] = arith.constant 2 : i32
  // CHECK-NEXT: %[[E1:.+]] = arith.constant 1 : i32
  // CHECK-NEXT: call @fsdprt_stream_wait_event(%[[RS_STREAM]], %[[E1]])
  // CHECK-NEXT: %[[H1:.+]] = call @fsdprt_reduce_scatter_start
  // (The event recorded on its own stream right after it, for the last
  // gather below.)
  // CHECK-NEXT: %[[E2_RECORD:.+]] = arith.constant 2 : i32
  // CHECK-NEXT: %[[RS_STREAM2:.+]] = arith.constant 2 : i32
  // CHECK-NEXT: call @fsdprt_event_record(%[[E2_RECORD]], %[[RS_STREAM2]])
  %g_ptr_index = memref.extract_aligned_pointer_as_index %g : memref<1024xf32> -> index
  %g_ptr_i64 = arith.index_cast %g_ptr_index : index to i64
  %g_ptr = llvm.inttoptr %g_ptr_i64 : i64 to !llvm.ptr
  %s_ptr_index = memref.extract_aligned_pointer_as_index %s : memref<1024xf32> -> index
  %s_ptr_i64 = arith.index_cast %s_ptr_index : index to i64
  %s_ptr = llvm.inttoptr %s_ptr_i64 : i64 to !llvm.ptr
  %h1 = call @fsdprt_reduce_scatter_start(%g_ptr, %s_ptr, %count, %f32, %avg, %shard_group) : (!llvm.ptr, !llvm.ptr, i64, i32, i32, i32) -> i32

  // A gather into a region nobody touched in this step waits for nothing.
  // CHECK-NOT:  fsdprt_stream_wait_event
  // CHECK:      %[[H2:.+]] = call @fsdprt_all_gather_start
  %h2 = call @fsdprt_all_gather_start(%a_ptr, %far_ptr, %bytes, %shard_group) : (!llvm.ptr, !llvm.ptr, i64, i32) -> i32
  // A gather overwriting the gradient the pending reduce-scatter still reads
  // waits for the reduce-scatter stream; that stream had waited for the
  // kernel which wrote the gradient, so one wait covers both.
  // CHECK:      call @fsdprt_wait(%[[H2]])
  call @fsdprt_wait(%h2) : (i32) -> ()
  // CHECK:      %[[GATHER_STREAM2:.+]] = arith.constant 1 : i32
  // CHECK-NEXT: %[[E2:.+]] = arith.constant 2 : i32
  // CHECK-NEXT: call @fsdprt_stream_wait_event(%[[GATHER_STREAM2]], %[[E2]])
  // CHECK-NEXT: %[[H3:.+]] = call @fsdprt_all_gather_start
  %h3 = call @fsdprt_all_gather_start(%a_ptr, %g_ptr, %bytes, %shard_group) : (!llvm.ptr, !llvm.ptr, i64, i32) -> i32
  call @fsdprt_wait(%h3) : (i32) -> ()
  call @fsdprt_wait(%h1) : (i32) -> ()
  // The tensor group's collectives (group 3) run on a stream of their own (4):
  // an all-reduce of %g, which the gather above wrote, waits for that gather.
  // CHECK:      %[[TENSOR_STREAM:.+]] = arith.constant 4 : i32
  // CHECK-NEXT: %[[E3:.+]] = arith.constant 3 : i32
  // CHECK-NEXT: call @fsdprt_stream_wait_event(%[[TENSOR_STREAM]], %[[E3]])
  // CHECK-NEXT: call @fsdprt_all_reduce_start
  %tensor_group = arith.constant 3 : i32
  %h4 = call @fsdprt_all_reduce_start(%g_ptr, %count, %f32, %f32, %tensor_group) : (!llvm.ptr, i64, i32, i32, i32) -> i32
  call @fsdprt_wait(%h4) : (i32) -> ()
  %loss = arith.constant 0.0 : f32
  return %loss : f32
}

func.func private @fsdprt_all_gather_start(!llvm.ptr, !llvm.ptr, i64, i32) -> i32
func.func private @fsdprt_reduce_scatter_start(!llvm.ptr, !llvm.ptr, i64, i32, i32, i32) -> i32
func.func private @fsdprt_all_reduce_start(!llvm.ptr, i64, i32, i32, i32) -> i32
func.func private @fsdprt_wait(i32)
