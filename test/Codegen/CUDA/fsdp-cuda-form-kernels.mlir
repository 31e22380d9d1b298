// RUN: fsdp-opt %s -split-input-file --fsdp-cuda-form-kernels | FileCheck %s
// RUN: fsdp-opt %s -split-input-file --fsdp-cuda-form-kernels=block-size=64 | FileCheck %s --check-prefix=B64
// RUN: fsdp-opt %s -split-input-file --fsdp-cuda-form-kernels=vector-bytes=4 | FileCheck %s --check-prefix=ONE
// RUN: not fsdp-opt %s -split-input-file --fsdp-cuda-form-kernels=vector-bytes=12 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not fsdp-opt %s -split-input-file --fsdp-cuda-form-kernels=block-size=2000 2>&1 | FileCheck %s --check-prefix=BAD-BLOCK
// RUN: fsdp-opt %s -split-input-file --pass-pipeline='builtin.module(fsdp-cuda-form-kernels,func.func(gpu-map-parallel-loops,convert-parallel-loops-to-gpu))' | FileCheck %s --check-prefix=LAUNCH

// BAD: error: fsdp-cuda-form-kernels: vector-bytes 12 is not a power of two
// BAD-BLOCK: error: fsdp-cuda-form-kernels: block-size 2000 is not in [1, 1024]

// Every piece of device work of the step becomes a two-level scf.parallel
// nest (blocks, then the threads of a block), which the upstream mapping
// turns into one gpu.launch; none runs on a single thread.

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#sc = affine_map<(d0) -> ()>
#sc0 = affine_map<() -> ()>

// 1000 f32 elements: each thread takes 4 adjacent ones (16 bytes), loaded
// and stored as one vector, so 250 threads in one block.
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK-DAG:  %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG:  %[[C250:.+]] = arith.constant 250 : index
// CHECK:      scf.parallel (%[[BLOCK:.+]]) = (%{{.+}}) to (%[[C250]]) step (%[[STEP:.+]]) {
// CHECK-NEXT:   scf.parallel (%[[THREAD:.+]]) = (%{{.+}}) to (%[[STEP]]) step (%{{.+}}) {
// CHECK-NEXT:     %[[R:.+]] = arith.addi %[[THREAD]], %[[BLOCK]] : index
// CHECK-NEXT:     %[[I:.+]] = arith.muli %[[R]], %[[C4]] overflow<nsw, nuw> : index
// CHECK-NEXT:     %[[X:.+]] = vector.load %{{.+}}[%[[I]]] : memref<1000xf32>, vector<4xf32>
// CHECK-NEXT:     %[[X0:.+]] = vector.extract %[[X]][0] : f32 from vector<4xf32>
// CHECK-NEXT:     %[[X1:.+]] = vector.extract %[[X]][1] : f32 from vector<4xf32>
// CHECK-NEXT:     %[[X2:.+]] = vector.extract %[[X]][2] : f32 from vector<4xf32>
// CHECK-NEXT:     %[[X3:.+]] = vector.extract %[[X]][3] : f32 from vector<4xf32>
// CHECK-NEXT:     %[[Y0:.+]] = arith.mulf %[[X0]], %{{.+}} : f32
// CHECK-NEXT:     %[[Y1:.+]] = arith.mulf %[[X1]], %{{.+}} : f32
// CHECK-NEXT:     %[[Y2:.+]] = arith.mulf %[[X2]], %{{.+}} : f32
// CHECK-NEXT:     %[[Y3:.+]] = arith.mulf %[[X3]], %{{.+}} : f32
// CHECK-NEXT:     %[[Y:.+]] = vector.from_elements %[[Y0]], %[[Y1]], %[[Y2]], %[[Y3]] : vector<4xf32>
// CHECK-NEXT:     vector.store %[[Y]], %{{.+}}[%[[I]]] : memref<1000xf32>, vector<4xf32>
// CHECK-NEXT:     scf.reduce
// One element a thread (vector-bytes=4): blocks of 256 threads, the last one
// partial and guarded.
// ONE-LABEL: func.func @fsdp_train_step
// ONE-DAG:  %[[C1000:.+]] = arith.constant 1000 : index
// ONE-DAG:  %[[C256:.+]] = arith.constant 256 : index
// ONE:      %[[STEP:.+]] = arith.muli %{{.+}}, %[[C256]] : index
// ONE:      scf.parallel (%[[BLOCK:.+]]) = (%{{.+}}) to (%[[C1000]]) step (%[[STEP]]) {
// ONE-NEXT:   scf.parallel (%[[THREAD:.+]]) = (%{{.+}}) to (%[[STEP]]) step (%{{.+}}) {
// ONE-NEXT:     %[[I:.+]] = arith.addi %[[THREAD]], %[[BLOCK]] : index
// ONE:          %[[IN:.+]] = arith.cmpi ult, %{{.+}}, %[[C1000]] : index
// ONE:          scf.if
// ONE-NEXT:       memref.load %{{.+}}[%[[I]]] : memref<1000xf32>
// ONE-NEXT:       arith.mulf
// ONE-NEXT:       memref.store %{{.+}}, %{{.+}}[%[[I]]] : memref<1000xf32>
// Blocks of 64 threads over the 250 runs: the last one partial and guarded.
// B64-LABEL:  func.func @fsdp_train_step
// B64-DAG:    %[[C64:.+]] = arith.constant 64 : index
// B64-DAG:    %[[C250:.+]] = arith.constant 250 : index
// B64:        %[[STEP:.+]] = arith.muli %{{.+}}, %[[C64]] : index
// B64:        scf.parallel (%{{.+}}) = (%{{.+}}) to (%[[C250]]) step (%[[STEP]]) {
// B64:          arith.cmpi ult, %{{.+}}, %[[C250]] : index
// B64-NEXT:     arith.andi
// B64-NEXT:     scf.if
// B64-NEXT:       arith.muli
// B64-NEXT:       vector.load
// LAUNCH-LABEL: func.func @fsdp_train_step
// LAUNCH-COUNT-1: gpu.launch blocks({{.+}}) in ({{.+}}) threads({{.+}}) in ({{.+}})
// LAUNCH-NOT: gpu.launch
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c4096 = arith.constant 4096 : index
  %a = memref.view %arena[%c0][] : memref<16384xi8> to memref<1000xf32>
  %b = memref.view %arena[%c4096][] : memref<16384xi8> to memref<1000xf32>
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%a : memref<1000xf32>) outs(%b : memref<1000xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %lr : f32
    linalg.yield %s : f32
  }
  %r = arith.constant 0.0 : f32
  return %r : f32
}

