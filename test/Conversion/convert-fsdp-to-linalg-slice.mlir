// RUN: fsdp-opt %s -convert-fsdp-to-linalg | FileCheck %s

// A slice reads its input at the iteration index shifted by the offset along the
// sliced dimension; bf16 stays bf16 (a copy, never rounded).
// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[X:.+]]: tensor<2x5x12xbf16>)
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<2x5x4xbf16>)
// CHECK: %[[I0:.+]] = linalg.index 0 : index
// CHECK: %[[I1:.+]] = linalg.index 1 : index
// CHECK: %[[I2:.+]] = linalg.index 2 : index
// CHECK: %[[OFF:.+]] = arith.constant 4 : index
// CHECK: %[[AT:.+]] = arith.addi %[[I2]], %[[OFF]] : index
// CHECK: %[[V:.+]] = tensor.extract %[[X]][%[[I0]], %[[I1]], %[[AT]]] : tensor<2x5x12xbf16>
// CHECK: linalg.yield %[[V]] : bf16
func.func @slice(%x: tensor<2x5x12xbf16>) -> tensor<2x5x4xbf16> {
  %0 = fsdp.slice %x dim 2 offset 4 size 4 : tensor<2x5x12xbf16> -> tensor<2x5x4xbf16>
  return %0 : tensor<2x5x4xbf16>
}

// Its gradient writes every element of the forward input's shape once: the
// incoming gradient inside the range (index - offset, unsigned below the size, so
// that indices before the offset fall outside too), zero elsewhere.
// CHECK-LABEL: func.func @slice_grad
// CHECK-SAME: (%[[G:.+]]: tensor<3x6xf32>)
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<8x6xf32>)
// CHECK: %[[I0:.+]] = linalg.index 0 : index
// CHECK: %[[I1:.+]] = linalg.index 1 : index
// CHECK: %[[OFF:.+]] = arith.constant 2 : index
// CHECK: %[[SHIFT:.+]] = arith.subi %[[I0]], %[[OFF]] : index
// CHECK: %[[SIZE:.+]] = arith.constant 3 : index
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[SHIFT]], %[[SIZE]] : index
// CHECK: %[[ROW:.+]] = arith.select %[[IN]], %[[SHIFT]], %{{.+}} : index
// CHECK: %[[V:.+]] = tensor.extract %[[G]][%[[ROW]], %[[I1]]] : tensor<3x6xf32>
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[R:.+]] = arith.select %[[IN]], %[[V]], %[[ZERO]] : f32
// CHECK: linalg.yield %[[R]] : f32
func.func @slice_grad(%g: tensor<3x6xf32>) -> tensor<8x6xf32> {
  %0 = fsdp.slice_grad %g dim 0 offset 2 : tensor<3x6xf32> -> tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}
