// RUN: fsdp-opt %s -fsdp-widen-bf16-products | FileCheck %s
// RUN: fsdp-opt %s -fsdp-widen-bf16-products -fsdp-fuse-elementwise -canonicalize | FileCheck %s --check-prefix=FUSED

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#a = affine_map<(m, n, k) -> (m, k)>
#bt = affine_map<(m, n, k) -> (n, k)>
#c = affine_map<(m, n, k) -> (m, n)>

// Two products read one computed input through reshapes (Q and K of one
// normalised activation): it is widened once, right after the op that
// computes it, and each product reads the widened value through its own
// reshape. The first product (B transposed, C zero) gets an f32 zero C; the
// second accumulates into a bf16 C, which is widened. The first's result is
// rounded after its reshape, right before the op that reads it; the second's
// where the function returns it.
// CHECK-LABEL: func.func @products
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8xf32>, %[[W1:.+]]: tensor<8x8xbf16>, %[[W2:.+]]: tensor<8x8xbf16>, %[[ACC:.+]]: tensor<8x8xbf16>)
// CHECK: %[[ACCW:.+]] = linalg.generic {{.*}} ins(%[[ACC]] : tensor<8x8xbf16>) outs({{.*}} : tensor<8x8xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.+]]: bf16, %{{.+}}: f32):
// CHECK-NEXT: %[[E:.+]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT: linalg.yield %[[E]] : f32
// CHECK: %[[W2W:.+]] = linalg.generic {{.*}} ins(%[[W2]] : tensor<8x8xbf16>) outs({{.*}} : tensor<8x8xf32>)
// CHECK: %[[W1W:.+]] = linalg.generic {{.*}} ins(%[[W1]] : tensor<8x8xbf16>) outs({{.*}} : tensor<8x8xf32>)
// CHECK: %[[H:.+]] = linalg.generic {{.*}} ins(%[[X]] : tensor<2x4x8xf32>) outs({{.*}} : tensor<2x4x8xbf16>)
// CHECK: %[[HW:.+]] = linalg.generic {{.*}} ins(%[[H]] : tensor<2x4x8xbf16>) outs({{.*}} : tensor<2x4x8xf32>)
// CHECK-NOT: ins(%[[H]] :
// CHECK: %[[A1:.+]] = tensor.collapse_shape %[[HW]] {{\[\[}}0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
// CHECK: %[[ZERO:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<8x8xf32>)
// CHECK: %[[P1:.+]] = linalg.matmul indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}] ins(%[[A1]], %[[W1W]] : tensor<8x8xf32>, tensor<8x8xf32>) outs(%[[ZERO]] : tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: %[[A2:.+]] = tensor.collapse_shape %[[HW]] {{\[\[}}0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
// CHECK: %[[P2:.+]] = linalg.matmul ins(%[[A2]], %[[W2W]] : tensor<8x8xf32>, tensor<8x8xf32>) outs(%[[ACCW]] : tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: %[[P2R:.+]] = linalg.generic {{.*}} ins(%[[P2]] : tensor<8x8xf32>) outs({{.*}} : tensor<8x8xbf16>)
// CHECK: arith.truncf {{.*}} : f32 to bf16
// CHECK: %[[Y:.+]] = tensor.expand_shape %[[P1]] {{\[\[}}0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
// CHECK: %[[YR:.+]] = linalg.generic {{.*}} ins(%[[Y]] : tensor<2x4x8xf32>) outs({{.*}} : tensor<2x4x8xbf16>)
// CHECK: arith.truncf {{.*}} : f32 to bf16
// CHECK: %[[Z:.+]] = linalg.generic {{.*}} ins(%[[YR]] : tensor<2x4x8xbf16>)
// CHECK-NOT: ins(%[[H]] :
// CHECK: return %[[Z]], %[[P2R]]

