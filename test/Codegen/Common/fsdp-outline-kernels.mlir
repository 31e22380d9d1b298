// RUN: fsdp-opt %s --fsdp-outline-kernels="launch-ops=gpu.launch_func" -split-input-file | FileCheck %s

// Every compute op of the step becomes a call; ops identical up to the
// buffers they touch (two decoder blocks' scaling, two zero fills) call one
// function. Buffers no other argument overlaps are noalias.

#id = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @fsdp_train_step
// CHECK-SAME:      (%[[ARENA:.+]]: memref<16384xi8>, %{{.+}}: i64, %[[LR:.+]]: f32)
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c4096 = arith.constant 4096 : index
  %c8192 = arith.constant 8192 : index
  %c12288 = arith.constant 12288 : index
  %zero = arith.constant 0.0 : f32
  // CHECK-DAG: %[[A:.+]] = memref.view %[[ARENA]][%{{.+}}][] : memref<16384xi8> to memref<1000xf32>
  // CHECK-DAG: %[[B:.+]] = memref.view %[[ARENA]][%{{.+}}][] : memref<16384xi8> to memref<1000xf32>
  // CHECK-DAG: %[[C:.+]] = memref.view %[[ARENA]][%{{.+}}][] : memref<16384xi8> to memref<1000xf32>
  // CHECK-DAG: %[[D:.+]] = memref.view %[[ARENA]][%{{.+}}][] : memref<16384xi8> to memref<1000xf32>
  %a = memref.view %arena[%c0][] : memref<16384xi8> to memref<1000xf32>
  %b = memref.view %arena[%c4096][] : memref<16384xi8> to memref<1000xf32>
  %c = memref.view %arena[%c8192][] : memref<16384xi8> to memref<1000xf32>
  %d = memref.view %arena[%c12288][] : memref<16384xi8> to memref<1000xf32>

  // CHECK:      call @[[FILL:fsdp_kernel_[0-9]+]](%[[B]]) : (memref<1000xf32>) -> ()
  // CHECK-NEXT: call @[[FILL]](%[[D]]) : (memref<1000xf32>) -> ()
  linalg.fill ins(%zero : f32) outs(%b : memref<1000xf32>)
  linalg.fill ins(%zero : f32) outs(%d : memref<1000xf32>)

  // Block 1 and block 2: the same op on other buffers, and the step's
  // learning rate passed along.
  // CHECK-NEXT: call @[[SCALE:fsdp_kernel_[0-9]+]](%[[A]], %[[B]], %[[LR]]) : (memref<1000xf32>, memref<1000xf32>, f32) -> ()
  // CHECK-NEXT: call @[[SCALE]](%[[C]], %[[D]], %[[LR]])
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<1000xf32>) outs(%b : memref<1000xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %lr : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%c : memref<1000xf32>) outs(%d : memref<1000xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %lr : f32
    linalg.yield %s : f32
  }

  // In place: one buffer, one argument (still noalias: nothing else
  // overlaps it). A different body is a different kernel.
  // CHECK-NEXT: call @[[INPLACE:fsdp_kernel_[0-9]+]](%[[A]]) : (memref<1000xf32>) -> ()
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<1000xf32>) outs(%a : memref<1000xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %in : f32
    linalg.yield %s : f32
  }

  // Two views of overlapping bytes: neither is noalias, so this copy needs
  // a kernel of its own although a copy between disjoint buffers has the
  // same body.
  // CHECK:      %[[SHIFTED:.+]] = memref.view %[[ARENA]]
  // CHECK-NEXT: call @[[OVERLAP:fsdp_kernel_[0-9]+]](%[[A]], %[[SHIFTED]])
  // CHECK-NEXT: call @[[COPY:fsdp_kernel_[0-9]+]](%[[A]], %[[C]])
  %c2000 = arith.constant 2000 : index
  %shifted = memref.view %arena[%c2000][] : memref<16384xi8> to memref<1000xf32>
  memref.copy %a, %shifted : memref<1000xf32> to memref<1000xf32>
  memref.copy %a, %c : memref<1000xf32> to memref<1000xf32>

  // Not compute: stays in the step.
  // CHECK-NEXT: memref.load
  // CHECK-NEXT: return
  %loss = memref.load %a[%c0] : memref<1000xf32>
  return %loss : f32
}

