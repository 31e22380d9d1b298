// RUN: fsdp-opt %s --fsdp-cuda-annotate-kernel-arguments | FileCheck %s

// Each kernel pointer's alignment is the largest power of two up to 64
// dividing the byte offset of every view a launch passes it (the arena is
// 64-byte aligned); it is noalias when no launch passes it bytes another of
// its parameters also gets.

module attributes {gpu.container_module} {
  func.func @fsdp_train_step(%arena: memref<65536xi8>, %step: i64, %lr: f32) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c1024 = arith.constant 1024 : index
    %c2048 = arith.constant 2048 : index
    %c2064 = arith.constant 2064 : index
    %c4100 = arith.constant 4100 : index
    %c4176 = arith.constant 4176 : index
    %c8192 = arith.constant 8192 : index
    %a = memref.view %arena[%c0][] : memref<65536xi8> to memref<256xf32>
    %b = memref.view %arena[%c1024][] : memref<65536xi8> to memref<256xf32>
    %odd = memref.view %arena[%c4100][] : memref<65536xi8> to memref<4xf32>
    %quad = memref.view %arena[%c4176][] : memref<65536xi8> to memref<4xf32>
    // Two buffers, a row of another one at a static offset (its pointer
    // is the buffer's), and an index.
    %rows = memref.view %arena[%c8192][] : memref<65536xi8> to memref<16x16xf32>
    %row = memref.subview %rows[1, 0] [1, 16] [1, 1]
        : memref<16x16xf32> to memref<16xf32, strided<[1], offset: 16>>
    gpu.launch_func @kernels::@distinct blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1)
        args(%a : memref<256xf32>, %odd : memref<4xf32>, %quad : memref<4xf32>,
             %row : memref<16xf32, strided<[1], offset: 16>>, %c16 : index)
    // An update in place through two views of one buffer (the second a
    // reshape of it), beside a third buffer.
    %b2 = memref.expand_shape %b [[0, 1]] output_shape [16, 16] : memref<256xf32> into memref<16x16xf32>
    gpu.launch_func @kernels::@in_place blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1)
        args(%b : memref<256xf32>, %b2 : memref<16x16xf32>, %a : memref<256xf32>)
    // One kernel launched twice: on disjoint views at bytes 0 and 1024,
    // then on overlapping ones, the first at byte 2064.
    gpu.launch_func @kernels::@twice blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1)
        args(%a : memref<256xf32>, %b : memref<256xf32>)
    %at16 = memref.view %arena[%c2064][] : memref<65536xi8> to memref<256xf32>
    %over = memref.view %arena[%c2048][] : memref<65536xi8> to memref<256xf32>
    gpu.launch_func @kernels::@twice blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1)
        args(%at16 : memref<256xf32>, %over : memref<256xf32>)
    // A reinterpret_cast keeps its source's pointer (at byte 2048) but may
    // cover any bytes: aligned, and neither parameter is noalias.
    %shifted = memref.view %arena[%c2048][] : memref<65536xi8> to memref<260xf32>
    %inner = memref.subview %shifted[4] [256] [1]
        : memref<260xf32> to memref<256xf32, strided<[1], offset: 4>>
    %cast = memref.reinterpret_cast %inner to offset: [0], sizes: [256], strides: [1]
        : memref<256xf32, strided<[1], offset: 4>> to memref<256xf32>
    gpu.launch_func @kernels::@reinterpreted blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1)
        args(%cast : memref<256xf32>, %rows : memref<16x16xf32>)
    // A buffer that is no view of the arena: no alignment, and no
    // parameter of the launch is noalias; nor is one passed twice.
    %own = memref.alloc() : memref<256xf32>
    gpu.launch_func @kernels::@unknown blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1)
        args(%own : memref<256xf32>, %a : memref<256xf32>)
    gpu.launch_func @kernels::@same blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1)
        args(%a : memref<256xf32>, %a : memref<256xf32>, %b : memref<256xf32>)
    return %lr : f32
  }

  // CHECK-LABEL: gpu.module @kernels
  gpu.module @kernels {
    // CHECK:      gpu.func @distinct(
    // CHECK-SAME:   %{{[^:]+}}: memref<256xf32> {llvm.align = 64 : i64, llvm.noalias},
    // CHECK-SAME:   %{{[^:]+}}: memref<4xf32> {llvm.align = 4 : i64, llvm.noalias},
    // CHECK-SAME:   %{{[^:]+}}: memref<4xf32> {llvm.align = 16 : i64, llvm.noalias},
    // CHECK-SAME:   %{{[^:]+}}: memref<16xf32, strided<[1], offset: 16>> {llvm.align = 64 : i64, llvm.noalias},
    // CHECK-SAME:   %{{[^:]+}}: index)
    gpu.func @distinct(%x: memref<256xf32>, %y: memref<4xf32>, %z: memref<4xf32>,
                       %r: memref<16xf32, strided<[1], offset: 16>>, %n: index) kernel {
      gpu.return
    }
    // CHECK:      gpu.func @in_place(
    // CHECK-SAME:   %{{[^:]+}}: memref<256xf32> {llvm.align = 64 : i64},
    // CHECK-SAME:   %{{[^:]+}}: memref<16x16xf32> {llvm.align = 64 : i64},
    // CHECK-SAME:   %{{[^:]+}}: memref<256xf32> {llvm.align = 64 : i64, llvm.noalias})
    gpu.func @in_place(%x: memref<256xf32>, %y: memref<16x16xf32>, %z: memref<256xf32>) kernel {
      gpu.return
    }
    // CHECK:      gpu.func @twice(
    // CHECK-SAME:   %{{[^:]+}}: memref<256xf32> {llvm.align = 16 : i64},
    // CHECK-SAME:   %{{[^:]+}}: memref<256xf32> {llvm.align = 64 : i64})
    gpu.func @twice(%x: memref<256xf32>, %y: memref<256xf32>) kernel {
      gpu.return
    }
    // CHECK:      gpu.func @reinterpreted(
    // CHECK-SAME:   %{{[^:]+}}: memref<256xf32> {llvm.align = 64 : i64},
    // CHECK-SAME:   %{{[^:]+}}: memref<16x16xf32> {llvm.align = 64 : i64})
    gpu.func @reinterpreted(%x: memref<256xf32>, %y: memref<16x16xf32>) kernel {
      gpu.return
    }
    // CHECK:      gpu.func @unknown(
    // CHECK-SAME:   %{{[^:]+}}: memref<256xf32>,
    // CHECK-SAME:   %{{[^:]+}}: memref<256xf32> {llvm.align = 64 : i64})
    gpu.func @unknown(%x: memref<256xf32>, %y: memref<256xf32>) kernel {
      gpu.return
    }
    // CHECK:      gpu.func @same(
    // CHECK-SAME:   %{{[^:]+}}: memref<256xf32> {llvm.align = 64 : i64},
    // CHECK-SAME:   %{{[^:]+}}: memref<256xf32> {llvm.align = 64 : i64},
    // CHECK-SAME:   %{{[^:]+}}: memref<256xf32> {llvm.align = 64 : i64, llvm.noalias})
    gpu.func @same(%x: memref<256xf32>, %y: memref<256xf32>, %z: memref<256xf32>) kernel {
      gpu.return
    }
  }
}