// After fusion the widening is part of the loop that computes the input (one
// loop writes the f32 input: the bf16 one is not kept), and the rounding part of
// the loop that reads the product.
// FUSED-LABEL: func.func @products
// FUSED: linalg.generic {{.*}} ins(%{{.+}} : tensor<2x4x8xf32>) outs(%{{.+}} : tensor<2x4x8xf32>)
// FUSED-NEXT: ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32):
// FUSED-NEXT: %[[T:.+]] = arith.truncf %[[IN]] : f32 to bf16
// FUSED-NEXT: %[[E:.+]] = arith.extf %[[T]] : bf16 to f32
// FUSED-NEXT: linalg.yield %[[E]] : f32
// FUSED: linalg.matmul
// FUSED: linalg.matmul
// FUSED: linalg.generic {{.*}} ins(%{{.+}} : tensor<2x4x8xf32>) outs(%{{.+}} : tensor<2x4x8xbf16>)
// FUSED-NEXT: ^bb0(%[[IN2:.+]]: f32, %{{.+}}: bf16):
// FUSED-NEXT: %[[R:.+]] = arith.truncf %[[IN2]] : f32 to bf16
// FUSED-NEXT: %[[RE:.+]] = arith.extf %[[R]] : bf16 to f32
// FUSED-NEXT: arith.mulf %[[RE]], %[[RE]] : f32
func.func @products(%x: tensor<2x4x8xf32>, %w1: tensor<8x8xbf16>, %w2: tensor<8x8xbf16>, %acc: tensor<8x8xbf16>) -> (tensor<2x4x8xbf16>, tensor<8x8xbf16>) {
  %e = tensor.empty() : tensor<2x4x8xbf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<2x4x8xf32>) outs(%e : tensor<2x4x8xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2x4x8xbf16>
  %zero = arith.constant 0.0 : bf16
  %a1 = tensor.collapse_shape %h [[0, 1], [2]] : tensor<2x4x8xbf16> into tensor<8x8xbf16>
  %e1 = tensor.empty() : tensor<8x8xbf16>
  %z1 = linalg.fill ins(%zero : bf16) outs(%e1 : tensor<8x8xbf16>) -> tensor<8x8xbf16>
  %p1 = linalg.matmul indexing_maps = [#a, #bt, #c] ins(%a1, %w1 : tensor<8x8xbf16>, tensor<8x8xbf16>) outs(%z1 : tensor<8x8xbf16>) -> tensor<8x8xbf16>
  %a2 = tensor.collapse_shape %h [[0, 1], [2]] : tensor<2x4x8xbf16> into tensor<8x8xbf16>
  %p2 = linalg.matmul ins(%a2, %w2 : tensor<8x8xbf16>, tensor<8x8xbf16>) outs(%acc : tensor<8x8xbf16>) -> tensor<8x8xbf16>
  %y = tensor.expand_shape %p1 [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xbf16> into tensor<2x4x8xbf16>
  %e2 = tensor.empty() : tensor<2x4x8xbf16>
  %z = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<2x4x8xbf16>) outs(%e2 : tensor<2x4x8xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %v = arith.extf %in : bf16 to f32
    %s = arith.mulf %v, %v : f32
    %r = arith.truncf %s : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x4x8xbf16>
  return %z, %p2 : tensor<2x4x8xbf16>, tensor<8x8xbf16>
}

// A batched product too; an f32 product, or one with an f32 operand, stays.
// CHECK-LABEL: func.func @batched_and_f32
// CHECK: linalg.batch_matmul ins(%{{.+}}, %{{.+}} : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%{{.+}} : tensor<2x4x4xf32>)
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<8x4xf32>) outs(%{{.+}} : tensor<4x4xf32>)
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x8xbf16>, tensor<8x4xbf16>) outs(%{{.+}} : tensor<4x4xf32>)
func.func @batched_and_f32(%a: tensor<2x4x8xbf16>, %b: tensor<2x8x4xbf16>, %c: tensor<2x4x4xbf16>,
                           %fa: tensor<4x8xf32>, %fb: tensor<8x4xf32>, %fc: tensor<4x4xf32>,
                           %ha: tensor<4x8xbf16>, %hb: tensor<8x4xbf16>)
    -> (tensor<2x4x4xbf16>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %p = linalg.batch_matmul ins(%a, %b : tensor<2x4x8xbf16>, tensor<2x8x4xbf16>) outs(%c : tensor<2x4x4xbf16>) -> tensor<2x4x4xbf16>
  %f = linalg.matmul ins(%fa, %fb : tensor<4x8xf32>, tensor<8x4xf32>) outs(%fc : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = linalg.matmul ins(%ha, %hb : tensor<4x8xbf16>, tensor<8x4xbf16>) outs(%fc : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %p, %f, %m : tensor<2x4x4xbf16>, tensor<4x4xf32>, tensor<4x4xf32>
}