// -----

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// A thread takes 4 adjacent elements of a row. What is contiguous along the
// row is one vector access (the input, the bias, the output); a value of the
// row's (the row scale) and a transposed input, 10 elements apart, are loaded
// per element.
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK:      %[[C160:.+]] = arith.constant 160 : index
// CHECK:      scf.parallel (%{{.+}}) = (%{{.+}}) to (%[[C160]]) step (%{{.+}}) {
// CHECK:          %[[ROW:.+]] = arith.divsi %{{.+}}, %{{.+}} : index
// CHECK:          %[[J:.+]] = arith.muli %{{.+}}, %{{.+}} overflow<nsw, nuw> : index
// CHECK:          vector.load %{{.+}}[%[[ROW]], %[[J]]] : memref<10x64xf32>, vector<4xf32>
// CHECK:          memref.load %{{.+}}[%[[ROW]]] : memref<10xf32>
// CHECK:          vector.load %{{.+}}[%[[J]]] : memref<64xf32>, vector<4xf32>
// CHECK:          memref.load %{{.+}}[%[[J]], %[[ROW]]] : memref<64x10xf32>
// CHECK-COUNT-3:  memref.load %{{.+}}[%{{.+}}, %[[ROW]]] : memref<64x10xf32>
// CHECK:          vector.store %{{.+}}, %{{.+}}[%[[ROW]], %[[J]]] : memref<10x64xf32>, vector<4xf32>
// CHECK-NOT:      memref.store
// B64-LABEL: func.func @fsdp_train_step
// LAUNCH-LABEL: func.func @fsdp_train_step
// LAUNCH-COUNT-1: gpu.launch blocks
// LAUNCH-NOT: gpu.launch
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c2560 = arith.constant 2560 : index
  %c5120 = arith.constant 5120 : index
  %c5184 = arith.constant 5184 : index
  %c5440 = arith.constant 5440 : index
  %a = memref.view %arena[%c0][] : memref<16384xi8> to memref<10x64xf32>
  %out = memref.view %arena[%c2560][] : memref<16384xi8> to memref<10x64xf32>
  %scale = memref.view %arena[%c5120][] : memref<16384xi8> to memref<10xf32>
  %bias = memref.view %arena[%c5184][] : memref<16384xi8> to memref<64xf32>
  %t = memref.view %arena[%c5440][] : memref<16384xi8> to memref<64x10xf32>
  linalg.generic {indexing_maps = [#id2, #row, #col, #tr, #id2],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a, %scale, %bias, %t : memref<10x64xf32>, memref<10xf32>, memref<64xf32>, memref<64x10xf32>)
      outs(%out : memref<10x64xf32>) {
  ^bb0(%x: f32, %s: f32, %b: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %s : f32
    %p = arith.addf %m, %b : f32
    %q = arith.addf %p, %y : f32
    linalg.yield %q : f32
  }
  %r = arith.constant 0.0 : f32
  return %r : f32
}

// -----

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// Rows of 6 f32: 4 do not divide them, 2 do (8 bytes a thread).
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK:      %[[C30:.+]] = arith.constant 30 : index
// CHECK:      scf.parallel (%{{.+}}) = (%{{.+}}) to (%[[C30]]) step (%{{.+}}) {
// CHECK:          %[[X:.+]] = vector.load %{{.+}}[%{{.+}}, %{{.+}}] : memref<10x6xf32>, vector<2xf32>
// CHECK-COUNT-2:  math.exp
// CHECK:          vector.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}] : memref<10x6xf32>, vector<2xf32>
// B64-LABEL: func.func @fsdp_train_step
// LAUNCH-LABEL: func.func @fsdp_train_step
// LAUNCH-COUNT-1: gpu.launch blocks
// LAUNCH-NOT: gpu.launch
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c256 = arith.constant 256 : index
  %a = memref.view %arena[%c0][] : memref<16384xi8> to memref<10x6xf32>
  %b = memref.view %arena[%c256][] : memref<16384xi8> to memref<10x6xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<10x6xf32>) outs(%b : memref<10x6xf32>) {
  ^bb0(%x: f32, %o: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  %r = arith.constant 0.0 : f32
  return %r : f32
}

// -----

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// f32 rounded to bf16: 16 bytes of the smaller element are 8 elements, so a
// thread reads 32 bytes of f32 and writes 16 of bf16.
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK:      %[[C64:.+]] = arith.constant 64 : index
// CHECK:      scf.parallel (%{{.+}}) = (%{{.+}}) to (%[[C64]]) step (%{{.+}}) {
// CHECK:          vector.load %{{.+}}[%{{.+}}] : memref<512xf32>, vector<8xf32>
// CHECK-COUNT-8:  arith.truncf %{{.+}} : f32 to bf16
// CHECK:          vector.store %{{.+}}, %{{.+}}[%{{.+}}] : memref<512xbf16>, vector<8xbf16>
// B64-LABEL: func.func @fsdp_train_step
// LAUNCH-LABEL: func.func @fsdp_train_step
// LAUNCH-COUNT-1: gpu.launch blocks
// LAUNCH-NOT: gpu.launch
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c2048 = arith.constant 2048 : index
  %a = memref.view %arena[%c0][] : memref<16384xi8> to memref<512xf32>
  %b = memref.view %arena[%c2048][] : memref<16384xi8> to memref<512xbf16>
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%a : memref<512xf32>) outs(%b : memref<512xbf16>) {
  ^bb0(%x: f32, %o: bf16):
    %t = arith.truncf %x : f32 to bf16
    linalg.yield %t : bf16
  }
  %r = arith.constant 0.0 : f32
  return %r : f32
}

