// RUN: fsdp-opt %s -split-input-file -convert-fsdp-to-runtime -fsdp-serialize-manifest | FileCheck %s
// RUN: fsdp-opt %s -split-input-file -convert-fsdp-to-runtime=device-arena=true -fsdp-serialize-manifest | FileCheck %s --check-prefix=DEVICE
// RUN: fsdp-opt %s -split-input-file -convert-fsdp-to-runtime | FileCheck %s --check-prefix=TYPED

// Two ranks, full_shard, AdamW and clipping; the input is what
// fsdp-insert-collectives makes of a tied embedding, a linear layer and a
// frozen unit. Each rank's arena holds, 64-byte aligned: the parameter
// shards of @e (0, 48 elements) and @s (192, 16), @e's two AdamW moments
// (256, 448), then its half of the inputs (640, 704). The gradient shard of @e
// is a buffer of the step (fsdp-assign-buffers writes its grad_offset).

// Until fsdp-serialize-manifest, the manifest is the module's typed
// fsdp.manifest: the plan, the arena so far (its persistent part), and the
// units (no grad_offset yet), parameters, inputs and collectives.
// TYPED-LABEL: module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [2], optimizer = #fsdp.adamw<lr = 0.01, weight_decay = 0.1>, clip_grad_norm = 1.0>, arena_bytes = 768, persistent_bytes = 768, local_batch = 1, shard_ranks = 2,
// TYPED-SAME: units = [#fsdp.manifest_unit<name = "e", dtype = f32, trainable = true, numel = 80, shard_numel = 48, param_offset = 0, state = [#fsdp.state_slot<name = "exp_avg", offset = 256>, #fsdp.state_slot<name = "exp_avg_sq", offset = 448>]>, #fsdp.manifest_unit<name = "s", dtype = f32, trainable = false, numel = 4, shard_numel = 16, param_offset = 192>],
// TYPED-SAME: params = [#fsdp.manifest_param<name = "emb", shape = [16, 4], dtype = f32, unit = "e", trainable = true, init = #fsdp.normal<std = 0.02>, unit_offset = 0>,
// TYPED-SAME: inputs = [#fsdp.manifest_input<shape = [1, 3], dtype = i32, role = "tokens", bound = 16, offset = 640, bytes = 12>, #fsdp.manifest_input<shape = [1, 3], dtype = i32, role = "classes", bound = 16, offset = 704, bytes = 12>],
// TYPED-SAME: collectives = [#fsdp.manifest_collective<kind = "all_gather", unit = "e">,
// TYPED-SAME: tokens_per_step = 6>}
// TYPED-NOT: llvm.mlir.global

// CHECK-LABEL: llvm.mlir.global external constant @fsdp_manifest(
// CHECK-SAME: {\22allow_tf32\22:false,\22arena_bytes\22:768,\22batch\22:2,\22clip_grad_norm\22:1
// The collectives the step starts, in order, each with its unit (the
// gradient norm's all-reduce has none): what a rank that waits too long for
// one names.
// CHECK-SAME: \22collectives\22:[{\22kind\22:\22all_gather\22,\22unit\22:\22e\22},{\22kind\22:\22all_gather\22,\22unit\22:\22s\22},{\22kind\22:\22all_gather\22,\22unit\22:\22e\22},{\22kind\22:\22all_gather\22,\22unit\22:\22s\22},{\22kind\22:\22reduce_scatter\22,\22unit\22:\22e\22},{\22kind\22:\22all_reduce\22,\22unit\22:\22\22}]
// CHECK-SAME: \22grid\22:[2]
// CHECK-SAME: {\22bound\22:16,\22bytes\22:12,\22dtype\22:\22i32\22,\22index\22:0,\22offset\22:640,\22role\22:\22tokens\22,\22shape\22:[1,3]}
// CHECK-SAME: {\22bound\22:16,\22bytes\22:12,\22dtype\22:\22i32\22,\22index\22:1,\22offset\22:704,\22role\22:\22classes\22,\22shape\22:[1,3]}
// CHECK-SAME: \22local_batch\22:1
// CHECK-SAME: \22kind\22:\22adamw\22,\22lr\22:0.01
// CHECK-SAME: \22params\22:[{\22dtype\22:\22f32\22,\22init\22:{\22kind\22:\22normal\22,\22mean\22:0,\22std\22:0.02},\22name\22:\22emb\22,\22shape\22:[16,4],\22trainable\22:true,\22unit\22:\22e\22,\22unit_offset\22:0}
// CHECK-SAME: \22name\22:\22w\22,\22shape\22:[4,4],\22trainable\22:true,\22unit\22:\22e\22,\22unit_offset\22:64}
// CHECK-SAME: \22name\22:\22scale\22,\22shape\22:[4],\22trainable\22:false,\22unit\22:\22s\22,\22unit_offset\22:0}
// CHECK-SAME: \22persistent_bytes\22:768,\22replicas\22:1,\22shard_ranks\22:2,\22strategy\22:\22full_shard\22
// CHECK-SAME: \22units\22:[{\22dtype\22:\22f32\22,\22name\22:\22e\22,\22numel\22:80,\22param_offset\22:0,\22shard_numel\22:48,\22state\22:[{\22offset\22:256,\22slot\22:\22exp_avg\22},{\22offset\22:448,\22slot\22:\22exp_avg_sq\22}],\22trainable\22:true}
// CHECK-SAME: {\22dtype\22:\22f32\22,\22name\22:\22s\22,\22numel\22:4,\22param_offset\22:192,\22shard_numel\22:16,\22trainable\22:false}]
// CHECK-SAME: \22version\22:2}\00")

