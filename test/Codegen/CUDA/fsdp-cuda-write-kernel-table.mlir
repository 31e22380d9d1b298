// RUN: fsdp-opt %s --fsdp-cuda-write-kernel-table="device-profile=h200" -o /dev/null | FileCheck %s
// RUN: not fsdp-opt %s --fsdp-cuda-write-kernel-table="device-profile=nowhere.json" -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PROFILE

// Three kernels as fsdp-cuda-form-kernels shapes them, on the h200 profile
// (132 multiprocessors, 4.0 TB/s, 74 ns a serial iteration, 209 ns a
// memory-carried one, 5 us a launch).

// A column sum, a thread per column over 1,024 rows in order: 2 blocks of
// 256 threads, 512 of them admitted by the guard. It reads 1,024 x 512 f32
// (2 MiB) and writes 512 f32; 2 FLOPs an element. Its chain, 1,024 x 74 ns =
// 75.8 us, outweighs its bytes over 2/132 of the bandwidth (34.8 us).
// CHECK-LABEL: "kernels": [
// CHECK:      "block": [
// CHECK-NEXT:   256,
// CHECK:      "bytes_read": 2097152,
// CHECK-NEXT: "bytes_written": 2048,
// CHECK-NEXT: "flops": 1048576,
// CHECK-NEXT: "grid": [
// CHECK-NEXT:   2,
// CHECK:      "kind": "thread reduction",
// CHECK-NEXT: "launches": 3,
// CHECK-NEXT: "memory_carried": false,
// CHECK-NEXT: "name": "column_sum",
// CHECK-NEXT: "origin": [
// CHECK:        "model.mlir:7:3"
// CHECK:      "predicted_seconds": 8.0776e-05,
// CHECK-NEXT: "roofline_seconds": 5.2{{[0-9]*}}e-07,
// CHECK-NEXT: "serial_trips": 1024

// A row sum, a block per row whose threads stride through it and combine:
// 1,024 blocks, 512 / 256 = 2 iterations each.
// CHECK:      "kind": "block reduction",
// CHECK-NEXT: "launches": 1,
// CHECK:      "serial_trips": 2

// A scatter: one thread per column adds 1,024 rows into a table it also
// reads, in order: each iteration waits on the last one's store.
// CHECK:      "kind": "scatter",
// CHECK-NEXT: "launches": 1,
// CHECK-NEXT: "memory_carried": true,
// CHECK:      "predicted_seconds": 0.000219{{[0-9]*}},
// CHECK:      "serial_trips": 1024

// CHECK:      "multiprocessors": 132,
// CHECK-NEXT: "profile": "h200",
// CHECK:      "kind": "thread reduction",
// CHECK-NEXT: "launches": 3,

// PROFILE: error: fsdp-cuda-write-kernel-table: device-profile: nowhere.json:

module attributes {gpu.container_module} {
  func.func @step(%x: memref<1024x512xf32>, %sums: memref<512xf32>, %rows: memref<1024xf32>,
                  %ids: memref<1024xi32>, %table: memref<64x512xf32>) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c256 = arith.constant 256 : index
    %c1024 = arith.constant 1024 : index
    %c0 = arith.constant 0 : index
    scf.for %i = %c0 to %c3 step %c1 {
      gpu.launch_func @kernels::@column_sum blocks in (%c2, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%x : memref<1024x512xf32>, %sums : memref<512xf32>)
    }
    gpu.launch_func @kernels::@row_sum blocks in (%c1024, %c1, %c1) threads in (%c256, %c1, %c1)
      args(%x : memref<1024x512xf32>, %rows : memref<1024xf32>)
    gpu.launch_func @kernels::@scatter blocks in (%c2, %c1, %c1) threads in (%c256, %c1, %c1)
      args(%ids : memref<1024xi32>, %x : memref<1024x512xf32>, %table : memref<64x512xf32>)
    return
  }
  gpu.module @kernels {
    gpu.func @column_sum(%x: memref<1024x512xf32>, %sums: memref<512xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c256 = arith.constant 256 : index
      %c1 = arith.constant 1 : index
      %c512 = arith.constant 512 : index
      %c1024 = arith.constant 1024 : index
      %zero = arith.constant 0.0 : f32
      %block = gpu.block_id x
      %thread = gpu.thread_id x
      %first = arith.muli %block, %c256 : index
      %column = arith.addi %thread, %first : index
      %inside = arith.cmpi ult, %column, %c512 : index
      scf.if %inside {
        %sum = scf.for %row = %c0 to %c1024 step %c1 iter_args(%acc = %zero) -> (f32) {
          %v = memref.load %x[%row, %column] : memref<1024x512xf32>
          %s = arith.mulf %v, %v : f32
          %a = arith.addf %acc, %s : f32 loc("model.mlir":7:3)
          scf.yield %a : f32
        }
        memref.store %sum, %sums[%column] : memref<512xf32>
      }
      gpu.return
    }
    gpu.func @row_sum(%x: memref<1024x512xf32>, %rows: memref<1024xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c256 = arith.constant 256 : index
      %c512 = arith.constant 512 : index
      %zero = arith.constant 0.0 : f32
      %block = gpu.block_id x
      %thread = gpu.thread_id x
      %part = scf.for %i = %thread to %c512 step %c256 iter_args(%acc = %zero) -> (f32) {
        %v = memref.load %x[%block, %i] : memref<1024x512xf32>
        %a = arith.addf %acc, %v : f32
        scf.yield %a : f32
      }
      %sum = gpu.all_reduce add %part uniform {} : (f32) -> f32
      %first = arith.cmpi eq, %thread, %c0 : index
      scf.if %first {
        memref.store %sum, %rows[%block] : memref<1024xf32>
      }
      gpu.return
    }
    gpu.func @scatter(%ids: memref<1024xi32>, %x: memref<1024x512xf32>,
                      %table: memref<64x512xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c256 = arith.constant 256 : index
      %c1 = arith.constant 1 : index
      %c512 = arith.constant 512 : index
      %c1024 = arith.constant 1024 : index
      %block = gpu.block_id x
      %thread = gpu.thread_id x
      %first = arith.muli %block, %c256 : index
      %column = arith.addi %thread, %first : index
      %inside = arith.cmpi ult, %column, %c512 : index
      scf.if %inside {
        scf.for %n = %c0 to %c1024 step %c1 {
          %id = memref.load %ids[%n] : memref<1024xi32>
          %row = arith.index_cast %id : i32 to index
          %g = memref.load %x[%n, %column] : memref<1024x512xf32>
          %t = memref.load %table[%row, %column] : memref<64x512xf32>
          %a = arith.addf %t, %g : f32
          memref.store %a, %table[%row, %column] : memref<64x512xf32>
        }
      }
      gpu.return
    }
  }
}
