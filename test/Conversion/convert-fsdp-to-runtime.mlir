// RUN: fsdp-opt %s -split-input-file -fsdp-autodiff -convert-fsdp-to-runtime -verify-diagnostics | FileCheck %s

// Tied weights, a frozen parameter, AdamW and clipping. The arena holds, 64-byte
// aligned: @emb (0, 256 B), @scale (256), the gradient of @emb (320), its two
// AdamW moments (576, 832), then the inputs (1088, 1152).

// CHECK-LABEL: llvm.mlir.global external constant @fsdp_manifest(
// CHECK-SAME: \22arena_bytes\22:1216,\22batch\22:2,\22clip_grad_norm\22:1,\22grid\22:[1]
// CHECK-SAME: {\22bound\22:16,\22bytes\22:24,\22dtype\22:\22i32\22,\22index\22:0,\22offset\22:1088,\22role\22:\22tokens\22,\22shape\22:[2,3]}
// CHECK-SAME: {\22bound\22:16,\22bytes\22:24,\22dtype\22:\22i32\22,\22index\22:1,\22offset\22:1152,\22role\22:\22classes\22,\22shape\22:[2,3]}
// CHECK-SAME: \22kind\22:\22adamw\22,\22lr\22:0.01
// CHECK-SAME: {\22bytes\22:256,\22dtype\22:\22f32\22,\22init\22:{\22kind\22:\22normal\22,\22mean\22:0,\22std\22:0.02},\22name\22:\22emb\22,\22offset\22:0,\22shape\22:[16,4],\22trainable\22:true,\22unit\22:\22e\22}
// CHECK-SAME: \22name\22:\22scale\22,\22offset\22:256,\22shape\22:[4],\22trainable\22:false
// CHECK-SAME: {\22bytes\22:256,\22offset\22:576,\22param\22:\22emb\22,\22slot\22:\22exp_avg\22},{\22bytes\22:256,\22offset\22:832,\22param\22:\22emb\22,\22slot\22:\22exp_avg_sq\22}
// CHECK-SAME: \22version\22:1}\00")