// CHECK: func.func @fsdp_train_step(%[[ARENA:.+]]: memref<768xi8>, %[[STEP:.+]]: i64, %[[LR:.+]]: f32) -> f32
// The forward gather of @e: the rank's 192-byte shard into a 384-byte buffer
// of the step, over the shard group (1).
// CHECK: %[[E:.+]] = memref.alloc() {alignment = 64 : i64, fsdp.buffer = "gathered"} : memref<384xi8>
// CHECK: %[[ESHARD:.+]] = memref.view %[[ARENA]][%{{.+}}][] : memref<768xi8> to memref<192xi8>
// CHECK: memref.extract_aligned_pointer_as_index %[[ESHARD]]
// CHECK: memref.extract_aligned_pointer_as_index %[[E]]
// CHECK: %[[H:.+]] = call @fsdprt_all_gather_start(%{{.+}}, %{{.+}}, %c192_i64, %c1_i32{{.*}}) {fsdp.unit = "{{.+}}"} : (!llvm.ptr, !llvm.ptr, i64, i32) -> i32
// CHECK-NEXT: call @fsdprt_wait(%[[H]]) : (i32) -> ()
// With the default prefetch of 1, the next gather (@s, 64 bytes per rank)
// starts as soon as @e's is complete, before @e's layer computes, and is
// waited for right before @s is read.
// CHECK: %[[S:.+]] = memref.alloc() {alignment = 64 : i64, fsdp.buffer = "gathered"} : memref<128xi8>
// CHECK: %[[HS:.+]] = call @fsdprt_all_gather_start(%{{.+}}, %{{.+}}, %c64_i64, %c1_i32{{.*}})
// CHECK: %[[EMBV:.+]] = memref.view %[[E]][%{{.+}}][] : memref<384xi8> to memref<16x4xf32>
// CHECK: %[[EMB:.+]] = bufferization.to_tensor %[[EMBV]] restrict
// CHECK: %[[WV:.+]] = memref.view %[[E]][%c256{{.*}}][] : memref<384xi8> to memref<4x4xf32>
// CHECK: fsdp.embedding %[[EMB]]
// CHECK-NEXT: call @fsdprt_wait(%[[HS]])
// CHECK-NOT: fsdp.free
// The backward gathers, each started one gather ahead.
// CHECK: %[[HE2:.+]] = call @fsdprt_all_gather_start
// CHECK: fsdp.mul
// CHECK: call @fsdprt_wait(%[[HE2]])
// CHECK: %[[HS2:.+]] = call @fsdprt_all_gather_start
// CHECK: call @fsdprt_wait(%[[HS2]])
// The flat gradient: padding zeroed, each gradient in its slot, then
// reduce-scattered (avg = 1) into the gradient shard, a buffer of the step
// that holds it to the end of the step.
// CHECK: %[[FLAT:.+]] = memref.alloc() {alignment = 64 : i64, fsdp.buffer = "gradient"} : memref<384xi8>
// CHECK: %[[PAD:.+]] = memref.view %[[FLAT]][%c320{{.*}}][] : memref<384xi8> to memref<16xf32>
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[PAD]] : memref<16xf32>)
// CHECK: %[[DEMB:.+]] = memref.view %[[FLAT]][%{{.+}}][] : memref<384xi8> to memref<16x4xf32>
// CHECK: bufferization.materialize_in_destination %{{.+}} in restrict writable %[[DEMB]]
// CHECK: %[[DW:.+]] = memref.view %[[FLAT]][%c256{{.*}}][] : memref<384xi8> to memref<4x4xf32>
// CHECK: bufferization.materialize_in_destination %{{.+}} in restrict writable %[[DW]]
// CHECK: %[[GSHARD:.+]] = memref.alloc() {alignment = 64 : i64, fsdp.buffer = "gradient_shard", fsdp.gradient_of = "e"} : memref<192xi8>
// CHECK: memref.extract_aligned_pointer_as_index %[[FLAT]]
// CHECK: memref.extract_aligned_pointer_as_index %[[GSHARD]]
// CHECK: %[[RS:.+]] = call @fsdprt_reduce_scatter_start(%{{.+}}, %{{.+}}, %c48_i64, %c0_i32{{.*}}, %c1_i32{{.*}}, %c1_i32{{.*}}) {fsdp.unit = "{{.+}}"} : (!llvm.ptr, !llvm.ptr, i64, i32, i32, i32) -> i32
// CHECK-NEXT: call @fsdprt_wait(%[[RS]])
// Clipping: the rank's partial sum of squares, f32 (0), summed (0) over the shard group (1).
// CHECK: fsdp.reduce_sum
// CHECK: %[[SUMSQ:.+]] = memref.alloc() {alignment = 64 : i64, fsdp.buffer = "collective"} : memref<4xi8>
// CHECK: %[[AR:.+]] = call @fsdprt_all_reduce_start(%{{.+}}, %c1_i64, %c0_i32{{.*}}, %c0_i32{{.*}}, %c1_i32{{.*}}) : (!llvm.ptr, i64, i32, i32, i32) -> i32
// CHECK-NEXT: call @fsdprt_wait(%[[AR]])
// CHECK: fsdp.clip_coefficient
// AdamW on the shard: the gradient shard's buffer; parameter and moments are
// views of the arena.
// CHECK: %[[G:.+]] = memref.view %[[GSHARD]][%c0{{.*}}][] : memref<192xi8> to memref<48xf32>
// CHECK: %[[P:.+]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<768xi8> to memref<48xf32>
// CHECK: %[[M:.+]] = memref.view %[[ARENA]][%c256{{.*}}][] : memref<768xi8> to memref<48xf32>
// CHECK: %[[V:.+]] = memref.view %[[ARENA]][%c448{{.*}}][] : memref<768xi8> to memref<48xf32>
// CHECK: linalg.generic {{.+}} ins(%[[G]] : memref<48xf32>) outs(%[[P]], %[[M]], %[[V]] : memref<48xf32>, memref<48xf32>, memref<48xf32>)
// CHECK: %[[LOSS:.+]] = tensor.extract %{{.+}}[] : tensor<f32>
// CHECK: return %[[LOSS]] : f32
// CHECK-NOT: fsdp.param
// CHECK-NOT: fsdp.unit
// CHECK-DAG: func.func private @fsdprt_all_gather_start(!llvm.ptr, !llvm.ptr, i64, i32) -> i32
// CHECK-DAG: func.func private @fsdprt_wait(i32)
// In device memory AdamW's factors of the step (lr / (1 - beta1^t), sqrt(1 - beta2^t),
// 1 - lr wd: the two f64 powers) are computed once, from the step (776) and lr (768) in the
// device scalars, into their slots 784, 788 and 792; the update reads them there.
// DEVICE: \22device_scalars\22:{\22offset\22:768}
// DEVICE: %[[FACTOR0:.+]] = memref.view %{{.+}}[%c784{{.*}}][] : memref<832xi8> to memref<f32>
// DEVICE: %[[FACTOR1:.+]] = memref.view %{{.+}}[%c788{{.*}}][] : memref<832xi8> to memref<f32>
// DEVICE: %[[FACTOR2:.+]] = memref.view %{{.+}}[%c792{{.*}}][] : memref<832xi8> to memref<f32>
// DEVICE: linalg.generic {{.+}} iterator_types = []} outs(%[[FACTOR0]], %[[FACTOR1]], %[[FACTOR2]] : memref<f32>, memref<f32>, memref<f32>)
// DEVICE-COUNT-2: math.powf
// DEVICE: linalg.generic {{.+}} iterator_types = ["parallel"]} ins(%{{.+}}, %[[FACTOR0]], %[[FACTOR1]], %[[FACTOR2]] : memref<48xf32>, memref<f32>, memref<f32>, memref<f32>)
// DEVICE-NOT: math.powf
// DEVICE: linalg.yield
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.adamw<lr = 0.01, weight_decay = 0.1>, clip_grad_norm = 1.0>} {
  fsdp.param @emb unit "e" at 0 : tensor<16x4xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @w unit "e" at 64 : tensor<4x4xf32> = #fsdp.fan_in_uniform
  fsdp.unit @e numel 80 shard 48 ranks 2 : f32
  fsdp.param frozen @scale unit "s" at 0 : tensor<4xf32> = #fsdp.ones
  fsdp.unit @s numel 4 shard 16 ranks 2 : f32
  func.func @train_step(%arg0: tensor<1x3xi32>, %arg1: tensor<1x3xi32>, %arg2: i64, %arg3: f32) -> tensor<f32> {
    %0 = fsdp.all_gather @e : tensor<96xf32>
    %1 = fsdp.view @emb in %0 : tensor<96xf32> -> tensor<16x4xf32>
    %2 = fsdp.view @w in %0 : tensor<96xf32> -> tensor<4x4xf32>
    %3 = fsdp.embedding %1[%arg0] : tensor<16x4xf32>, tensor<1x3xi32> -> tensor<1x3x4xf32>
    %4 = fsdp.all_gather @s : tensor<32xf32>
    %5 = fsdp.view @scale in %4 : tensor<32xf32> -> tensor<4xf32>
    %6 = fsdp.mul %3, %5 : tensor<1x3x4xf32>, tensor<4xf32> -> tensor<1x3x4xf32>
    fsdp.free %4 : tensor<32xf32>
    %7 = fsdp.matmul %6, %2 : tensor<1x3x4xf32>, tensor<4x4xf32> -> tensor<1x3x4xf32>
    %8 = fsdp.matmul %7, %1 transpose_rhs : tensor<1x3x4xf32>, tensor<16x4xf32> -> tensor<1x3x16xf32>
    fsdp.free %0 : tensor<96xf32>
    %9 = fsdp.cross_entropy %8, %arg1 : tensor<1x3x16xf32>, tensor<1x3xi32> -> tensor<f32>
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %10 = fsdp.cross_entropy_grad %8, %arg1, %cst : tensor<1x3x16xf32>, tensor<1x3xi32>, tensor<f32>
    %11 = fsdp.all_gather @e : tensor<96xf32>
    %12 = fsdp.view @emb in %11 : tensor<96xf32> -> tensor<16x4xf32>
    %13 = fsdp.view @w in %11 : tensor<96xf32> -> tensor<4x4xf32>
    %14 = fsdp.matmul %10, %12 : tensor<1x3x16xf32>, tensor<16x4xf32> -> tensor<1x3x4xf32>
    %15 = fsdp.reshape %7 : tensor<1x3x4xf32> -> tensor<3x4xf32>
    %16 = fsdp.reshape %10 : tensor<1x3x16xf32> -> tensor<3x16xf32>
    %17 = fsdp.matmul %16, %15 transpose_lhs : tensor<3x16xf32>, tensor<3x4xf32> -> tensor<16x4xf32>
    %18 = fsdp.matmul %14, %13 transpose_rhs : tensor<1x3x4xf32>, tensor<4x4xf32> -> tensor<1x3x4xf32>
    fsdp.free %11 : tensor<96xf32>
    %19 = fsdp.reshape %6 : tensor<1x3x4xf32> -> tensor<3x4xf32>
    %20 = fsdp.reshape %14 : tensor<1x3x4xf32> -> tensor<3x4xf32>
    %21 = fsdp.matmul %19, %20 transpose_lhs : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<4x4xf32>
    %22 = fsdp.all_gather @s : tensor<32xf32>
    %23 = fsdp.view @scale in %22 : tensor<32xf32> -> tensor<4xf32>
    %24 = fsdp.mul %18, %23 : tensor<1x3x4xf32>, tensor<4xf32> -> tensor<1x3x4xf32>
    fsdp.free %22 : tensor<32xf32>
    %25 = fsdp.embedding_grad %arg0, %24 : tensor<1x3xi32>, tensor<1x3x4xf32> -> tensor<16x4xf32>
    %26 = fsdp.add %17, %25 : tensor<16x4xf32>, tensor<16x4xf32> -> tensor<16x4xf32>
    %27 = fsdp.flatten @e(%26, %21) : tensor<16x4xf32>, tensor<4x4xf32> -> tensor<96xf32>
    %28 = fsdp.reduce_scatter %27 avg : tensor<96xf32> -> tensor<48xf32>
    %29 = fsdp.mul %28, %28 : tensor<48xf32>, tensor<48xf32> -> tensor<48xf32>
    %30 = fsdp.reduce_sum %29 dims [0] : tensor<48xf32> -> tensor<f32>
    %31 = fsdp.all_reduce %30 sum over shard : tensor<f32>
    %32 = fsdp.clip_coefficient %31 max_norm 1.0 : tensor<f32>
    fsdp.update @e, %28 step %arg2 lr %arg3 scaled %32 {optimizer = #fsdp.adamw<lr = 0.01, weight_decay = 0.1>} : tensor<48xf32>, tensor<f32>
    return %9 : tensor<f32>
  }
}

// -----

// no_shard on two ranks: one shard per unit, so parameters are read in place
// and the flat gradient, averaged in place (1) over the replica group (2), is
// the gradient shard. SGD without momentum keeps no state.

// CHECK-LABEL: llvm.mlir.global external constant @fsdp_manifest(
// The replicas' all-reduce moves @lin's gradient.
// CHECK-SAME: \22collectives\22:[{\22kind\22:\22all_reduce\22,\22unit\22:\22lin\22}]
// CHECK-SAME: \22replicas\22:2,\22shard_ranks\22:1
// CHECK-SAME: \22state\22:[]
// CHECK: func.func @fsdp_train_step(%[[ARENA:.+]]: memref<192xi8>
// CHECK-NOT: all_gather
// CHECK: %[[GSHARD:.+]] = memref.alloc() {alignment = 64 : i64, fsdp.buffer = "gradient_shard", fsdp.gradient_of = "lin"} : memref<64xi8>
// CHECK: %[[DW:.+]] = memref.view %[[GSHARD]][%c0{{.*}}][] : memref<64xi8> to memref<3x2xf32>
// CHECK: bufferization.materialize_in_destination %{{.+}} in restrict writable %[[DW]]
// CHECK: memref.extract_aligned_pointer_as_index %[[GSHARD]]
// CHECK: call @fsdprt_all_reduce_start(%{{.+}}, %c16_i64, %c0_i32, %c1_i32, %c2_i32)
// CHECK: linalg.generic {{.+}} ins(%{{.+}} : memref<16xf32>) outs(%{{.+}} : memref<16xf32>)

// In device memory (CUDA) the arena ends with the step's scalars (192): the
// update reads lr there (step at 200 is read too: SGD ignores it), and the
// loss is left at 196; the step returns NaN.
// DEVICE: \22device_scalars\22:{\22offset\22:192}
// DEVICE-SAME: \22persistent_bytes\22:256
// DEVICE-SAME: \22strategy\22:\22no_shard\22
// DEVICE: func.func @fsdp_train_step(%[[ARENA:.+]]: memref<256xi8>, %{{.+}}: i64, %{{.+}}: f32) -> f32
// DEVICE: %[[C192:.+]] = arith.constant 192 : index
// DEVICE-NEXT: %[[LR_SLOT:.+]] = memref.view %[[ARENA]][%[[C192]]][] : memref<256xi8> to memref<f32>
// DEVICE-NEXT: %[[LR:.+]] = memref.load %[[LR_SLOT]][] : memref<f32>
// DEVICE-NEXT: linalg.generic
// DEVICE-NEXT: ^bb0(%[[G:.+]]: f32, %{{.+}}: f32):
// DEVICE-NEXT: arith.mulf %[[LR]], %[[G]] : f32
// DEVICE: %[[C196:.+]] = arith.constant 196 : index
// DEVICE-NEXT: %[[SLOT:.+]] = memref.view %[[ARENA]][%[[C196]]][] : memref<256xi8> to memref<4xi8>
// DEVICE: %[[LOSS:.+]] = memref.view %[[SLOT]][%{{.+}}][] : memref<4xi8> to memref<f32>
// DEVICE-NEXT: bufferization.materialize_in_destination %{{.+}} in restrict writable %[[LOSS]]
// DEVICE-NEXT: %[[NAN:.+]] = arith.constant 0x7FC00000 : f32
// DEVICE-NEXT: return %[[NAN]] : f32
module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = no_shard, optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "lin" at 0 : tensor<3x2xf32> = #fsdp.fan_in_uniform
  fsdp.unit @lin numel 6 shard 16 ranks 1 : f32
  func.func @train_step(%arg0: tensor<2x3xf32>, %arg1: tensor<2x2xf32>, %arg2: i64, %arg3: f32) -> tensor<f32> {
    %0 = fsdp.use @w : tensor<3x2xf32>
    %1 = fsdp.matmul %arg0, %0 : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
    %2 = fsdp.mse %1, %arg1 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %3 = fsdp.sub %1, %arg1 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
    %4 = fsdp.scale %3 by 0.5 : tensor<2x2xf32>
    %5 = fsdp.mul %4, %cst : tensor<2x2xf32>, tensor<f32> -> tensor<2x2xf32>
    %6 = fsdp.matmul %arg0, %5 transpose_lhs : tensor<2x3xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
    %7 = fsdp.flatten @lin(%6) : tensor<3x2xf32> -> tensor<16xf32>
    %8 = fsdp.all_reduce %7 avg over replica : tensor<16xf32>
    fsdp.update @lin, %8 step %arg2 lr %arg3 {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<16xf32>
    return %2 : tensor<f32>
  }
}

// -----

// Overlap: a unit's reduce-scatter is waited for right before the first
// reader of its shard (the update at the end) or right before the next unit's
// flat gradient is allocated, whichever comes first: the backward pass of the
// unit before it runs while its gradient travels, and one flat gradient exists
// at a time (each lives until its wait).

// CHECK: \22name\22:\22a.w\22
// CHECK: %[[RSB:.+]] = call @fsdprt_reduce_scatter_start
// CHECK-NEXT: %[[DWA:.+]] = fsdp.matmul
// CHECK-NEXT: call @fsdprt_wait(%[[RSB]])
// CHECK-NEXT: memref.alloc() {{.*}}fsdp.buffer = "gradient"
// CHECK: %[[RSA:.+]] = call @fsdprt_reduce_scatter_start
// CHECK-NEXT: call @fsdprt_wait(%[[RSA]])
// CHECK: linalg.generic
// CHECK: linalg.generic
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @a.w unit "a" at 0 : tensor<4x4xf32> = #fsdp.fan_in_uniform
  fsdp.unit @a numel 16 shard 16 ranks 2 : f32
  fsdp.param @b.w unit "b" at 0 : tensor<4x4xf32> = #fsdp.fan_in_uniform
  fsdp.unit @b numel 16 shard 16 ranks 2 : f32
  func.func @train_step(%arg0: tensor<2x4xf32>, %arg1: tensor<2x4xf32>, %arg2: i64, %arg3: f32) -> tensor<f32> {
    %0 = fsdp.all_gather @a : tensor<32xf32>
    %1 = fsdp.view @a.w in %0 : tensor<32xf32> -> tensor<4x4xf32>
    %2 = fsdp.matmul %arg0, %1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    fsdp.free %0 : tensor<32xf32>
    %3 = fsdp.all_gather @b : tensor<32xf32>
    %4 = fsdp.view @b.w in %3 : tensor<32xf32> -> tensor<4x4xf32>
    %5 = fsdp.matmul %2, %4 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    fsdp.free %3 : tensor<32xf32>
    %6 = fsdp.mse %5, %arg1 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %7 = fsdp.sub %5, %arg1 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    %8 = fsdp.scale %7 by 0.25 : tensor<2x4xf32>
    %9 = fsdp.mul %8, %cst : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
    %10 = fsdp.all_gather @b : tensor<32xf32>
    %11 = fsdp.view @b.w in %10 : tensor<32xf32> -> tensor<4x4xf32>
    %12 = fsdp.matmul %9, %11 transpose_rhs : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    fsdp.free %10 : tensor<32xf32>
    %13 = fsdp.matmul %2, %9 transpose_lhs : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %14 = fsdp.flatten @b(%13) : tensor<4x4xf32> -> tensor<32xf32>
    %15 = fsdp.reduce_scatter %14 avg : tensor<32xf32> -> tensor<16xf32>
    %16 = fsdp.matmul %arg0, %12 transpose_lhs : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %17 = fsdp.flatten @a(%16) : tensor<4x4xf32> -> tensor<32xf32>
    %18 = fsdp.reduce_scatter %17 avg : tensor<32xf32> -> tensor<16xf32>
    fsdp.update @a, %18 step %arg2 lr %arg3 {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<16xf32>
    fsdp.update @b, %15 step %arg2 lr %arg3 {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<16xf32>
    return %6 : tensor<f32>
  }
}
