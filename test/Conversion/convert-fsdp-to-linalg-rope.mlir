// RUN: fsdp-opt %s -convert-fsdp-to-linalg | FileCheck %s

// Every feature turns: the last dimension as its two halves, a feature's partner
// the same index of the other half (1 - h), the angle computed in the body: the
// frequency theta^(-2j/D) in f64 (exp2 of j times -2 log2(theta) / D), rounded to
// f32, times the position, the index along dimension 1.
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-DAG: #[[$PARTNER:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, -d3 + 1, d4)>
// CHECK-LABEL: func.func @rope
// CHECK: %[[HALVES:.+]] = tensor.expand_shape %{{.+}} {{\[}}[0], [1], [2], [3, 4]] output_shape [2, 5, 3, 2, 4]
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$PARTNER]], #[[$ID]]]
// CHECK-SAME: ins(%[[HALVES]], %[[HALVES]] :
// CHECK: ^bb0(%[[X:.+]]: f32, %[[P:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[HALF:.+]] = linalg.index 3
// CHECK: %[[J:.+]] = linalg.index 4
// CHECK: %[[JI:.+]] = arith.index_cast %[[J]]
// CHECK: %[[POS:.+]] = linalg.index 1
// CHECK: %[[POSI:.+]] = arith.index_cast %[[POS]]
// CHECK: %[[JF:.+]] = arith.sitofp %[[JI]] : i64 to f64
// CHECK: %[[E:.+]] = arith.mulf %[[JF]], %{{.+}} : f64
// CHECK: %[[F:.+]] = math.exp2 %[[E]] : f64
// CHECK: %[[F32:.+]] = arith.truncf %[[F]] : f64 to f32
// CHECK: %[[POSF:.+]] = arith.sitofp %[[POSI]] : i64 to f32
// CHECK: %[[A:.+]] = arith.mulf %[[POSF]], %[[F32]] : f32
// CHECK: %[[COS:.+]] = math.cos %[[A]] : f32
// CHECK: %[[SIN:.+]] = math.sin %[[A]] : f32
// CHECK: %[[SP:.+]] = arith.mulf %{{.+}}, %[[P]] : f32
// CHECK: %[[SPS:.+]] = arith.mulf %[[SP]], %[[SIN]] : f32
// CHECK: %[[XC:.+]] = arith.mulf %[[X]], %[[COS]] : f32
// CHECK: %[[Y:.+]] = arith.addf %[[XC]], %[[SPS]] : f32
// CHECK: linalg.yield %[[Y]] : f32
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0], [1], [2], [3, 4]] : tensor<2x5x3x2x4xf32> into tensor<2x5x3x8xf32>
// CHECK-NOT: fsdp.
func.func @rope(%x: tensor<2x5x3x8xf32>) -> tensor<2x5x3x8xf32> {
  %0 = fsdp.rope %x positions 1 theta 10000.0 : tensor<2x5x3x8xf32>
  return %0 : tensor<2x5x3x8xf32>
}

// 6 of 10 features turn: one generic over the whole result reads each feature's
// partner (i + 3 or i - 3) from the input and keeps features 6 to 9; Llama 3's
// scaling of the frequency in f64 between its bounds (64 / 4 and 64 / 1); bf16
// widened once, rounded once.
// CHECK-LABEL: func.func @rope_partial_scaled
// CHECK: linalg.generic
// CHECK: ^bb0(%[[X:.+]]: bf16, %{{.+}}: bf16):
// CHECK: %[[XF:.+]] = arith.extf %[[X]] : bf16 to f32
// CHECK: %[[I:.+]] = arith.index_cast %{{.+}} : index to i64
// CHECK: %[[FIRST:.+]] = arith.cmpi slt, %[[I]], %c3_i64{{.*}} : i64
// CHECK: %[[TURNS:.+]] = arith.cmpi slt, %[[I]], %c6_i64{{.*}} : i64
// CHECK: %[[SHIFT:.+]] = arith.select %[[FIRST]], %c3_i64{{.*}}, %c-3_i64{{.*}} : i64
// CHECK: %[[MOVED:.+]] = arith.addi %[[I]], %[[SHIFT]]
// CHECK: %[[PI:.+]] = arith.select %[[TURNS]], %[[MOVED]], %[[I]]
// CHECK: %[[PIDX:.+]] = arith.index_cast %[[PI]] : i64 to index
// CHECK: %[[PART:.+]] = tensor.extract %{{.+}}[%{{.+}}, %[[PIDX]]] : tensor<5x10xbf16>
// CHECK: arith.extf %[[PART]] : bf16 to f32
// CHECK: math.exp2 %{{.+}} : f64
// CHECK: arith.cmpf ogt, %{{.+}}, %cst{{.*}} : f64
// CHECK: arith.select
// CHECK: arith.select
// CHECK: math.cos
// CHECK: math.sin
// CHECK: %[[R:.+]] = arith.select %[[TURNS]], %{{.+}}, %[[XF]] : f32
// CHECK: %[[B:.+]] = arith.truncf %[[R]] : f32 to bf16
// CHECK: linalg.yield %[[B]] : bf16
func.func @rope_partial_scaled(%x: tensor<5x10xbf16>) -> tensor<5x10xbf16> {
  %0 = fsdp.rope %x positions 0 theta 500.0 rotary_dim 6 llama3_scaling <factor = 4.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_positions = 64> : tensor<5x10xbf16>
  return %0 : tensor<5x10xbf16>
}

// The inverse rotation (the gradient) negates the partner's sign.
// CHECK-LABEL: func.func @rope_inverse
// CHECK: %[[S:.+]] = arith.subf %{{.+}}, %{{.+}} : f32
// CHECK: %[[NEG:.+]] = arith.subf %cst{{.*}}, %[[S]] : f32
// CHECK: arith.mulf %[[NEG]], %{{.+}} : f32
func.func @rope_inverse(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = fsdp.rope %x positions 0 theta 100.0 inverse : tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
