// RUN: fsdp-opt %s -convert-fsdp-to-linalg | FileCheck %s --enable-var-scope

// The angles' cosines and sines are tables of [positions, D/2], computed once at the
// function's start (the sines' first, as the rotation asks for the cosines first and
// each goes to the block's start): at position t (dimension 0) and frequency j
// (dimension 1), theta^(-2j/D) in f64 (exp2 of j times -2 log2(theta) / D), rounded to
// f32, times t. The rotation views the last dimension as its two halves, a feature's
// partner the same index of the other half (1 - h), and reads both tables at (position,
// frequency): dimensions 1 and 4.
// CHECK-DAG: #[[$TABLE:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-DAG: #[[$PARTNER:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, -d3 + 1, d4)>
// CHECK-DAG: #[[$ANGLE:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>
// CHECK-LABEL: func.func @rope
// CHECK: %[[SINES:.+]] = linalg.generic {indexing_maps = [#[[$TABLE]]], iterator_types = ["parallel", "parallel"]} outs(%{{.+}} : tensor<5x4xf32>)
// CHECK: %[[J:.+]] = linalg.index 1
// CHECK: %[[JI:.+]] = arith.index_cast %[[J]]
// CHECK: %[[JF:.+]] = arith.sitofp %[[JI]] : i64 to f64
// CHECK: %[[E:.+]] = arith.mulf %[[JF]], %{{.+}} : f64
// CHECK: %[[F:.+]] = math.exp2 %[[E]] : f64
// CHECK: %[[F32:.+]] = arith.truncf %[[F]] : f64 to f32
// CHECK: %[[POS:.+]] = linalg.index 0
// CHECK: %[[POSI:.+]] = arith.index_cast %[[POS]]
// CHECK: %[[POSF:.+]] = arith.sitofp %[[POSI]] : i64 to f32
// CHECK: %[[A:.+]] = arith.mulf %[[POSF]], %[[F32]] : f32
// CHECK: %[[SIN:.+]] = math.sin %[[A]] : f32
// CHECK: linalg.yield %[[SIN]]
// CHECK: %[[COSINES:.+]] = linalg.generic {indexing_maps = [#[[$TABLE]]], iterator_types = ["parallel", "parallel"]} outs(%{{.+}} : tensor<5x4xf32>)
// CHECK: math.exp2
// CHECK: %[[COS:.+]] = math.cos %{{.+}} : f32
// CHECK: linalg.yield %[[COS]]
// CHECK: %[[HALVES:.+]] = tensor.expand_shape %{{.+}} {{\[}}[0], [1], [2], [3, 4]] output_shape [2, 5, 3, 2, 4]
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$PARTNER]], #[[$ANGLE]], #[[$ANGLE]], #[[$ID]]]
// CHECK-SAME: ins(%[[HALVES]], %[[HALVES]], %[[COSINES]], %[[SINES]] :
// CHECK: ^bb0(%[[X:.+]]: f32, %[[P:.+]]: f32, %[[C:.+]]: f32, %[[S:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[HALF:.+]] = linalg.index 3
// CHECK-NOT: math.
// CHECK: %[[SP:.+]] = arith.mulf %{{.+}}, %[[P]] : f32
// CHECK: %[[SPS:.+]] = arith.mulf %[[SP]], %[[S]] : f32
// CHECK: %[[XC:.+]] = arith.mulf %[[X]], %[[C]] : f32
// CHECK: %[[Y:.+]] = arith.addf %[[XC]], %[[SPS]] : f32
// CHECK: linalg.yield %[[Y]] : f32
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0], [1], [2], [3, 4]] : tensor<2x5x3x2x4xf32> into tensor<2x5x3x8xf32>
// CHECK-NOT: fsdp.
func.func @rope(%x: tensor<2x5x3x8xf32>) -> tensor<2x5x3x8xf32> {
  %0 = fsdp.rope %x positions 1 theta 10000.0 : tensor<2x5x3x8xf32>
  return %0 : tensor<2x5x3x8xf32>
}

// 6 of 10 features turn: one generic over the whole result reads each feature's
// partner (i + 3 or i - 3) from the input and keeps features 6 to 9; the tables of 3
// frequencies carry Llama 3's scaling of the frequency in f64 between its bounds (64 / 4
// and 64 / 1), and the rotation gathers from them at (position, frequency), frequency 0
// for a feature that does not turn; bf16 widened once, rounded once.
// CHECK-LABEL: func.func @rope_partial_scaled
// CHECK: %[[SINES:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<5x3xf32>)
// CHECK: math.exp2 %{{.+}} : f64
// CHECK: arith.cmpf ogt, %{{.+}}, %cst{{.*}} : f64
// CHECK: arith.select
// CHECK: arith.select
// CHECK: math.sin
// CHECK: %[[COSINES:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<5x3xf32>)
// CHECK: math.cos
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
// CHECK: %[[FREQ:.+]] = arith.select %[[TURNS]], %{{.+}}, %c0_i64{{.*}} : i64
// CHECK: %[[FIDX:.+]] = arith.index_cast %[[FREQ]] : i64 to index
// CHECK: tensor.extract %[[COSINES]][%{{.+}}, %[[FIDX]]] : tensor<5x3xf32>
// CHECK: tensor.extract %[[SINES]][%{{.+}}, %[[FIDX]]] : tensor<5x3xf32>
// CHECK-NOT: math.
// CHECK: %[[R:.+]] = arith.select %[[TURNS]], %{{.+}}, %[[XF]] : f32
// CHECK: %[[B:.+]] = arith.truncf %[[R]] : f32 to bf16
// CHECK: linalg.yield %[[B]] : bf16
func.func @rope_partial_scaled(%x: tensor<5x10xbf16>) -> tensor<5x10xbf16> {
  %0 = fsdp.rope %x positions 0 theta 500.0 rotary_dim 6 llama3_scaling <factor = 4.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_positions = 64> : tensor<5x10xbf16>
  return %0 : tensor<5x10xbf16>
}