// -----

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// 999 elements (odd): one a thread, scalar accesses.
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK:      %[[C999:.+]] = arith.constant 999 : index
// CHECK:      scf.parallel (%{{.+}}) = (%{{.+}}) to (%[[C999]]) step (%{{.+}}) {
// CHECK:          memref.load %{{.+}}[%{{.+}}] : memref<999xf32>
// CHECK:          memref.store %{{.+}}, %{{.+}}[%{{.+}}] : memref<999xf32>
// B64-LABEL: func.func @fsdp_train_step
// LAUNCH-LABEL: func.func @fsdp_train_step
// LAUNCH-COUNT-1: gpu.launch blocks
// LAUNCH-NOT: gpu.launch
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c4096 = arith.constant 4096 : index
  %a = memref.view %arena[%c0][] : memref<16384xi8> to memref<999xf32>
  %b = memref.view %arena[%c4096][] : memref<16384xi8> to memref<999xf32>
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%a : memref<999xf32>) outs(%b : memref<999xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.mulf %x, %lr : f32
    linalg.yield %s : f32
  }
  %r = arith.constant 0.0 : f32
  return %r : f32
}

// -----

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#sc = affine_map<(d0) -> ()>
#sc0 = affine_map<() -> ()>

// A column sum (24 rows, strided): a thread per column, the parallel loop
// first; the running sum starts from what the output holds and stays in a
// register, stored once.
// CHECK-LABEL: func.func @fsdp_train_step
// LAUNCH-LABEL: func.func @fsdp_train_step
// CHECK-DAG:  %[[C24:.+]] = arith.constant 24 : index
// CHECK:      scf.parallel (%[[BLOCK:.+]]) = (%{{.+}}) to (%{{.+}}) step (%[[STEP:.+]]) {
// CHECK-NEXT:   scf.parallel (%[[THREAD:.+]]) = (%{{.+}}) to (%[[STEP]]) step (%{{.+}}) {
// CHECK-NEXT:     %[[J:.+]] = arith.addi %[[THREAD]], %[[BLOCK]] : index
// CHECK:          %[[START:.+]] = memref.load %[[V:.+]][%[[J]]] : memref<10xf32>
// CHECK-NEXT:     %[[SUM:.+]] = scf.for %[[ROW:.+]] = %{{.+}} to %[[C24]] step %{{.+}} iter_args(%[[ACC:.+]] = %[[START]]) -> (f32) {
// CHECK-NEXT:       %[[X:.+]] = memref.load %{{.+}}[%[[ROW]], %[[J]]] : memref<24x10xf32>
// CHECK-NEXT:       %[[NEXT:.+]] = arith.addf %[[X]], %[[ACC]] : f32
// CHECK-NEXT:       scf.yield %[[NEXT]] : f32
// CHECK:          memref.store %[[SUM]], %[[V]][%[[J]]] : memref<10xf32>
// CHECK-NOT:  memref.store
// B64-LABEL:  func.func @fsdp_train_step
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c8192 = arith.constant 8192 : index
  %m = memref.view %arena[%c0][] : memref<16384xi8> to memref<24x10xf32>
  %v = memref.view %arena[%c8192][] : memref<16384xi8> to memref<10xf32>
  linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]}
      ins(%m : memref<24x10xf32>) outs(%v : memref<10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  %r = arith.constant 0.0 : f32
  return %r : f32
}

// -----

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#sc = affine_map<(d0) -> ()>
#sc0 = affine_map<() -> ()>

