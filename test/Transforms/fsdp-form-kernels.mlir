// RUN: fsdp-opt %s -split-input-file --fsdp-form-kernels | FileCheck %s
// RUN: fsdp-opt %s -split-input-file --fsdp-form-kernels=block-size=64 | FileCheck %s --check-prefix=B64
// RUN: fsdp-opt %s -split-input-file --pass-pipeline='builtin.module(fsdp-form-kernels,func.func(gpu-map-parallel-loops,convert-parallel-loops-to-gpu))' | FileCheck %s --check-prefix=LAUNCH

// Every linalg op and copy of the step becomes one two-level scf.parallel
// nest (blocks, then the threads of a block), which the upstream mapping turns
// into one gpu.launch each.

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#sc = affine_map<(d0) -> ()>

// CHECK-LABEL: func.func @fsdp_train_step
// CHECK-DAG:  %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG:  %[[C10:.+]] = arith.constant 10 : index
// CHECK-DAG:  %[[C24:.+]] = arith.constant 24 : index
// CHECK-DAG:  %[[C240:.+]] = arith.constant 240 : index
// CHECK-DAG:  %[[C1000:.+]] = arith.constant 1000 : index
// LAUNCH-LABEL: func.func @fsdp_train_step
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c4096 = arith.constant 4096 : index
  %c8192 = arith.constant 8192 : index
  %c12288 = arith.constant 12288 : index
  %a = memref.view %arena[%c0][] : memref<16384xi8> to memref<1000xf32>
  %b = memref.view %arena[%c4096][] : memref<16384xi8> to memref<1000xf32>
  // 1000 elements: blocks of 256 threads, the last one partial and guarded.
  // CHECK:      %[[C256:.+]] = arith.constant 256 : index
  // CHECK:      %[[STEP:.+]] = arith.muli %{{.+}}, %[[C256]] : index
  // CHECK:      scf.parallel (%[[BLOCK:.+]]) = (%{{.+}}) to (%[[C1000]]) step (%[[STEP]]) {
  // CHECK-NEXT:   scf.parallel (%[[THREAD:.+]]) = (%{{.+}}) to (%[[STEP]]) step (%{{.+}}) {
  // CHECK-NEXT:     %[[I:.+]] = arith.addi %[[THREAD]], %[[BLOCK]] : index
  // CHECK:          %[[IN:.+]] = arith.cmpi ult, %{{.+}}, %[[C1000]] : index
  // CHECK:          scf.if
  // CHECK-NEXT:       memref.load %{{.+}}[%[[I]]] : memref<1000xf32>
  // CHECK-NEXT:       arith.mulf
  // CHECK-NEXT:       memref.store %{{.+}}, %{{.+}}[%[[I]]] : memref<1000xf32>
  // B64:        %[[C64:.+]] = arith.constant 64 : index
  // B64:        %[[STEP:.+]] = arith.muli %{{.+}}, %[[C64]] : index
  // B64:        scf.parallel (%{{.+}}) = (%{{.+}}) to (%{{.+}}) step (%[[STEP]]) {
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%a : memref<1000xf32>) outs(%b : memref<1000xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %lr : f32
    linalg.yield %s : f32
  }

  // A column sum: the parallel loop first, the rows summed inside each of
  // the 10 threads (one block: the loop is shorter than a block).
  // CHECK:      scf.parallel (%[[BLOCK:.+]]) = (%{{.+}}) to (%[[C10]]) step (%[[STEP:.+]]) {
  // CHECK-NEXT:   scf.parallel (%[[THREAD:.+]]) = (%{{.+}}) to (%[[STEP]]) step (%{{.+}}) {
  // CHECK-NEXT:     %[[J:.+]] = arith.addi %[[THREAD]], %[[BLOCK]] : index
  // CHECK-NEXT:     scf.for %[[ROW:.+]] = %{{.+}} to %[[C24]] step %{{.+}} {
  // CHECK-NEXT:       memref.load %{{.+}}[%[[ROW]], %[[J]]] : memref<24x10xf32>
  %m = memref.view %arena[%c0][] : memref<16384xi8> to memref<24x10xf32>
  %v = memref.view %arena[%c8192][] : memref<16384xi8> to memref<10xf32>
  linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]}
      ins(%m : memref<24x10xf32>) outs(%v : memref<10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }

  // A copy is a kernel too; its two dimensions collapse into one of 240.
  // CHECK:      scf.parallel (%[[BLOCK:.+]]) = (%{{.+}}) to (%[[C240]]) step (%[[STEP:.+]]) {
  // CHECK-NEXT:   scf.parallel (%[[THREAD:.+]]) = (%{{.+}}) to (%[[STEP]]) step (%{{.+}}) {
  // CHECK-NEXT:     %[[K:.+]] = arith.addi %[[THREAD]], %[[BLOCK]] : index
  // CHECK-NEXT:     %[[COLUMN:.+]] = arith.remsi %[[K]], %[[C10]] : index
  // CHECK-NEXT:     %[[ROW:.+]] = arith.divsi %[[K]], %[[C10]] : index
  // CHECK-NEXT:     %[[X:.+]] = memref.load %{{.+}}[%[[ROW]], %[[COLUMN]]] : memref<24x10xf32>
  // CHECK-NEXT:     memref.store %[[X]], %{{.+}}[%[[ROW]], %[[COLUMN]]] : memref<24x10xf32>
  // CHECK-NOT:  memref.copy
  %m2 = memref.view %arena[%c4096][] : memref<16384xi8> to memref<24x10xf32>
  memref.copy %m, %m2 : memref<24x10xf32> to memref<24x10xf32>

  // A full reduction has no parallel loop: one block of one thread.
  // CHECK:      scf.parallel (%[[BLOCK:.+]]) = (%{{.+}}) to (%[[C1]]) step (%[[STEP:.+]]) {
  // CHECK-NEXT:   scf.parallel (%{{.+}}) = (%{{.+}}) to (%[[STEP]]) step (%{{.+}}) {
  // CHECK-NEXT:     arith.addi
  // CHECK-NEXT:     scf.for %[[E:.+]] = %{{.+}} to %[[C1000]] step %{{.+}} {
  // CHECK-NEXT:       memref.load %{{.+}}[%[[E]]] : memref<1000xf32>
  // CHECK-NEXT:       memref.load %{{.+}}[] : memref<f32>
  %loss = memref.view %arena[%c12288][] : memref<16384xi8> to memref<f32>
  linalg.generic {indexing_maps = [#id1, #sc], iterator_types = ["reduction"]}
      ins(%b : memref<1000xf32>) outs(%loss : memref<f32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  // CHECK-NOT:  linalg.
  // CHECK:      return
  // Four kernels, each of blocks of threads.
  // LAUNCH-COUNT-4: gpu.launch blocks({{.+}}) in ({{.+}}) threads({{.+}}) in ({{.+}})
  // LAUNCH-NOT: gpu.launch
  // LAUNCH:     return
  %r = arith.constant 0.0 : f32
  return %r : f32
}

// -----

// A loop that calls the runtime (the attention's key blocks, whose products
// are library calls) stays on the host and launches its body's kernels each
// iteration; a loop that does not is device work like any other, one kernel.
#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK:      scf.for
// CHECK-NEXT:   func.call @fsdprt_work
// CHECK:        scf.parallel
// CHECK-NEXT:     scf.parallel
// CHECK:          arith.mulf
// CHECK:      scf.parallel
// CHECK-NEXT:   scf.parallel
// CHECK:          scf.for
// CHECK-NEXT:       memref.store
// LAUNCH-LABEL: func.func @fsdp_train_step
// LAUNCH:      scf.for
// LAUNCH-NEXT:   func.call @fsdprt_work
// LAUNCH:        gpu.launch
// LAUNCH:      gpu.launch
func.func private @fsdprt_work(i64)
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = memref.view %arena[%c0][] : memref<16384xi8> to memref<100xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    func.call @fsdprt_work(%step) : (i64) -> ()
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%a : memref<100xf32>) {
    ^bb0(%x: f32):
      %y = arith.mulf %x, %lr : f32
      linalg.yield %y : f32
    }
  }
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %lr, %a[%i] : memref<100xf32>
  }
  %r = arith.constant 0.0 : f32
  return %r : f32
}
