// RUN: fsdp-opt %s --split-input-file --verify-diagnostics --fsdp-cuda-sink-host-reads | FileCheck %s

// On a GPU the host cannot load from the arena: a scalar the kernels use is
// read inside each kernel, and what the host computed from it is computed
// there again.

#id = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @fsdp_train_step
func.func @fsdp_train_step(%arena: memref<8192xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c4096 = arith.constant 4096 : index
  %c8000 = arith.constant 8000 : index
  %c8008 = arith.constant 8008 : index
  %w = memref.view %arena[%c0][] : memref<8192xi8> to memref<1000xf32>
  %scale_buffer = memref.view %arena[%c4096][] : memref<8192xi8> to memref<f32>
  %lr_slot = memref.view %arena[%c8000][] : memref<8192xi8> to memref<f32>
  %step_slot = memref.view %arena[%c8008][] : memref<8192xi8> to memref<i64>
  // CHECK-NOT:  memref.load
  // CHECK-NOT:  math.powf
  // CHECK:      linalg.generic
  // CHECK-NEXT: ^bb0(%[[IN:.+]]: f32):
  // CHECK-NEXT:   %[[SCALE:.+]] = memref.load %{{.+}}[] : memref<f32>
  // CHECK-NEXT:   arith.mulf %[[IN]], %[[SCALE]] : f32
  %scale = memref.load %scale_buffer[] : memref<f32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%w : memref<1000xf32>) {
  ^bb0(%in: f32):
    %x = arith.mulf %in, %scale : f32
    linalg.yield %x : f32
  }
  // The learning rate and a bias correction from the step number: the
  // loads and the host's arithmetic on them, once per block that reads
  // them, each before its first reader (the constant stays on the host).
  // CHECK:      linalg.generic
  // CHECK-NEXT: ^bb0(%[[P:.+]]: f32):
  // CHECK-NEXT:   %[[LR:.+]] = memref.load %{{.+}}[] : memref<f32>
  // CHECK-NEXT:   %[[STEP:.+]] = memref.load %{{.+}}[] : memref<i64>
  // CHECK-NEXT:   %[[T:.+]] = arith.sitofp %[[STEP]] : i64 to f64
  // CHECK-NEXT:   %[[POW:.+]] = math.powf %{{.+}}, %[[T]] : f64
  // CHECK-NEXT:   %[[NARROW:.+]] = arith.truncf %[[POW]] : f64 to f32
  // CHECK-NEXT:   %[[SIZE:.+]] = arith.divf %[[LR]], %[[NARROW]] : f32
  // CHECK-NEXT:   %[[A:.+]] = arith.mulf %[[P]], %[[SIZE]] : f32
  // CHECK-NEXT:   arith.subf %[[P]], %[[A]] : f32
  // CHECK:      linalg.generic
  // CHECK-NEXT: ^bb0(%[[Q:.+]]: f32):
  // CHECK-NEXT:   %[[STEP2:.+]] = memref.load %{{.+}}[] : memref<i64>
  // CHECK-NEXT:   %[[T2:.+]] = arith.sitofp %[[STEP2]] : i64 to f64
  // CHECK-NEXT:   math.powf %{{.+}}, %[[T2]] : f64
  // CHECK:      return
  %beta = arith.constant 0.9 : f64
  %lr_value = memref.load %lr_slot[] : memref<f32>
  %step_value = memref.load %step_slot[] : memref<i64>
  %t = arith.sitofp %step_value : i64 to f64
  %pow = math.powf %beta, %t : f64
  %narrow = arith.truncf %pow : f64 to f32
  %size = arith.divf %lr_value, %narrow : f32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%w : memref<1000xf32>) {
  ^bb0(%p: f32):
    %a = arith.mulf %p, %size : f32
    %b = arith.subf %p, %a : f32
    linalg.yield %b : f32
  }
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%w : memref<1000xf32>) {
  ^bb0(%q: f32):
    %c = arith.mulf %q, %narrow : f32
    linalg.yield %c : f32
  }
  %nan = arith.constant 0x7FC00000 : f32
  return %nan : f32
}

// -----

// A read of the host arena (offload) stays where it is.
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK:         %[[X:.+]] = memref.load %{{.+}}[] {fsdp.on_host} : memref<f32>
// CHECK-NEXT:    return %[[X]] : f32
func.func @fsdp_train_step(%arena: memref<8192xi8>, %host: memref<64xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %buffer = memref.view %host[%c0][] : memref<64xi8> to memref<f32>
  %x = memref.load %buffer[] {fsdp.on_host} : memref<f32>
  return %x : f32
}

// -----

func.func @fsdp_train_step(%arena: memref<8192xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %buffer = memref.view %arena[%c0][] : memref<8192xi8> to memref<f32>
  %x = memref.load %buffer[] : memref<f32>
  // expected-note @below {{the device value}}
  %y = arith.mulf %x, %lr : f32
  // expected-error @below {{'func.return' op is host code reading a device value, which the host cannot read}}
  // expected-note @below {{a step on the device leaves its loss in the arena (convert-fsdp-to-runtime)}}
  return %y : f32
}

// -----

func.func private @fsdprt_host_parallel(f32)

func.func @fsdp_train_step(%arena: memref<8192xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %buffer = memref.view %arena[%c0][] : memref<8192xi8> to memref<f32>
  // expected-note @below {{the device value}}
  %x = memref.load %buffer[] : memref<f32>
  // expected-error @below {{'func.call' op is host code reading a device value, which the host cannot read}}
  call @fsdprt_host_parallel(%x) : (f32) -> ()
  return %lr : f32
}

// -----

// A host loop's body runs on the host.
func.func private @fsdprt_host_parallel(f32)

func.func @fsdp_train_step(%arena: memref<8192xi8>, %step: i64, %lr: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %buffer = memref.view %arena[%c0][] : memref<8192xi8> to memref<f32>
  // expected-note @below {{the device value}}
  %x = memref.load %buffer[] : memref<f32>
  scf.for %i = %c0 to %c4 step %c1 {
    // expected-error @below {{'func.call' op is host code reading a device value, which the host cannot read}}
    func.call @fsdprt_host_parallel(%x) : (f32) -> ()
  }
  return %lr : f32
}
