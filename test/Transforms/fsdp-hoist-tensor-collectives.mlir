// RUN: fsdp-opt %s -split-input-file -fsdp-hoist-tensor-collectives | FileCheck %s

// A column-parallel product's backward: the input gradient's sum over the tensor
// ranks starts as soon as that gradient is computed; the weight gradient, which
// needs nothing from it, runs during the transfer. What the sum reads stays before it.
// CHECK-LABEL: func.func @backward
// CHECK: %[[DX:.+]] = fsdp.matmul %{{.+}}, %{{.+}} transpose_rhs
// CHECK-NEXT: %[[SUM:.+]] = fsdp.tensor_sum %[[DX]]
// CHECK-NEXT: %[[DW:.+]] = fsdp.matmul %{{.+}}, %{{.+}} transpose_lhs
// CHECK-NEXT: %[[SCALED:.+]] = fsdp.scale %[[DW]]
// CHECK-NEXT: return %[[SUM]], %[[SCALED]]
func.func @backward(%x: tensor<4x8xf32>, %dy: tensor<4x16xf32>, %w: tensor<8x16xf32>) -> (tensor<4x8xf32>, tensor<8x16xf32>) {
  %dx = fsdp.matmul %dy, %w transpose_rhs : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  %dw = fsdp.matmul %x, %dy transpose_lhs : tensor<4x8xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  %scaled = fsdp.scale %dw by 5.000000e-01 : tensor<8x16xf32>
  %sum = fsdp.tensor_sum %dx : tensor<4x8xf32>
  return %sum, %scaled : tensor<4x8xf32>, tensor<8x16xf32>
}

// -----

// Ops with effects bound the ops that move (an all-reduce of the units' kind stays where
// it is, and what comes before it); an op moved after one collective stays with it, not
// dragged after the next.
// CHECK-LABEL: func.func @bounded
// CHECK: %[[A:.+]] = fsdp.matmul %{{.+}}, %{{.+}} transpose_lhs
// CHECK-NEXT: %[[R:.+]] = fsdp.all_reduce %{{.+}} sum over shard
// CHECK-NEXT: %[[S1:.+]] = fsdp.tensor_sum %{{.+}}
// CHECK-NEXT: %[[B:.+]] = fsdp.matmul %{{.+}}, %{{.+}} transpose_lhs
// CHECK-NEXT: %[[S2:.+]] = fsdp.tensor_sum %[[S1]]
// CHECK-NEXT: %[[C:.+]] = fsdp.relu %[[B]]
func.func @bounded(%x: tensor<4x8xf32>, %dy: tensor<4x16xf32>, %dx: tensor<4x8xf32>, %l: tensor<f32>) -> (tensor<4x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<f32>) {
  %a = fsdp.matmul %x, %dy transpose_lhs : tensor<4x8xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  %r = fsdp.all_reduce %l sum over shard : tensor<f32>
  %b = fsdp.matmul %x, %dy transpose_lhs : tensor<4x8xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  %s1 = fsdp.tensor_sum %dx : tensor<4x8xf32>
  %c = fsdp.relu %b : tensor<8x16xf32>
  %s2 = fsdp.tensor_sum %s1 : tensor<4x8xf32>
  return %s2, %a, %c, %r : tensor<4x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<f32>
}
