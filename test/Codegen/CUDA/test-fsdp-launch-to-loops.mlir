// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --test-fsdp-launch-to-loops | FileCheck %s

// Test only: a launch becomes loops over block then thread ids (z, y, x), the
// body once per thread, so that kernels can be checked on the CPU.

// CHECK-LABEL: func.func @kernel
// CHECK-SAME:    (%[[A:.+]]: memref<1000xf32>)
// CHECK-DAG:     %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG:     %[[C256:.+]] = arith.constant 256 : index
// CHECK-DAG:     %[[ZERO:.+]] = arith.constant 0 : index
// CHECK:         scf.for %{{.+}} = %[[ZERO]] to %{{.+}} step %{{.+}} {
// CHECK-NEXT:      scf.for %{{.+}} = %[[ZERO]] to %{{.+}} step %{{.+}} {
// CHECK-NEXT:        scf.for %[[BX:.+]] = %[[ZERO]] to %[[C4]] step %{{.+}} {
// CHECK-NEXT:          scf.for %{{.+}} = %[[ZERO]] to %{{.+}} step %{{.+}} {
// CHECK-NEXT:            scf.for %{{.+}} = %[[ZERO]] to %{{.+}} step %{{.+}} {
// CHECK-NEXT:              scf.for %[[TX:.+]] = %[[ZERO]] to %[[C256]] step %{{.+}} {
// CHECK-NEXT:                %[[BASE:.+]] = arith.muli %[[BX]], %[[C256]] : index
// CHECK-NEXT:                %[[I:.+]] = arith.addi %[[BASE]], %[[TX]] : index
// CHECK-NEXT:                %[[IN:.+]] = arith.cmpi ult, %[[I]], %{{.+}} : index
// CHECK-NEXT:                scf.if %[[IN]] {
// CHECK-NEXT:                  memref.store %{{.+}}, %[[A]][%[[I]]] : memref<1000xf32>
// CHECK-NOT:     gpu.
func.func @kernel(%a: memref<1000xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c256 = arith.constant 256 : index
  %c1000 = arith.constant 1000 : index
  %x = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %sx : index
    %i = arith.addi %base, %tx : index
    %in = arith.cmpi ult, %i, %c1000 : index
    scf.if %in {
      memref.store %x, %a[%i] : memref<1000xf32>
    }
    gpu.terminator
  }
  return
}

// -----

func.func @barrier(%a: memref<256xf32>) {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  // expected-error @below {{synchronises its threads other than by a block reduction at the top level}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    gpu.barrier
    gpu.terminator
  }
  return
}

// -----

// A block reduction cuts the body: the threads run up to it, each leaving
// its value at its linear id; the values are combined as the GPU combines
// them (within each warp of 32 lanes: lane l takes lane l + s's value for
// s = 1, 2, 4, 8, 16; then the warps' results likewise); then the threads
// run on with the result.
// CHECK-LABEL: func.func @block_sum
// CHECK-SAME:    (%[[A:.+]]: memref<40xf32>, %[[OUT:.+]]: memref<f32>)
// CHECK:         %[[C40:.+]] = arith.constant 40 : index
// CHECK:         %[[VALUES:.+]] = memref.alloca() : memref<40xf32>
// CHECK:         scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK:           scf.for %[[TX:.+]] = %{{.+}} to %[[C40]] step %{{.+}} {
// CHECK-NEXT:        %[[X:.+]] = memref.load %[[A]][%[[TX]]] : memref<40xf32>
// CHECK:             memref.store %[[X]], %[[VALUES]][%{{.+}}] : memref<40xf32>
// CHECK:           %[[C32:.+]] = arith.constant 32 : index
// CHECK-NEXT:      %[[WARPS:.+]] = arith.ceildivui %{{.+}}, %[[C32]] : index
// CHECK:           scf.for %[[W:.+]] = %{{.+}} to %[[WARPS]] step %{{.+}} {
// CHECK:             scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK:               scf.if
// CHECK:                 arith.addf
// CHECK:           scf.for %[[T2:.+]] = %{{.+}} to %[[C40]] step %{{.+}} {
// CHECK:             %[[FIRST:.+]] = arith.cmpi eq, %[[T2]], %{{.+}} : index
// CHECK-NEXT:        scf.if %[[FIRST]] {
// CHECK-NEXT:          memref.store %{{.+}}, %[[OUT]][] : memref<f32>
// CHECK-NOT:     gpu.
func.func @block_sum(%a: memref<40xf32>, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c40 = arith.constant 40 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c40, %sy = %c1, %sz = %c1) {
    %x = memref.load %a[%tx] : memref<40xf32>
    %sum = gpu.all_reduce add %x uniform {} : (f32) -> f32
    %first = arith.cmpi eq, %tx, %c0 : index
    scf.if %first {
      memref.store %sum, %out[] : memref<f32>
    }
    gpu.terminator
  }
  return
}

// -----

// A block size known only at run time: the threads' values in an array of
// that size.
// CHECK-LABEL: func.func @block_sum_dynamic
// CHECK-SAME:    (%{{.+}}: memref<?xf32>, %{{.+}}: memref<f32>, %[[THREADS:.+]]: index)
// CHECK:         memref.alloca(%[[THREADS]]) : memref<?xf32>
func.func @block_sum_dynamic(%a: memref<?xf32>, %out: memref<f32>, %threads: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %threads, %sy = %c1, %sz = %c1) {
    %x = memref.load %a[%tx] : memref<?xf32>
    %sum = gpu.all_reduce add %x uniform {} : (f32) -> f32
    %first = arith.cmpi eq, %tx, %c0 : index
    scf.if %first {
      memref.store %sum, %out[] : memref<f32>
    }
    gpu.terminator
  }
  return
}

// -----

func.func @effects_across(%a: memref<40xf32>, %out: memref<40xf32>) {
  %c1 = arith.constant 1 : index
  %c40 = arith.constant 40 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c40, %sy = %c1, %sz = %c1) {
    // expected-error @below {{is used across a block reduction but has effects}}
    %x = memref.load %a[%tx] : memref<40xf32>
    %sum = gpu.all_reduce add %x uniform {} : (f32) -> f32
    %y = arith.addf %x, %sum : f32
    memref.store %y, %out[%tx] : memref<40xf32>
    gpu.terminator
  }
  return
}