// CHECK:      func.func private @[[FILL]](%{{.+}}: memref<1000xf32> {llvm.noalias}) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]} {
// CHECK-NEXT:   %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   linalg.fill ins(%[[ZERO]] : f32)
// CHECK-NEXT:   return
// CHECK:      func.func private @[[SCALE]](%{{.+}}: memref<1000xf32> {llvm.noalias}, %{{.+}}: memref<1000xf32> {llvm.noalias}, %{{.+}}: f32) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK:        arith.mulf
// CHECK:      func.func private @[[INPLACE]](%{{.+}}: memref<1000xf32> {llvm.noalias}) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK:        arith.addf
// CHECK:      func.func private @[[OVERLAP]](%{{.+}}: memref<1000xf32>, %{{.+}}: memref<1000xf32>) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK-NEXT:   memref.copy
// CHECK:      func.func private @[[COPY]](%{{.+}}: memref<1000xf32> {llvm.noalias}, %{{.+}}: memref<1000xf32> {llvm.noalias}) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK-NEXT:   memref.copy
// CHECK-NOT:  func.func

// -----

// The CUDA target: the host side of each launch (its sizes, the compute
// stream as the launch's async token) in a function; two launches of one
// kernel on the same sizes share it.

// CHECK-LABEL: func.func @fsdp_train_step
// CHECK:       %[[STREAM:.+]] = call @fsdprt_stream
// CHECK:       %[[A:.+]] = memref.view
// CHECK:       %[[B:.+]] = memref.view
// CHECK:       call @[[LAUNCH:fsdp_kernel_[0-9]+]](%[[STREAM]], %[[A]]) : (!llvm.ptr, memref<1000xf32>) -> ()
// CHECK-NEXT:  call @[[LAUNCH]](%[[STREAM]], %[[B]])
// CHECK-NEXT:  return
module attributes {gpu.container_module} {
  func.func @fsdp_train_step(%arena: memref<8192xi8>, %step: i64, %lr: f32) -> f32 {
    %c4 = arith.constant 4 : index
    %c256 = arith.constant 256 : index
    %c0 = arith.constant 0 : index
    %c4096 = arith.constant 4096 : index
    %c1 = arith.constant 1 : index
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant 0.0 : f32
    %stream = call @fsdprt_stream(%c0_i32) : (i32) -> !llvm.ptr
    %token = builtin.unrealized_conversion_cast %stream : !llvm.ptr to !gpu.async.token
    %a = memref.view %arena[%c0][] : memref<8192xi8> to memref<1000xf32>
    %b = memref.view %arena[%c4096][] : memref<8192xi8> to memref<1000xf32>
    %blocks = arith.muli %c4, %c1 : index
    %0 = gpu.launch_func async [%token] @fsdp_kernels::@fill blocks in (%blocks, %c1, %c1) threads in (%c256, %c1, %c1) args(%cst : f32, %a : memref<1000xf32>)
    %1 = gpu.launch_func async [%token] @fsdp_kernels::@fill blocks in (%blocks, %c1, %c1) threads in (%c256, %c1, %c1) args(%cst : f32, %b : memref<1000xf32>)
    return %cst : f32
  }
  gpu.module @fsdp_kernels {
    gpu.func @fill(%value: f32, %out: memref<1000xf32>) kernel {
      %i = gpu.thread_id x
      memref.store %value, %out[%i] : memref<1000xf32>
      gpu.return
    }
  }
  func.func private @fsdprt_stream(i32) -> !llvm.ptr
}

// CHECK:      func.func private @[[LAUNCH]](%[[S:.+]]: !llvm.ptr, %[[OUT:.+]]: memref<1000xf32> {llvm.noalias})
// CHECK-DAG:    %[[TOKEN:.+]] = builtin.unrealized_conversion_cast %[[S]] : !llvm.ptr to !gpu.async.token
// CHECK-DAG:    %[[BLOCKS:.+]] = arith.muli
// CHECK:        gpu.launch_func async [%[[TOKEN]]] @fsdp_kernels::@fill blocks in (%[[BLOCKS]], {{.+}} args({{.+}} : f32, %[[OUT]] : memref<1000xf32>)
// CHECK-NEXT:   return
// CHECK-NOT:  func.func {{.*}}@fsdp_kernel