// CHECK: func.func @fsdp_train_step(%[[ARENA:.+]]: memref<1216xi8>, %[[STEP:.+]]: i64, %[[LR:.+]]: f32) -> f32
// CHECK: %[[IDSV:.+]] = memref.view %[[ARENA]][%{{.+}}][] : memref<1216xi8> to memref<2x3xi32>
// CHECK: bufferization.to_tensor %[[IDSV]] restrict : memref<2x3xi32> to tensor<2x3xi32>
// CHECK: %[[EMBV:.+]] = memref.view %[[ARENA]][%{{.+}}][] : memref<1216xi8> to memref<16x4xf32>
// CHECK: %[[EMB:.+]] = bufferization.to_tensor %[[EMBV]] restrict : memref<16x4xf32> to tensor<16x4xf32>
// CHECK-NOT: fsdp.use
// CHECK: fsdp.embedding %[[EMB]]
// CHECK: %[[GRADV:.+]] = memref.view %[[ARENA]][%[[C320:.+]]][] : memref<1216xi8> to memref<16x4xf32>
// CHECK: bufferization.materialize_in_destination %{{.+}} in restrict writable %[[GRADV]]
// CHECK: %[[PV:.+]] = memref.view %[[ARENA]][%{{.+}}][] : memref<1216xi8> to memref<16x4xf32>
// CHECK: %[[MV:.+]] = memref.view %[[ARENA]][%{{.+}}][] : memref<1216xi8> to memref<16x4xf32>
// CHECK: %[[VV:.+]] = memref.view %[[ARENA]][%{{.+}}][] : memref<1216xi8> to memref<16x4xf32>
// CHECK: %[[COEF:.+]] = tensor.extract %{{.+}}[] : tensor<f32>
// CHECK: math.powf
// CHECK: linalg.generic {{.+}} ins(%[[GRADV]] : memref<16x4xf32>) outs(%[[PV]], %[[MV]], %[[VV]] : memref<16x4xf32>, memref<16x4xf32>, memref<16x4xf32>)
// CHECK: arith.mulf %{{.+}}, %[[COEF]] : f32
// CHECK: math.sqrt
// CHECK: linalg.yield
// CHECK: %[[LOSS:.+]] = tensor.extract %{{.+}}[] : tensor<f32>
// CHECK: return %[[LOSS]] : f32
// CHECK-NOT: fsdp.param
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.adamw<lr = 0.01, weight_decay = 0.1>, clip_grad_norm = 1.0>} {
  fsdp.param @emb unit "e" : tensor<16x4xf32> = #fsdp.normal<std = 0.02>
  fsdp.param frozen @scale : tensor<4xf32> = #fsdp.ones
  func.func @loss(%ids: tensor<2x3xi32>, %y: tensor<2x3xi32>) -> tensor<f32> {
    %e = fsdp.use @emb : tensor<16x4xf32>
    %x = fsdp.embedding %e[%ids] : tensor<16x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
    %s = fsdp.use @scale : tensor<4xf32>
    %h = fsdp.mul %x, %s : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
    %z = fsdp.matmul %h, %e transpose_rhs : tensor<2x3x4xf32>, tensor<16x4xf32> -> tensor<2x3x16xf32>
    %l = fsdp.cross_entropy %z, %y : tensor<2x3x16xf32>, tensor<2x3xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// SGD without momentum keeps no state: the update reads the gradient and
// writes the parameter only. Float inputs are features or regression targets.

// CHECK-LABEL: llvm.mlir.global external constant @fsdp_manifest(
// CHECK-SAME: \22role\22:\22features\22
// CHECK-SAME: \22role\22:\22regression_target\22
// CHECK-SAME: \22state\22:[]
// CHECK: func.func @fsdp_train_step
// CHECK: linalg.generic {{.+}} ins(%{{.+}} : memref<3x2xf32>) outs(%{{.+}} : memref<3x2xf32>)
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w : tensor<3x2xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<4x3xf32>, %t: tensor<4x2xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<3x2xf32>
    %p = fsdp.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
    %l = fsdp.mse %p, %t : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The trainer must be able to check integer inputs against a bound.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w : tensor<4xf32> = #fsdp.ones
  // expected-error@+1 {{integer input #1 is neither embedding indices nor cross-entropy targets, so the trainer could not check its values}}
  func.func @loss(%t: tensor<2x4xf32>, %unused: tensor<2xi32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<4xf32>
    %b = fsdp.broadcast %w : tensor<4xf32> -> tensor<2x4xf32>
    %l = fsdp.mse %b, %t : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Every input's dimension 0 is the batch.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w : tensor<4xf32> = #fsdp.ones
  // expected-error@+1 {{every input's dimension 0 is the batch, but input #1 is 'tensor<3x4xf32>' and input #0 is 'tensor<2x4xf32>'}}
  func.func @loss(%t: tensor<2x4xf32>, %u: tensor<3x4xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<4xf32>
    %b = fsdp.broadcast %w : tensor<4xf32> -> tensor<2x4xf32>
    %l = fsdp.mse %b, %t : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// bf16 parameters are not lowered for CPUs yet.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  // expected-error@+1 {{the CPU target supports f32 parameters only}}
  fsdp.param @w : tensor<4xbf16> = #fsdp.ones
  func.func @loss(%t: tensor<2x4xf32>) -> tensor<bf16> {
    %w = fsdp.use @w : tensor<4xbf16>
    %b = fsdp.broadcast %w : tensor<4xbf16> -> tensor<2x4xbf16>
    %l = fsdp.mse %b, %b : tensor<2x4xbf16>, tensor<2x4xbf16> -> tensor<bf16>
    return %l : tensor<bf16>
  }
}

// -----

// bf16 inputs neither.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w : tensor<4xf32> = #fsdp.ones
  // expected-error@+1 {{input #0 has element type 'bf16'; the CPU target supports f32, i32 and i64}}
  func.func @loss(%t: tensor<2x4xbf16>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<4xf32>
    %l = fsdp.mse %w, %w : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
