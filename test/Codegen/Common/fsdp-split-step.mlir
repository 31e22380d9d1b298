// RUN: fsdp-opt %s --fsdp-split-step=max-ops-per-part=2 | FileCheck %s
// RUN: fsdp-opt %s --fsdp-split-step | FileCheck %s --check-prefix=ONE
// RUN: not fsdp-opt %s --fsdp-split-step=max-ops-per-part=0 2>&1 | FileCheck %s --check-prefix=BAD

// The step cut into parts of two ops that do work, called in order. A part
// takes what it uses from before it (the arena for its views, a collective's
// handle, a loaded value) and returns what is used after it; constants and
// views are recomputed in each part that needs them.

// CHECK-LABEL: func.func @fsdp_train_step
// CHECK-SAME:      (%[[ARENA:.+]]: memref<1024xi8>, %[[STEP:.+]]: i64, %[[LR:.+]]: f32) -> f32
// CHECK-NEXT:    %[[H:.+]] = call @fsdp_step_part_0(%[[ARENA]]) : (memref<1024xi8>) -> i64
// CHECK-NEXT:    %[[X:.+]] = call @fsdp_step_part_1(%[[H]], %[[ARENA]]) : (i64, memref<1024xi8>) -> f32
// CHECK-NEXT:    %[[LOSS:.+]] = call @fsdp_step_part_2(%[[X]], %[[LR]], %[[ARENA]]) : (f32, f32, memref<1024xi8>) -> f32
// CHECK-NEXT:    return %[[LOSS]] : f32
// ONE-LABEL:   func.func @fsdp_train_step
// ONE-NOT:     fsdp_step_part
func.func @fsdp_train_step(%arena: memref<1024xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c256 = arith.constant 256 : index
  %a = memref.view %arena[%c0][] : memref<1024xi8> to memref<64xf32>
  %b = memref.view %arena[%c256][] : memref<1024xi8> to memref<64xf32>
  %h = call @start(%a) : (memref<64xf32>) -> i64
  call @kernel(%a, %b) : (memref<64xf32>, memref<64xf32>) -> ()
  call @wait(%h) : (i64) -> ()
  %x = memref.load %b[%c0] : memref<64xf32>
  %y = arith.mulf %x, %lr : f32
  memref.store %y, %a[%c0] : memref<64xf32>
  return %y : f32
}
func.func private @start(memref<64xf32>) -> i64
func.func private @kernel(memref<64xf32>, memref<64xf32>)
func.func private @wait(i64)

// CHECK:       func.func private @fsdp_step_part_0(%[[A0:.+]]: memref<1024xi8>) -> i64
// CHECK-SAME:      attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK-DAG:     memref.view %[[A0]]
// CHECK-DAG:     memref.view %[[A0]]
// CHECK:         %[[H0:.+]] = call @start
// CHECK-NEXT:    call @kernel
// CHECK-NEXT:    return %[[H0]] : i64
// CHECK:       func.func private @fsdp_step_part_1(%[[H1:.+]]: i64, %[[A1:.+]]: memref<1024xi8>) -> f32
// CHECK:         memref.view %[[A1]]
// CHECK:         call @wait(%[[H1]])
// CHECK:         %[[X1:.+]] = memref.load
// CHECK-NEXT:    return %[[X1]] : f32
// CHECK:       func.func private @fsdp_step_part_2(%[[X2:.+]]: f32, %[[LR2:.+]]: f32, %[[A2:.+]]: memref<1024xi8>) -> f32
// CHECK:         %[[Y:.+]] = arith.mulf %[[X2]], %[[LR2]]
// CHECK-NEXT:    memref.store %[[Y]]
// CHECK-NEXT:    return %[[Y]] : f32

// BAD: error: fsdp-split-step: max-ops-per-part must be at least 1