// Row maxima of 24 rows of 100 contiguous elements: a block per row whose threads fold
// runs of 4 adjacent elements, one 16-byte load a run, the run's elements in order (25
// runs: one warp of 32 threads, however large the block may be), from the identity; then
// a block reduction; thread 0 combines the fill's value (no fill kernel left) with the
// result and stores it.
// CHECK-LABEL: func.func @fsdp_train_step
// LAUNCH-LABEL: func.func @fsdp_train_step
// CHECK-DAG:  %[[NEG:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG:  %[[FILL:.+]] = arith.constant -1.000000e+03 : f32
// CHECK-DAG:  %[[C24:.+]] = arith.constant 24 : index
// CHECK-DAG:  %[[C32:.+]] = arith.constant 32 : index
// CHECK-DAG:  %[[C25:.+]] = arith.constant 25 : index
// CHECK-DAG:  %[[C4:.+]] = arith.constant 4 : index
// CHECK-NOT:  linalg.fill
// CHECK:      scf.parallel (%[[ROW:.+]]) = (%{{.+}}) to (%[[C24]]) step (%{{.+}}) {
// CHECK-NEXT:   scf.parallel (%[[LANE:.+]]) = (%{{.+}}) to (%[[C32]]) step (%{{.+}}) {
// CHECK-NEXT:     %[[PART:.+]] = scf.for %[[R:.+]] = %[[LANE]] to %[[C25]] step %[[C32]] iter_args(%[[ACC:.+]] = %[[NEG]]) -> (f32) {
// CHECK-NEXT:       %[[K:.+]] = arith.muli %[[R]], %[[C4]] : index
// CHECK-NEXT:       %[[VEC:.+]] = vector.load %{{.+}}[%[[ROW]], %[[K]]] : memref<24x100xf32>, vector<4xf32>
// CHECK-NEXT:       %[[X0:.+]] = vector.extract %[[VEC]][0]
// CHECK-NEXT:       %[[X1:.+]] = vector.extract %[[VEC]][1]
// CHECK-NEXT:       %[[X2:.+]] = vector.extract %[[VEC]][2]
// CHECK-NEXT:       %[[X3:.+]] = vector.extract %[[VEC]][3]
// CHECK-NEXT:       %[[M0:.+]] = arith.maximumf %[[ACC]], %[[X0]] : f32
// CHECK-NEXT:       %[[M1:.+]] = arith.maximumf %[[M0]], %[[X1]] : f32
// CHECK-NEXT:       %[[M2:.+]] = arith.maximumf %[[M1]], %[[X2]] : f32
// CHECK-NEXT:       arith.maximumf %[[M2]], %[[X3]] : f32
// CHECK:          %[[ALL:.+]] = gpu.all_reduce maximumf %[[PART]] uniform
// CHECK:          %[[MAX:.+]] = arith.maximumf %[[ALL]], %[[FILL]] : f32
// CHECK-NEXT:     %[[FIRST:.+]] = arith.cmpi eq, %[[LANE]], %{{.+}} : index
// CHECK-NEXT:     scf.if %[[FIRST]] {
// CHECK-NEXT:       memref.store %[[MAX]], %{{.+}}[%[[ROW]]] : memref<24xf32>
// B64-LABEL:  func.func @fsdp_train_step
// B64-DAG:    %[[C24:.+]] = arith.constant 24 : index
// B64-DAG:    %[[C32:.+]] = arith.constant 32 : index
// B64:        scf.parallel (%{{.+}}) = (%{{.+}}) to (%[[C24]]) step (%{{.+}}) {
// B64-NEXT:     scf.parallel (%{{.+}}) = (%{{.+}}) to (%[[C32]]) step (%{{.+}}) {
// B64-NEXT:       scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[C32]] iter_args
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c12288 = arith.constant 12288 : index
  %low = arith.constant -1000.0 : f32
  %m = memref.view %arena[%c0][] : memref<16384xi8> to memref<24x100xf32>
  %v = memref.view %arena[%c12288][] : memref<16384xi8> to memref<24xf32>
  linalg.fill ins(%low : f32) outs(%v : memref<24xf32>)
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%m : memref<24x100xf32>) outs(%v : memref<24xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.maximumf %out, %in : f32
    linalg.yield %s : f32
  }
  %r = arith.constant 0.0 : f32
  return %r : f32
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// LAUNCH-LABEL: func.func @fsdp_train_step
// Row sums of 576 elements: 144 runs of 4 need 5 warps, but the block gets 8 (256
// threads; with block-size=64, 2): a power of two of warps, the only counts for which
// upstream's gpu.all_reduce lowering gives every thread that stores the second-level
// sum the same bits (with 5 warps they differ, and the racing stores decide the result:
// compute-sanitizer's racecheck on odd-sizes' gradient norm, 160 threads).
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK-DAG:  %[[C256:.+]] = arith.constant 256 : index
// CHECK-DAG:  %[[C144:.+]] = arith.constant 144 : index
// CHECK:      scf.parallel (%{{.+}}) = (%{{.+}}) to (%{{.+}}) step (%{{.+}}) {
// CHECK-NEXT:   scf.parallel (%[[LANE:.+]]) = (%{{.+}}) to (%[[C256]]) step (%{{.+}}) {
// CHECK-NEXT:     scf.for %{{.+}} = %[[LANE]] to %[[C144]] step %[[C256]] iter_args
// CHECK:          gpu.all_reduce add
// B64-LABEL:  func.func @fsdp_train_step
// B64-DAG:    %[[C64:.+]] = arith.constant 64 : index
// B64:        scf.parallel (%{{.+}}) = (%{{.+}}) to (%{{.+}}) step (%{{.+}}) {
// B64-NEXT:     scf.parallel (%{{.+}}) = (%{{.+}}) to (%[[C64]]) step (%{{.+}}) {
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c9216 = arith.constant 9216 : index
  %zero = arith.constant 0.0 : f32
  %m = memref.view %arena[%c0][] : memref<16384xi8> to memref<4x576xf32>
  %v = memref.view %arena[%c9216][] : memref<16384xi8> to memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%v : memref<4xf32>)
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%m : memref<4x576xf32>) outs(%v : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  }
  %r = arith.constant 0.0 : f32
  return %r : f32
}

// -----

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#sc = affine_map<(d0) -> ()>
#sc0 = affine_map<() -> ()>

