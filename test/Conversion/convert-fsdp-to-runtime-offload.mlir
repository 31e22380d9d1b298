// RUN: fsdp-opt %s -split-input-file -fsdp-form-units -fsdp-partition -fsdp-autodiff -fsdp-insert-collectives -fsdp-lower-precision -fsdp-accumulate-micro-batches -convert-fsdp-to-runtime=device-arena=true -fsdp-serialize-manifest | FileCheck %s --enable-var-scope

// offload = optimizer on 2 ranks, bf16 parameters and reductions, AdamW with
// clipping. The device arena keeps each trainable unit's 16-element shard in
// bf16 (32 bytes at 0 and 64), the frozen unit's f32 shard (128) and the
// inputs (192, 256), then the step's scalars (320: lr, loss, step); the host arena (704 bytes) the f32 masters (0, 64), the moments
// (128..), each unit's gradient landing place (384, 512: room for f32) and
// the bf16 copy-back buffers (576, 608), then the clipping coefficient (640).
// The plan's allow_tf32 reaches the manifest (the runtime's cuBLAS math mode).
// CHECK: llvm.mlir.global external constant @fsdp_manifest({{.*}}{\22allow_tf32\22:true,
// CHECK: \22device_scalars\22:{\22offset\22:320}
// CHECK-SAME: \22host_arena_bytes\22:704
// CHECK-SAME: {\22dtype\22:\22f32\22,\22host\22:{\22grad_dtype\22:\22bf16\22,\22grad_offset\22:384,\22master_offset\22:0},\22name\22:\22lin1\22,\22numel\22:32,\22param_dtype\22:\22bf16\22,\22param_offset\22:0,\22shard_numel\22:16,\22state\22:[{\22offset\22:128,\22slot\22:\22exp_avg\22},{\22offset\22:192,\22slot\22:\22exp_avg_sq\22}],\22trainable\22:true}
// CHECK-SAME: {\22dtype\22:\22f32\22,\22host\22:{\22grad_dtype\22:\22bf16\22,\22grad_offset\22:512,\22master_offset\22:64},\22name\22:\22lin2\22,\22numel\22:32,\22param_dtype\22:\22bf16\22,\22param_offset\22:64
// A frozen unit has no optimizer: it stays on the device, as it was.
// CHECK-SAME: {\22dtype\22:\22f32\22,\22name\22:\22frozen\22,\22numel\22:4,\22param_offset\22:128,\22shard_numel\22:16,\22trainable\22:false}

// CHECK-LABEL: func.func @fsdp_train_step(
// CHECK-SAME: %[[ARENA:.+]]: memref<384xi8>, %[[HOST:.+]]: memref<704xi8>, %[[STEP:.+]]: i64, %[[LR:.+]]: f32) -> f32

// lin1's gather reads the bf16 shard as it is: no rounding on the device.
// CHECK: %[[LIN1:.+]] = memref.view %[[ARENA]][%{{.+}}][] : memref<384xi8> to memref<32xi8>
// CHECK-NOT: fsdp.convert
// CHECK: memref.extract_aligned_pointer_as_index %[[LIN1]]
// CHECK: call @fsdprt_all_gather_start({{.+}}) {fsdp.unit = "lin1"}

// lin2's reduced bf16 shard goes to the host as soon as its reduction is
// waited for, in the middle of backward (before lin1's flat gradient).
// CHECK: %[[RS2:.+]] = call @fsdprt_reduce_scatter_start({{.+}}) {fsdp.unit = "lin2"}
// CHECK: call @fsdprt_wait(%[[RS2]])
// CHECK-NEXT: %[[C512:.+]] = arith.constant 512 : index
// CHECK-NEXT: memref.view %[[HOST]][%[[C512]]][] : memref<704xi8> to memref<64xi8>
// CHECK: %[[C32:.+]] = arith.constant 32 : i64
// CHECK-NEXT: %[[TOHOST2:.+]] = call @fsdprt_copy_to_host_start(%{{.+}}, %{{.+}}, %[[C32]]) {fsdp.unit = "lin2"}
// CHECK: fsdp.buffer = "gradient"
// CHECK: %[[RS1:.+]] = call @fsdprt_reduce_scatter_start({{.+}}) {fsdp.unit = "lin1"}
// CHECK: call @fsdprt_wait(%[[RS1]])
// One copy in flight: the host waits for lin2's before lin1's starts (the
// device buffer it copies is free after that).
// CHECK: call @fsdprt_wait(%[[TOHOST2]])
// CHECK-NEXT: %[[TOHOST1:.+]] = call @fsdprt_copy_to_host_start({{.+}}) {fsdp.unit = "lin1"}

