// RUN: fsdp-opt %s --fsdp-cuda-narrow-kernel-indices | FileCheck %s

// A GPU module gets a 32-bit index when every index value of its kernels
// provably fits: by the integer range analysis, from the known block and
// grid sizes and, for an index parameter, what every launch passes (here a
// host loop's index, 0 or 16). Its index parameters become i32 on both
// sides. Any kernel that does not fit keeps its module at 64 bits.

module attributes {gpu.container_module} {
  // CHECK-LABEL: func.func @fsdp_train_step
  func.func @fsdp_train_step(%arena: memref<65536xi8>, %step: i64, %lr: f32) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c256 = arith.constant 256 : index
    %buf = memref.view %arena[%c0][] : memref<65536xi8> to memref<16x32x16xf32>
    %ids = memref.view %arena[%c0][] : memref<65536xi8> to memref<512xi64>
    // CHECK:      scf.for %[[KB:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
    // CHECK-NEXT:   %[[KB32:.+]] = arith.index_cast %[[KB]] : index to i32
    // CHECK-NEXT:   gpu.launch_func @fits::@key_block {{.*}} args(%{{.+}} : memref<16x32x16xf32>, %[[KB32]] : i32)
    scf.for %kb = %c0 to %c32 step %c16 {
      gpu.launch_func @fits::@key_block blocks in (%c16, %c1, %c1) threads in (%c256, %c1, %c1)
          args(%buf : memref<16x32x16xf32>, %kb : index)
    }
    // The host's index (an i64 argument) has no known range.
    %unknown = arith.index_cast %step : i64 to index
    // CHECK:      gpu.launch_func @unknown_parameter::@k {{.*}} args(%{{.+}} : memref<16x32x16xf32>, %{{.+}} : index)
    gpu.launch_func @unknown_parameter::@k blocks in (%c16, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%buf : memref<16x32x16xf32>, %unknown : index)
    gpu.launch_func @too_large::@k blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%arena : memref<65536xi8>)
    gpu.launch_func @loaded::@k blocks in (%c2, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%ids : memref<512xi64>, %buf : memref<16x32x16xf32>)
    gpu.launch_func @negative_unsigned::@k blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%buf : memref<16x32x16xf32>)
    gpu.launch_func @last_increment::@k blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%arena : memref<65536xi8>)
    return %lr : f32
  }

  // CHECK:      gpu.module @fits attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>}
  // CHECK:        gpu.func @key_block(%[[BUF:.+]]: memref<16x32x16xf32>, %[[KB:.+]]: i32) kernel
  // CHECK-NEXT:     %[[I:.+]] = arith.index_cast %[[KB]] : i32 to index
  // CHECK:          arith.addi %{{.+}}, %[[I]] : index
  gpu.module @fits {
    gpu.func @key_block(%buf: memref<16x32x16xf32>, %kb: index) kernel
        attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 16, 1, 1>} {
      %c16 = arith.constant 16 : index
      %c256 = arith.constant 256 : index
      %bx = gpu.block_id x
      %tx = gpu.thread_id x
      %flat = arith.muli %bx, %c256 : index
      %i = arith.addi %flat, %tx : index
      %row = arith.divui %i, %c16 : index
      %col = arith.remui %i, %c16 : index
      %key = arith.addi %row, %kb : index
      %v = memref.load %buf[%c16, %key, %col] : memref<16x32x16xf32>
      memref.store %v, %buf[%row, %key, %col] : memref<16x32x16xf32>
      gpu.return
    }
  }

  // CHECK:      gpu.module @unknown_parameter {
  // CHECK:        gpu.func @k(%{{.+}}: memref<16x32x16xf32>, %{{.+}}: index) kernel
  gpu.module @unknown_parameter {
    gpu.func @k(%buf: memref<16x32x16xf32>, %n: index) kernel
        attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 16, 1, 1>} {
      %c0 = arith.constant 0 : index
      %tx = gpu.thread_id x
      %j = arith.addi %tx, %n : index
      %v = memref.load %buf[%c0, %c0, %j] : memref<16x32x16xf32>
      memref.store %v, %buf[%c0, %c0, %tx] : memref<16x32x16xf32>
      gpu.return
    }
  }

  // A memref whose last element is at offset 2^31: its accesses' offsets
  // need 64 bits.
  // CHECK:      gpu.module @too_large {
  gpu.module @too_large {
    gpu.func @k(%arena: memref<65536xi8>) kernel
        attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %c0 = arith.constant 0 : index
      %tx = gpu.thread_id x
      %all = memref.reinterpret_cast %arena to offset: [0], sizes: [2147483649], strides: [1]
          : memref<65536xi8> to memref<2147483649xi8>
      %v = memref.load %all[%tx] : memref<2147483649xi8>
      memref.store %v, %arena[%c0] : memref<65536xi8>
      gpu.return
    }
  }

  // An index made of an i64 loaded from memory can be anything.
  // CHECK:      gpu.module @loaded {
  gpu.module @loaded {
    gpu.func @k(%ids: memref<512xi64>, %buf: memref<16x32x16xf32>) kernel
        attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 2, 1, 1>} {
      %c0 = arith.constant 0 : index
      %tx = gpu.thread_id x
      %id = memref.load %ids[%tx] : memref<512xi64>
      %row = arith.index_cast %id : i64 to index
      %v = memref.load %buf[%c0, %row, %c0] : memref<16x32x16xf32>
      memref.store %v, %buf[%c0, %c0, %c0] : memref<16x32x16xf32>
      gpu.return
    }
  }

  // An unsigned remainder of a value that may be negative: the result is
  // small, but -1 is 2^32 - 1 as a 32-bit index and 2^64 - 1 as a 64-bit
  // one, which leave 3 and 1 divided by 7.
  // CHECK:      gpu.module @negative_unsigned {
  gpu.module @negative_unsigned {
    gpu.func @k(%buf: memref<16x32x16xf32>) kernel
        attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c7 = arith.constant 7 : index
      %c128 = arith.constant 128 : index
      %tx = gpu.thread_id x
      %d = arith.subi %tx, %c128 : index
      %q = arith.remui %d, %c7 : index
      %v = memref.load %buf[%c0, %c0, %q] : memref<16x32x16xf32>
      memref.store %v, %buf[%c0, %c0, %c0] : memref<16x32x16xf32>
      gpu.return
    }
  }

  // A loop whose index fits but whose last increment (iv + step, once the
  // loop is branches) does not.
  // CHECK:      gpu.module @last_increment {
  gpu.module @last_increment {
    gpu.func @k(%arena: memref<65536xi8>) kernel
        attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %c0 = arith.constant 0 : index
      %big = arith.constant 2147483000 : index
      %c1024 = arith.constant 1024 : index
      %tx = gpu.thread_id x
      scf.for %i = %tx to %big step %c1024 {
        %v = memref.load %arena[%c0] : memref<65536xi8>
        memref.store %v, %arena[%c0] : memref<65536xi8>
      }
      gpu.return
    }
  }
}