// YaRN: each frequency times g / 4 + 1 - g, with g its place on the ramp clamped to
// [0, 1] (for 8 features at base 10000 over a context of 16: low = max(0, floor(-1.10))
// = 0, high = ceil(0.41) = 1), then every cosine and sine times the attention factor 1.25.
// CHECK-LABEL: func.func @rope_yarn
// CHECK: linalg.generic {{.+}} outs(%{{.+}} : tensor<6x4xf32>)
// CHECK: math.exp2 %{{.+}} : f64
// CHECK: arith.maximumf %{{.+}}, %cst{{.*}} : f64
// CHECK: arith.minimumf %{{.+}}, %cst{{.*}} : f64
// CHECK: math.sin
// CHECK: %[[M:.+]] = arith.constant 1.250000e+00 : f32
// CHECK: arith.mulf %{{.+}}, %[[M]] : f32
// CHECK: math.cos
// CHECK: arith.constant 1.250000e+00 : f32
func.func @rope_yarn(%x: tensor<6x8xf32>) -> tensor<6x8xf32> {
  %0 = fsdp.rope %x positions 0 theta 10000.0 yarn_scaling <factor = 4.0, beta_fast = 32.0, beta_slow = 1.0, original_max_positions = 16, attention_factor = 1.25, truncate = true> : tensor<6x8xf32>
  return %0 : tensor<6x8xf32>
}

// Linear scaling: every frequency divided by the factor before it is rounded to f32;
// the scaled rotation reads tables of its own beside the unscaled one's.
// CHECK-LABEL: func.func @rope_linear
// CHECK: math.exp2 %{{.+}} : f64
// CHECK-NEXT: arith.truncf
// CHECK: math.exp2 %{{.+}} : f64
// CHECK-NEXT: arith.truncf
// CHECK: %[[F:.+]] = math.exp2 %{{.+}} : f64
// CHECK-NEXT: %[[EIGHT:.+]] = arith.constant 8.000000e+00 : f64
// CHECK-NEXT: %[[D:.+]] = arith.divf %[[F]], %[[EIGHT]] : f64
// CHECK-NEXT: arith.truncf %[[D]] : f64 to f32
// CHECK: math.exp2
// CHECK-NEXT: arith.constant 8.000000e+00 : f64
// CHECK-NEXT: arith.divf
// CHECK-NOT: math.exp2
// CHECK: return
func.func @rope_linear(%x: tensor<6x8xf32>) -> (tensor<6x8xf32>, tensor<6x8xf32>) {
  %0 = fsdp.rope %x positions 0 theta 10000.0 linear_scaling 8.0 : tensor<6x8xf32>
  %1 = fsdp.rope %x positions 0 theta 10000.0 : tensor<6x8xf32>
  return %0, %1 : tensor<6x8xf32>, tensor<6x8xf32>
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

// q and k of a block, and the gradient's inverse rotation, read the same two tables; a
// rotation with another base gets its own.
// CHECK-LABEL: func.func @rope_shared
// CHECK-COUNT-2: math.exp2
// CHECK-NOT: math.exp2
// CHECK: return
// CHECK-LABEL: func.func @rope_other_base
// CHECK-COUNT-4: math.exp2
// CHECK-NOT: math.exp2
// CHECK: return
func.func @rope_shared(%q: tensor<2x5x4x8xf32>, %k: tensor<2x5x2x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x4x8xf32>) {
  %0 = fsdp.rope %q positions 1 theta 10000.0 : tensor<2x5x4x8xf32>
  %1 = fsdp.rope %k positions 1 theta 10000.0 : tensor<2x5x2x8xf32>
  %2 = fsdp.rope %0 positions 1 theta 10000.0 inverse : tensor<2x5x4x8xf32>
  return %0, %1, %2 : tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x4x8xf32>
}
func.func @rope_other_base(%q: tensor<2x5x4x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>) {
  %0 = fsdp.rope %q positions 1 theta 10000.0 : tensor<2x5x4x8xf32>
  %1 = fsdp.rope %q positions 1 theta 500.0 : tensor<2x5x4x8xf32>
  return %0, %1 : tensor<2x5x4x8xf32>, tensor<2x5x4x8xf32>
}