// With clipping, the updates need the coefficient of every gradient: at the
// end, in arrival order (lin2 first), once the coefficient (computed on the
// device from the device's widened gradients) has reached the host.
// CHECK: fsdp.clip_coefficient
// CHECK: call @fsdprt_wait(%[[TOHOST1]])
// CHECK: %[[COEFF:.+]] = call @fsdprt_copy_to_host_start(%{{.+}}, %{{.+}}, %{{.+}}) : (!llvm.ptr, !llvm.ptr, i64) -> i32
// CHECK-NEXT: call @fsdprt_wait(%[[COEFF]])
// CHECK-NEXT: %[[C640:.+]] = arith.constant 640 : index
// CHECK-NEXT: %[[CVIEW:.+]] = memref.view %[[HOST]][%[[C640]]][] : memref<704xi8> to memref<f32>
// CHECK-NEXT: %[[SCALE:.+]] = memref.load %[[CVIEW]][] {fsdp.on_host} : memref<f32>
// Each update runs on the host's threads (fsdprt_host_parallel): the unit's
// task over its 16 elements, with the step's learning rate, step number and
// the coefficient; then the new shard (lin2's bf16 copy-back buffer at 576)
// goes to the device shard (64).
// CHECK-NEXT: %[[TASK2:.+]] = constant @fsdp_host_update_lin2 : (memref<704xi8>, f32, i64, f32, index, index) -> ()
// CHECK: %[[C16:.+]] = arith.constant 16 : i64
// CHECK-NEXT: call @fsdprt_host_parallel(%[[TASK2]], %{{.+}}, %[[LR]], %[[STEP]], %[[SCALE]], %[[C16]]) {fsdp.unit = "lin2"}
// CHECK: %[[C64:.+]] = arith.constant 64 : index
// CHECK-NEXT: memref.view %[[ARENA]][%[[C64]]][] : memref<384xi8> to memref<32xi8>
// CHECK: %[[C576:.+]] = arith.constant 576 : index
// CHECK-NEXT: memref.view %[[HOST]][%[[C576]]][] : memref<704xi8> to memref<32xi8>
// CHECK: %[[BACK2:.+]] = call @fsdprt_copy_to_device_start({{.+}}) {fsdp.unit = "lin2"}
// CHECK-NOT: fsdprt_wait
// CHECK: call @fsdprt_host_parallel({{.+}}) {fsdp.unit = "lin1"}
// CHECK: %[[BACK1:.+]] = call @fsdprt_copy_to_device_start({{.+}}) {fsdp.unit = "lin1"}
// The new shards are on the device before the step returns. The loss stays
// on the device, at offset 4 of the step's scalars (324), and the step
// returns NaN.
// CHECK-NEXT: call @fsdprt_wait(%[[BACK2]])
// CHECK-NEXT: call @fsdprt_wait(%[[BACK1]])
// CHECK-NEXT: %[[C324:.+]] = arith.constant 324 : index
// CHECK-NEXT: %[[SLOT:.+]] = memref.view %[[ARENA]][%[[C324]]][] : memref<384xi8> to memref<4xi8>
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[LOSS:.+]] = memref.view %[[SLOT]][%[[C0]]][] : memref<4xi8> to memref<f32>
// CHECK-NEXT: bufferization.materialize_in_destination %{{.+}} in restrict writable %[[LOSS]] : (tensor<f32>, memref<f32>) -> ()
// CHECK-NEXT: %[[NAN:.+]] = arith.constant 0x7FC00000 : f32
// CHECK-NEXT: return %[[NAN]] : f32

