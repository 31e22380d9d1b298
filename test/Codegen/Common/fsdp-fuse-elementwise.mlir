// RUN: fsdp-opt %s -convert-fsdp-to-linalg -fsdp-fuse-elementwise | FileCheck %s

// The bias add and the ReLU fuse into one loop nest; the product stays a named
// linalg.matmul (upstream fusion would propagate the reshape into it and turn it
// into a generic that BLAS cannot take).
// CHECK-LABEL: func.func @linear_relu
// CHECK: tensor.collapse_shape
// CHECK: linalg.matmul
// CHECK: tensor.expand_shape
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @linear_relu(%x: tensor<2x4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<2x4x16xf32> {
  %m = fsdp.matmul %x, %w : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
  %z = fsdp.add %m, %b : tensor<2x4x16xf32>, tensor<16xf32> -> tensor<2x4x16xf32>
  %h = fsdp.relu %z : tensor<2x4x16xf32>
  return %h : tensor<2x4x16xf32>
}

// Scalars are not fused: a sum over every unit (the squared gradient norms of
// clipping) stays a chain of identical adds, one kernel shared by all, rather
// than one op whose operand count grows with the model's depth.
// CHECK-LABEL: func.func @scalar_chain
// CHECK-COUNT-3: linalg.generic {{.*}}ins(%{{[^,]*}}, %{{[^ ]*}} : tensor<f32>, tensor<f32>)
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @scalar_chain(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>, %d: tensor<f32>) -> tensor<f32> {
  %ab = fsdp.add %a, %b : tensor<f32>, tensor<f32> -> tensor<f32>
  %abc = fsdp.add %ab, %c : tensor<f32>, tensor<f32> -> tensor<f32>
  %abcd = fsdp.add %abc, %d : tensor<f32>, tensor<f32> -> tensor<f32>
  return %abcd : tensor<f32>
}

// SwiGLU, forward and backward with a collective between: the activation,
// read by the product and by the up projection's gradient, is computed again
// in each rather than stored (the gate is read in backward anyway); the
// gate's and the up projection's gradients, siblings over the same space
// that both read the incoming gradient and the gate, are one op with two
// results that reads each of its three inputs once.
// CHECK-LABEL: func.func @swiglu
// CHECK-SAME: (%[[G:[^:]+]]: tensor<4x8xf32>, %[[U:[^:]+]]: tensor<4x8xf32>, %[[D:[^:]+]]: tensor<4x8xf32>)
// CHECK: %[[GU:.+]] = linalg.generic {{.*}} ins(%[[G]], %[[U]] : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: arith.divf
// CHECK: arith.mulf
// CHECK: call @collective
// CHECK: %[[GRADS:.+]]:2 = linalg.generic {{.*}} ins(%[[D]], %[[G]], %[[U]] : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return %[[GU]], %[[GRADS]]#0, %[[GRADS]]#1
func.func private @collective()
func.func @swiglu(%g: tensor<4x8xf32>, %u: tensor<4x8xf32>, %d: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %act = fsdp.silu %g : tensor<4x8xf32>
  %gu = fsdp.mul %act, %u : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  func.call @collective() : () -> ()
  %du = fsdp.mul %d, %act : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %dact = fsdp.mul %d, %u : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %dg = fsdp.silu_grad %g, %dact : tensor<4x8xf32>
  return %gu, %du, %dg : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// A runtime call (a collective) between siblings keeps them apart: merged,
// the first would wait for the second's place, and its inputs with it.
// CHECK-LABEL: func.func @siblings_across_a_call
// CHECK: linalg.generic
// CHECK: call @collective
// CHECK: linalg.generic
func.func @siblings_across_a_call(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %x = fsdp.mul %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  func.call @collective() : () -> ()
  %y = fsdp.add %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %x, %y : tensor<4x8xf32>, tensor<4x8xf32>
}

// A gather read by two ops is not computed again in each (it would read the
// table's rows twice); the ops reading it, siblings, are one.
// CHECK-LABEL: func.func @shared_gather
// CHECK: %[[ROWS:.+]] = linalg.generic
// CHECK: tensor.extract
// CHECK: linalg.generic {{.*}} ins(%[[ROWS]], %{{.+}} : tensor<2x3x4xf32>, tensor<4xf32>)
// CHECK-NOT: linalg.generic
func.func @shared_gather(%table: tensor<16x4xf32>, %ids: tensor<2x3xi32>, %w: tensor<4xf32>)
    -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %rows = fsdp.embedding %table[%ids] : tensor<16x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
  %x = fsdp.mul %rows, %w : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  %y = fsdp.add %rows, %w : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  return %x, %y : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}