// A full reduction: one block, all of whose threads sum; the scalar op after
// it (the loss's mean) is done by thread 0 once the sum is stored, and a
// scalar op after a collective is computed by every thread of the kernel
// that reads it, the first of which stores it. Nothing runs on one thread.
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK-DAG:  %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG:  %[[HALF:.+]] = arith.constant 5.000000e-01 : f32
// CHECK:      scf.parallel (%{{.+}}) = (%{{.+}}) to (%[[C1]]) step (%{{.+}}) {
// CHECK-NEXT:   scf.parallel (%[[LANE:.+]]) = (%{{.+}}) to (%{{.+}}) step (%{{.+}}) {
// CHECK:          %[[PART:.+]] = scf.for
// CHECK:          %[[ALL:.+]] = gpu.all_reduce add %[[PART]] uniform
// CHECK:          %[[SUM:.+]] = arith.addf %[[ALL]], %{{.+}} : f32
// CHECK:          scf.if
// CHECK-NEXT:       memref.store %[[SUM]], %[[TOTAL:.+]][] : memref<f32>
// CHECK-NEXT:       %[[IN:.+]] = memref.load %[[TOTAL]][] : memref<f32>
// CHECK-NEXT:       %[[MEAN:.+]] = arith.mulf %[[IN]], %[[HALF]] : f32
// CHECK-NEXT:       memref.store %[[MEAN]], %[[LOSS:.+]][] : memref<f32>
// CHECK:      call @fsdprt_collective
// CHECK:      scf.parallel (%[[BLOCK:.+]]) = (%{{.+}}) to (%{{.+}}) step (%{{.+}}) {
// CHECK-NEXT:   scf.parallel (%[[THREAD:.+]]) = (%{{.+}}) to (%{{.+}}) step (%{{.+}}) {
// CHECK:            %[[L:.+]] = memref.load %[[LOSS]][] : memref<f32>
// CHECK-NEXT:       %[[SCALE:.+]] = math.sqrt %[[L]] : f32
// CHECK-NEXT:       %[[ZERO:.+]] = arith.cmpi eq, %{{.+}}, %{{.+}} : index
// CHECK-NEXT:       scf.if %[[ZERO]] {
// CHECK-NEXT:         memref.store %[[SCALE]], %[[FACTOR:.+]][] : memref<f32>
// CHECK:            %[[X:.+]] = vector.load %{{.+}}[%{{.+}}] : memref<1000xf32>, vector<4xf32>
// CHECK-NEXT:       %[[X0:.+]] = vector.extract %[[X]][0] : f32 from vector<4xf32>
// CHECK:            arith.mulf %[[X0]], %[[SCALE]] : f32
// CHECK-NOT:  memref.load %[[FACTOR]]
// LAUNCH-LABEL: func.func @fsdp_train_step
// LAUNCH-COUNT-2: gpu.launch blocks
// LAUNCH-NOT: gpu.launch
func.func private @fsdprt_collective(i64)
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c4096 = arith.constant 4096 : index
  %c12288 = arith.constant 12288 : index
  %c12292 = arith.constant 12292 : index
  %c12296 = arith.constant 12296 : index
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %a = memref.view %arena[%c0][] : memref<16384xi8> to memref<1000xf32>
  %b = memref.view %arena[%c4096][] : memref<16384xi8> to memref<1000xf32>
  %total = memref.view %arena[%c12288][] : memref<16384xi8> to memref<f32>
  linalg.fill ins(%zero : f32) outs(%total : memref<f32>)
  linalg.generic {indexing_maps = [#id1, #sc], iterator_types = ["reduction"]}
      ins(%a : memref<1000xf32>) outs(%total : memref<f32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  %loss = memref.view %arena[%c12292][] : memref<16384xi8> to memref<f32>
  linalg.generic {indexing_maps = [#sc0, #sc0], iterator_types = []}
      ins(%total : memref<f32>) outs(%loss : memref<f32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %half : f32
    linalg.yield %s : f32
  }
  func.call @fsdprt_collective(%step) : (i64) -> ()
  %factor = memref.view %arena[%c12296][] : memref<16384xi8> to memref<f32>
  linalg.generic {indexing_maps = [#sc0, #sc0], iterator_types = []}
      ins(%loss : memref<f32>) outs(%factor : memref<f32>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.sqrt %in : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%a : memref<1000xf32>) outs(%b : memref<1000xf32>) {
  ^bb0(%in: f32, %out: f32):
    %f = memref.load %factor[] : memref<f32>
    %s = arith.mulf %in, %f : f32
    linalg.yield %s : f32
  }
  %r = arith.constant 0.0 : f32
  return %r : f32
}

// -----

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#sc = affine_map<(d0) -> ()>
#sc0 = affine_map<() -> ()>

// A generic whose body runs a loop of its own (the sorted embedding
// gradient's piece sums: a count read from memory, capped at 256, then rows
// gathered by position): a thread per point, each running its loop once (not
// once per element of a 16-byte run, one loop after the other).
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK:      scf.parallel (%[[BLOCK:.+]]) = (%{{.+}}) to (%{{.+}}) step (%[[STEP:.+]]) {
// CHECK-NEXT:   scf.parallel (%[[THREAD:.+]]) = (%{{.+}}) to (%[[STEP]]) step (%{{.+}}) {
// CHECK:          %[[COUNT:.+]] = memref.load %{{.+}} : memref<8xi32>
// CHECK:          %[[BOUND:.+]] = arith.minsi %{{.+}}, %{{.+}} : index
// CHECK:          %[[SUM:.+]] = scf.for %{{.+}} = %{{.+}} to %[[BOUND]] step %{{.+}} iter_args(%{{.+}} = %{{.+}}) -> (f32) {
// CHECK:            memref.load %{{.+}} : memref<8x16xf32>
// CHECK:          memref.store %[[SUM]], %{{.+}} : memref<8x16xf32>
// CHECK-NOT:      scf.for
// CHECK:          scf.reduce
// LAUNCH-LABEL: func.func @fsdp_train_step
// LAUNCH-COUNT-1: gpu.launch blocks
// LAUNCH-NOT: gpu.launch
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1024 = arith.constant 1024 : index
  %c4096 = arith.constant 4096 : index
  %counts = memref.view %arena[%c0][] : memref<16384xi8> to memref<8xi32>
  %grad = memref.view %arena[%c1024][] : memref<16384xi8> to memref<8x16xf32>
  %sums = memref.view %arena[%c4096][] : memref<16384xi8> to memref<8x16xf32>
  linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]}
      outs(%sums : memref<8x16xf32>) {
  ^bb0(%out: f32):
    %p = linalg.index 0 : index
    %d = linalg.index 1 : index
    %count = memref.load %counts[%p] : memref<8xi32>
    %n = arith.index_cast %count : i32 to index
    %cap = arith.constant 256 : index
    %bound = arith.minsi %n, %cap : index
    %zero = arith.constant 0.0 : f32
    %i0 = arith.constant 0 : index
    %i1 = arith.constant 1 : index
    %sum = scf.for %t = %i0 to %bound step %i1 iter_args(%acc = %zero) -> (f32) {
      %row = arith.addi %p, %t : index
      %g = memref.load %grad[%row, %d] : memref<8x16xf32>
      %next = arith.addf %acc, %g : f32
      scf.yield %next : f32
    }
    linalg.yield %sum : f32
  }
  %r = arith.constant 0.0 : f32
  return %r : f32
}

// -----

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#sc = affine_map<(d0) -> ()>
#sc0 = affine_map<() -> ()>

// Consecutive kernels that touch no byte another of them writes run as one,
// their index spaces end to end (a unit's gradients copied into its flat
// gradient); a matrix product between them that touches none of their bytes
// does not stop the run. The third copy reads what the first wrote: it is a
// kernel of its own.
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK:      call @fsdprt_sgemm
// (Runs of 4 elements: 25 and 60 threads.)
// CHECK:      %[[C85:.+]] = arith.constant 85 : index
// CHECK:      scf.parallel (%[[BLOCK:.+]]) = (%{{.+}}) to (%[[C85]]) step (%[[STEP:.+]]) {
// CHECK-NEXT:   scf.parallel (%[[THREAD:.+]]) = (%{{.+}}) to (%[[STEP]]) step (%{{.+}}) {
// CHECK-NEXT:     %[[I:.+]] = arith.addi %[[THREAD]], %[[BLOCK]] : index
// CHECK:            %[[C25:.+]] = arith.constant 25 : index
// CHECK-NEXT:       %[[FIRST:.+]] = arith.cmpi ult, %[[I]], %[[C25]] : index
// CHECK-NEXT:       scf.if %[[FIRST]] {
// CHECK-NEXT:         %[[LAST0:.+]] = arith.constant 24 : index
// CHECK-NEXT:         %[[I0:.+]] = arith.minsi %[[I]], %[[LAST0]] : index
// CHECK-NEXT:         %[[A:.+]] = arith.muli %[[I0]], %{{.+}} overflow<nsw, nuw> : index
// CHECK-NEXT:         vector.load %{{.+}}[%[[A]]] : memref<100xf32>, vector<4xf32>
// CHECK:            arith.cmpi uge, %[[I]], %{{.+}} : index
// CHECK:            scf.if
// CHECK-NEXT:         %[[START:.+]] = arith.constant 25 : index
// CHECK-NEXT:         %[[J:.+]] = arith.subi %[[I]], %[[START]] : index
// (Each index clamped to its nest's range, which the guard ensures, for the
// integer range analysis of fsdp-cuda-narrow-kernel-indices.)
// CHECK-NEXT:         %[[LAST1:.+]] = arith.constant 59 : index
// CHECK-NEXT:         %[[J1:.+]] = arith.minsi %[[J]], %[[LAST1]] : index
// CHECK-NEXT:         %[[ZERO:.+]] = arith.constant 0 : index
// CHECK-NEXT:         %[[J2:.+]] = arith.maxsi %[[J1]], %[[ZERO]] : index
// CHECK-NEXT:         %[[B:.+]] = arith.muli %[[J2]], %{{.+}} overflow<nsw, nuw> : index
// CHECK-NEXT:         vector.load %{{.+}}[%[[B]]] : memref<240xf32>, vector<4xf32>
// CHECK:      scf.parallel
// CHECK:          vector.load %{{.+}}[%{{.+}}] : memref<100xf32>, vector<4xf32>
// LAUNCH-LABEL: func.func @fsdp_train_step
// LAUNCH-COUNT-2: gpu.launch blocks
// LAUNCH-NOT: gpu.launch
func.func private @fsdprt_sgemm(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64)
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1024 = arith.constant 1024 : index
  %c2048 = arith.constant 2048 : index
  %c4096 = arith.constant 4096 : index
  %c8192 = arith.constant 8192 : index
  %c12288 = arith.constant 12288 : index
  %x = memref.view %arena[%c0][] : memref<16384xi8> to memref<100xf32>
  %y = memref.view %arena[%c1024][] : memref<16384xi8> to memref<100xf32>
  memref.copy %x, %y : memref<100xf32> to memref<100xf32>
  %i32 = arith.constant 0 : i32
  %n = arith.constant 8 : i64
  %one = arith.constant 1.0 : f32
  %c = memref.view %arena[%c12288][] : memref<16384xi8> to memref<1024xi8>
  %base = memref.extract_aligned_pointer_as_index %c : memref<1024xi8> -> index
  %int = arith.index_cast %base : index to i64
  %p = llvm.inttoptr %int : i64 to !llvm.ptr
  func.call @fsdprt_sgemm(%i32, %i32, %n, %n, %n, %one, %p, %n, %p, %n, %one, %p, %n) : (i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> ()
  %u = memref.view %arena[%c2048][] : memref<16384xi8> to memref<240xf32>
  %w = memref.view %arena[%c4096][] : memref<16384xi8> to memref<240xf32>
  memref.copy %u, %w : memref<240xf32> to memref<240xf32>
  %z = memref.view %arena[%c8192][] : memref<16384xi8> to memref<100xf32>
  memref.copy %y, %z : memref<100xf32> to memref<100xf32>
  %r = arith.constant 0.0 : f32
  return %r : f32
}

// -----

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#sc = affine_map<(d0) -> ()>
#sc0 = affine_map<() -> ()>

// The row-wise op after a block reduction (x minus its row's sum) runs in
// its kernel: each block's threads compute their row with the result in
// hand, in runs of 4 (16-byte loads and stores). A reduction of the same rows before them that touches no byte they
// write shares the kernel too (one block reduction after the other).
// CHECK-LABEL: func.func @fsdp_train_step
// LAUNCH-LABEL: func.func @fsdp_train_step
// CHECK:      scf.parallel (%[[ROW:.+]]) = (%{{.+}}) to (%{{.+}}) step (%{{.+}}) {
// CHECK-NEXT:   scf.parallel (%[[LANE:.+]]) = (%{{.+}}) to (%[[T:.+]]) step (%{{.+}}) {
// CHECK:          gpu.all_reduce maximumf
// CHECK:          scf.if
// CHECK:          %[[SUM:.+]] = gpu.all_reduce add
// CHECK:          %[[ROWSUM:.+]] = arith.addf %[[SUM]], %{{.+}} : f32
// CHECK:          scf.if
// CHECK:          scf.for %[[R:.+]] = %[[LANE]] to %{{.+}} step %[[T]] {
// CHECK-NEXT:       %[[K:.+]] = arith.muli %[[R]], %{{.+}} : index
// CHECK-NEXT:       %[[X:.+]] = vector.load %{{.+}}[%[[ROW]], %[[K]]] : memref<24x100xf32>, vector<4xf32>
// CHECK-NEXT:       %[[X0:.+]] = vector.extract %[[X]][0]
// CHECK-COUNT-3:    vector.extract %[[X]]
// CHECK-NEXT:       %[[Y0:.+]] = arith.subf %[[X0]], %[[ROWSUM]] : f32
// CHECK:            %[[YS:.+]] = vector.from_elements %[[Y0]],
// CHECK-NEXT:       vector.store %[[YS]], %{{.+}}[%[[ROW]], %[[K]]] : memref<24x100xf32>, vector<4xf32>
// LAUNCH-COUNT-1: gpu.launch blocks
// LAUNCH-NOT: gpu.launch
func.func @fsdp_train_step(%arena: memref<32768xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c10240 = arith.constant 10240 : index
  %c20480 = arith.constant 20480 : index
  %c20736 = arith.constant 20736 : index
  %zero = arith.constant 0.0 : f32
  %low = arith.constant -1000.0 : f32
  %m = memref.view %arena[%c0][] : memref<32768xi8> to memref<24x100xf32>
  %out = memref.view %arena[%c10240][] : memref<32768xi8> to memref<24x100xf32>
  %sums = memref.view %arena[%c20480][] : memref<32768xi8> to memref<24xf32>
  %maxes = memref.view %arena[%c20736][] : memref<32768xi8> to memref<24xf32>
  linalg.fill ins(%low : f32) outs(%maxes : memref<24xf32>)
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%m : memref<24x100xf32>) outs(%maxes : memref<24xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.maximumf %o, %in : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%sums : memref<24xf32>)
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%m : memref<24x100xf32>) outs(%sums : memref<24xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %o, %in : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%m, %sums : memref<24x100xf32>, memref<24xf32>) outs(%out : memref<24x100xf32>) {
  ^bb0(%in: f32, %s: f32, %o: f32):
    %d = arith.subf %in, %s : f32
    linalg.yield %d : f32
  }
  %r = arith.constant 0.0 : f32
  return %r : f32
}

// -----

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#sc = affine_map<(d0) -> ()>
#sc0 = affine_map<() -> ()>

// A loop that calls the runtime (the attention's key blocks, whose products
// are library calls) stays on the host and launches its body's kernels each
// iteration.
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK:      scf.for
// CHECK-NEXT:   func.call @fsdprt_work
// CHECK:        scf.parallel
// CHECK-NEXT:     scf.parallel
// CHECK:          arith.mulf
// LAUNCH-LABEL: func.func @fsdp_train_step
// LAUNCH:      scf.for
// LAUNCH-NEXT:   func.call @fsdprt_work
// LAUNCH:        gpu.launch
func.func private @fsdprt_work(i64)
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = memref.view %arena[%c0][] : memref<16384xi8> to memref<100xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    func.call @fsdprt_work(%step) : (i64) -> ()
    linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]} outs(%a : memref<100xf32>) {
    ^bb0(%x: f32):
      %y = arith.mulf %x, %lr : f32
      linalg.yield %y : f32
    }
  }
  %r = arith.constant 0.0 : f32
  return %r : f32
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A residual add, then a norm's sum of squares over each row of what it made,
// then the normalisation: one kernel, a block per row. Each thread adds and
// stores the elements it folds, runs of 4 with one 16-byte load of each input
// and one 16-byte store of the sums, and folds the sums it made, not a reload;
// the normalisation then goes through the row in the same runs with the total
// in hand.
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK:      scf.parallel (%[[ROW:.+]]) = (%{{.+}}) to (%{{.+}}) step (%{{.+}}) {
// CHECK-NEXT:   scf.parallel (%[[LANE:.+]]) = (%{{.+}}) to (%{{.+}}) step (%{{.+}}) {
// CHECK:          %[[PART:.+]] = scf.for %[[R:.+]] = %[[LANE]] to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %{{.+}}) -> (f32) {
// CHECK-NEXT:       %[[J:.+]] = arith.muli %[[R]], %{{.+}} : index
// CHECK-NEXT:       %[[X:.+]] = vector.load %[[XS:.+]][%[[ROW]], %[[J]]] : memref<4x128xf32>, vector<4xf32>
// CHECK-NEXT:       %[[X0:.+]] = vector.extract %[[X]][0]
// CHECK-COUNT-3:    vector.extract %[[X]]
// CHECK-NEXT:       %[[Y:.+]] = vector.load %[[YS:.+]][%[[ROW]], %[[J]]] : memref<4x128xf32>, vector<4xf32>
// CHECK-NEXT:       %[[Y0:.+]] = vector.extract %[[Y]][0]
// CHECK-COUNT-3:    vector.extract %[[Y]]
// CHECK-NEXT:       %[[H:.+]] = arith.addf %[[X0]], %[[Y0]] : f32
// CHECK-NEXT:       %[[SQ:.+]] = arith.mulf %[[H]], %[[H]] : f32
// CHECK-NEXT:       arith.addf %[[SQ]], %[[ACC]] : f32
// CHECK:            %[[HV:.+]] = vector.from_elements %[[H]],
// CHECK-NEXT:       vector.store %[[HV]], %[[HS:.+]][%[[ROW]], %[[J]]] : memref<4x128xf32>, vector<4xf32>
// CHECK:          gpu.all_reduce add %[[PART]] uniform
// CHECK:          scf.for
// CHECK:            vector.load %[[HS]]
// CHECK:            arith.divf
// CHECK:            vector.store
// LAUNCH-LABEL: func.func @fsdp_train_step
// LAUNCH-COUNT-1: gpu.launch blocks
// LAUNCH-NOT: gpu.launch
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c2048 = arith.constant 2048 : index
  %c4096 = arith.constant 4096 : index
  %c6144 = arith.constant 6144 : index
  %c8192 = arith.constant 8192 : index
  %zero = arith.constant 0.0 : f32
  %x = memref.view %arena[%c0][] : memref<16384xi8> to memref<4x128xf32>
  %y = memref.view %arena[%c2048][] : memref<16384xi8> to memref<4x128xf32>
  %h = memref.view %arena[%c4096][] : memref<16384xi8> to memref<4x128xf32>
  linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : memref<4x128xf32>, memref<4x128xf32>) outs(%h : memref<4x128xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  %sum = memref.view %arena[%c6144][] : memref<16384xi8> to memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<4xf32>)
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%h : memref<4x128xf32>) outs(%sum : memref<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %sq = arith.mulf %in, %in : f32
    %s = arith.addf %sq, %acc : f32
    linalg.yield %s : f32
  }
  %normed = memref.view %arena[%c8192][] : memref<16384xi8> to memref<4x128xf32>
  linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h, %sum : memref<4x128xf32>, memref<4xf32>) outs(%normed : memref<4x128xf32>) {
  ^bb0(%in: f32, %total: f32, %out: f32):
    %s = arith.divf %in, %total : f32
    linalg.yield %s : f32
  }
  %r = arith.constant 0.0 : f32
  return %r : f32
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// The same with the sums placed over the add's first input: a block storing
// its row's sum could overwrite what another block still adds, so the add
// stays a kernel of its own.
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK:      scf.parallel
// CHECK:        arith.addf %{{.+}}, %{{.+}} : f32
// CHECK:      scf.parallel
// CHECK:        gpu.all_reduce add
// LAUNCH-LABEL: func.func @fsdp_train_step
// LAUNCH-COUNT-2: gpu.launch blocks
// LAUNCH-NOT: gpu.launch
func.func @fsdp_train_step(%arena: memref<16384xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c2048 = arith.constant 2048 : index
  %c4096 = arith.constant 4096 : index
  %zero = arith.constant 0.0 : f32
  %x = memref.view %arena[%c0][] : memref<16384xi8> to memref<4x128xf32>
  %y = memref.view %arena[%c2048][] : memref<16384xi8> to memref<4x128xf32>
  %h = memref.view %arena[%c4096][] : memref<16384xi8> to memref<4x128xf32>
  linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : memref<4x128xf32>, memref<4x128xf32>) outs(%h : memref<4x128xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  %sum = memref.view %arena[%c0][] : memref<16384xi8> to memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<4xf32>)
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%h : memref<4x128xf32>) outs(%sum : memref<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %sq = arith.mulf %in, %in : f32
    %s = arith.addf %sq, %acc : f32
    linalg.yield %s : f32
  }
  %r = arith.constant 0.0 : f32
  return %r : f32
}