// The task: elements [begin, end) of lin2's regions of the host arena; the
// bf16 gradient (512) widened as it is read and scaled by the coefficient, the
// f32 master (64) and moments in place, the new parameter rounded into the
// copy-back buffer.
// CHECK-LABEL: func.func private @fsdp_host_update_lin2(
// CHECK-SAME: %[[TH:.+]]: memref<704xi8>, %[[TLR:.+]]: f32, %[[TSTEP:.+]]: i64, %[[TC:.+]]: f32, %[[BEGIN:.+]]: index, %[[END:.+]]: index)
// CHECK-NEXT: %[[SIZE:.+]] = arith.subi %[[END]], %[[BEGIN]] : index
// CHECK-NEXT: %[[C512:.+]] = arith.constant 512 : index
// CHECK-NEXT: %[[G:.+]] = memref.view %[[TH]][%[[C512]]][] : memref<704xi8> to memref<16xbf16>
// CHECK-NEXT: memref.subview %[[G]][%[[BEGIN]]] [%[[SIZE]]] [1] : memref<16xbf16> to memref<?xbf16, strided<[1], offset: ?>>
// CHECK-NEXT: %[[CM:.+]] = arith.constant 64 : index
// CHECK-NEXT: memref.view %[[TH]][%[[CM]]][] : memref<704xi8> to memref<16xf32>
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}} : memref<?xbf16, strided<[1], offset: ?>>) outs(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : memref<?xf32, strided<[1], offset: ?>>, memref<?xf32, strided<[1], offset: ?>>, memref<?xf32, strided<[1], offset: ?>>, memref<?xbf16, strided<[1], offset: ?>>)
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK-NEXT: arith.mulf %{{.+}}, %[[TC]] : f32
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: return
// CHECK-LABEL: func.func private @fsdp_host_update_lin1(
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.adamw<lr = 0.01>, clip_grad_norm = 1.0, param_dtype = bf16, reduce_dtype = bf16, offload = optimizer, allow_tf32 = true>} {
  fsdp.param @w1 unit "lin1" : tensor<4x8xf32> = #fsdp.fan_in_uniform
  fsdp.param @w2 unit "lin2" : tensor<8x4xf32> = #fsdp.fan_in_uniform
  fsdp.param frozen @scale unit "frozen" : tensor<4xf32> = #fsdp.ones
  func.func @loss(%x: tensor<8x4xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %s = fsdp.use @scale : tensor<4xf32>
    %xs = fsdp.mul %x, %s : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
    %w1 = fsdp.use @w1 : tensor<4x8xf32>
    %h = fsdp.matmul %xs, %w1 : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
    %w2 = fsdp.use @w2 : tensor<8x4xf32>
    %z = fsdp.matmul %h, %w2 : tensor<8x8xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Without clipping each unit is updated as soon as its gradient is on the
// host, in the middle of backward: lin2 before lin1's gradient travels. f32
// parameters: the master itself goes back, no rounded copy.
// CHECK: \22host_arena_bytes\22:576
// CHECK-LABEL: func.func @fsdp_train_step(
// CHECK-SAME: %[[ARENA:.+]]: memref<384xi8>, %[[HOST:.+]]: memref<576xi8>
// CHECK: %[[TOHOST2:.+]] = call @fsdprt_copy_to_host_start({{.+}}) {fsdp.unit = "lin2"}
// CHECK: %[[RS1:.+]] = call @fsdprt_reduce_scatter_start({{.+}}) {fsdp.unit = "lin1"}
// CHECK: call @fsdprt_wait(%[[RS1]])
// CHECK: call @fsdprt_wait(%[[TOHOST2]])
// No coefficient: the task is called with 1.
// CHECK: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: call @fsdprt_host_parallel(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ONE]], %{{.+}}) {fsdp.unit = "lin2"}
// The device's f32 shard from the master (host offset 64).
// CHECK: memref.view %[[ARENA]][%{{.+}}][] : memref<384xi8> to memref<64xi8>
// CHECK: %[[C64:.+]] = arith.constant 64 : index
// CHECK-NEXT: memref.view %[[HOST]][%[[C64]]][] : memref<576xi8> to memref<64xi8>
// CHECK: %[[BACK2:.+]] = call @fsdprt_copy_to_device_start({{.+}}) {fsdp.unit = "lin2"}
// CHECK-NEXT: %[[TOHOST1:.+]] = call @fsdprt_copy_to_host_start({{.+}}) {fsdp.unit = "lin1"}
// CHECK: call @fsdprt_wait(%[[TOHOST1]])
// CHECK: call @fsdprt_host_parallel({{.+}}) {fsdp.unit = "lin1"}
// CHECK: %[[BACK1:.+]] = call @fsdprt_copy_to_device_start({{.+}}) {fsdp.unit = "lin1"}
// CHECK-NEXT: call @fsdprt_wait(%[[BACK2]])
// CHECK-NEXT: call @fsdprt_wait(%[[BACK1]])
// The f32 tasks: gradient, master and moments, nothing rounded, no scale.
// CHECK-LABEL: func.func private @fsdp_host_update_lin2(
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}} : memref<?xf32, strided<[1], offset: ?>>) outs(%{{.+}}, %{{.+}}, %{{.+}} : memref<?xf32, strided<[1], offset: ?>>, memref<?xf32, strided<[1], offset: ?>>, memref<?xf32, strided<[1], offset: ?>>)
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf %{{.+}} : f32 to bf16
// CHECK: return
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.adamw<lr = 0.01>, offload = optimizer>} {
  fsdp.param @w1 unit "lin1" : tensor<4x8xf32> = #fsdp.fan_in_uniform
  fsdp.param @w2 unit "lin2" : tensor<8x4xf32> = #fsdp.fan_in_uniform
  fsdp.param frozen @scale unit "frozen" : tensor<4xf32> = #fsdp.ones
  func.func @loss(%x: tensor<8x4xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %s = fsdp.use @scale : tensor<4xf32>
    %xs = fsdp.mul %x, %s : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
    %w1 = fsdp.use @w1 : tensor<4x8xf32>
    %h = fsdp.matmul %xs, %w1 : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
    %w2 = fsdp.use @w2 : tensor<8x4xf32>
    %z = fsdp.matmul %h, %w2 : tensor<8x8xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
