// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --fsdp-cuda-sink-kernel-views | FileCheck %s
// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --fsdp-cuda-sink-kernel-views --gpu-kernel-outlining | FileCheck %s --check-prefix=KERNEL

// Kernels take memrefs as bare pointers, so every memref a launch takes must
// be static. The attention's key blocks: a subview at the block a host loop
// is at (a dynamic offset) is made in the kernel, from its static source and
// the loop's index; a view with a static layout (the second launch's) stays a
// parameter, as does the static source of a chain of two dynamic views.
// Each launch gets its own copy of the constants it uses (the f32 zero, the
// index 0), so that they are not kernel parameters; the launch sizes stay.

// CHECK-LABEL: func.func @key_blocks(
// CHECK-SAME:    %[[ARENA:.+]]: memref<65536xi8>
// CHECK:         %[[BUF:.+]] = memref.view %[[ARENA]]
// CHECK:         %[[FIXED:.+]] = memref.subview %[[BUF]][0, 16, 0]
// CHECK-NOT:     memref.subview
// CHECK:         scf.for %[[KB:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-NEXT:      gpu.launch
// CHECK-NEXT:        %[[BLOCK:.+]] = memref.subview %[[BUF]][0, %[[KB]], 0] [16, 16, 16] [1, 1, 1]
// CHECK-NEXT:        %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT:        memref.store %[[ZERO]], %[[BLOCK]][%{{.+}}, %{{.+}}, %[[C0]]]
// CHECK:           gpu.launch
// CHECK-NEXT:        %[[ROWS:.+]] = memref.subview %[[BUF]][0, %[[KB]], 0] [16, 8, 16] [1, 1, 1]
// CHECK-NEXT:        %[[ROW:.+]] = memref.subview %[[ROWS]][%[[KB]], 0, 0] [1, 8, 16] [1, 1, 1]
// CHECK-NEXT:        %[[C0B:.+]] = arith.constant 0 : index
// CHECK-NEXT:        memref.load %[[ROW]][%[[C0B]], %{{.+}}]
// CHECK:             memref.store %{{.+}}, %[[FIXED]]
// KERNEL:      gpu.func @key_blocks_kernel(%{{[^:]+}}: memref<16x32x16xf32>, %{{[^:]+}}: index) kernel
// KERNEL:      gpu.func @key_blocks_kernel(%{{[^:]+}}: memref<16x32x16xf32>, %{{[^:]+}}: index, %{{[^:]+}}: memref<16x16x16xf32, strided<[512, 16, 1], offset: 256>>) kernel
func.func @key_blocks(%arena: memref<65536xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  %buf = memref.view %arena[%c0][] : memref<65536xi8> to memref<16x32x16xf32>
  %fixed = memref.subview %buf[0, 16, 0] [16, 16, 16] [1, 1, 1]
      : memref<16x32x16xf32> to memref<16x16x16xf32, strided<[512, 16, 1], offset: 256>>
  scf.for %kb = %c0 to %c32 step %c16 {
    %block = memref.subview %buf[0, %kb, 0] [16, 16, 16] [1, 1, 1]
        : memref<16x32x16xf32> to memref<16x16x16xf32, strided<[512, 16, 1], offset: ?>>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c16, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
      memref.store %zero, %block[%bx, %tx, %c0]
          : memref<16x16x16xf32, strided<[512, 16, 1], offset: ?>>
      gpu.terminator
    }
    %rows = memref.subview %buf[0, %kb, 0] [16, 8, 16] [1, 1, 1]
        : memref<16x32x16xf32> to memref<16x8x16xf32, strided<[512, 16, 1], offset: ?>>
    %row = memref.subview %rows[%kb, 0, 0] [1, 8, 16] [1, 1, 1]
        : memref<16x8x16xf32, strided<[512, 16, 1], offset: ?>>
          to memref<8x16xf32, strided<[16, 1], offset: ?>>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c16, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
      %v = memref.load %row[%c0, %tx] : memref<8x16xf32, strided<[16, 1], offset: ?>>
      memref.store %v, %fixed[%bx, %tx, %c0]
          : memref<16x16x16xf32, strided<[512, 16, 1], offset: 256>>
      gpu.terminator
    }
  }
  return
}

// -----

// A memref no static view makes cannot be a kernel's bare pointer.

func.func @dynamic(%buf: memref<?xf32>) {
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{takes 'memref<?xf32>', which a kernel cannot take as a bare pointer (not a static view)}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %zero, %buf[%tx] : memref<?xf32>
    gpu.terminator
  }
  return
}
