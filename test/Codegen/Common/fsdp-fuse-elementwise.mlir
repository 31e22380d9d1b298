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
