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
  // expected-error @below {{synchronises its threads: it cannot run as sequential loops}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    gpu.barrier
    gpu.terminator
  }
  return
}
