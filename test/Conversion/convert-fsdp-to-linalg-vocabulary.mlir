// RUN: fsdp-opt %s -convert-fsdp-to-linalg | FileCheck %s

// A tensor rank's indices into its block of 8 rows: index - first inside it, 8 (the
// zero row past the block) outside, back in the indices' type.
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$FIRST:.+]] = affine_map<(d0, d1) -> (0)>
// CHECK-DAG: #[[$MAX:.+]] = affine_map<(d0, d1) -> (d0, 0, d1)>
// CHECK-DAG: #[[$SUM:.+]] = affine_map<(d0, d1) -> (d0, 1, d1)>
// CHECK-DAG: #[[$PICKED:.+]] = affine_map<(d0, d1) -> (d0, 2, d1)>
// CHECK-LABEL: func.func @block_indices
// CHECK:       linalg.generic {indexing_maps = [#[[$ID]], #[[$FIRST]], #[[$ID]]]
// CHECK:         %[[ID:.+]] = arith.extsi %{{.+}} : i32 to i64
// CHECK:         %[[LOCAL:.+]] = arith.subi %[[ID]], %{{.+}} : i64
// CHECK-DAG:     %[[BELOW:.+]] = arith.cmpi slt, %[[LOCAL]], %[[SIZE:.+]] : i64
// CHECK-DAG:     %[[ABOVE:.+]] = arith.cmpi sge, %[[LOCAL]], %{{.+}} : i64
// CHECK:         %[[INSIDE:.+]] = arith.andi %[[ABOVE]], %[[BELOW]] : i1
// CHECK:         %[[INDEX:.+]] = arith.select %[[INSIDE]], %[[LOCAL]], %{{.+}} : i64
// CHECK:         arith.trunci %[[INDEX]] : i64 to i32
func.func @block_indices(%ids: tensor<2x3xi32>, %first: tensor<1xi64>) -> tensor<2x3xi32> {
  %0 = fsdp.block_indices %ids, %first size 8 : tensor<2x3xi32>, tensor<1xi64> -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// The loss from 2 blocks' statistics at 6 positions, each reduction over the blocks
// reading statistic k of block t at position n: the maxima (0), the sums (1) scaled by
// exp(m_t - M), the log-sum-exp M + log(S), the target logits (2) summed, their
// difference's mean.
// CHECK-LABEL: func.func @combine
// CHECK:       %[[M:.+]] = linalg.generic {indexing_maps = [#[[$MAX]], #{{.+}}], iterator_types = ["reduction", "parallel"]}
// CHECK:         arith.maximumf
// CHECK:       %[[S:.+]] = linalg.generic {indexing_maps = [#[[$SUM]], #[[$MAX]], #{{.+}}, #{{.+}}], iterator_types = ["reduction", "parallel"]} ins(%{{.+}}, %{{.+}}, %[[M]] :
// CHECK:         math.exp
// CHECK:       linalg.generic {{.*}} ins(%[[M]], %[[S]] :
// CHECK:         math.log
// CHECK:       linalg.generic {indexing_maps = [#[[$PICKED]], #{{.+}}], iterator_types = ["reduction", "parallel"]}
// CHECK:         arith.addf
// CHECK:       arith.subf
// CHECK:       arith.constant 0.16666
func.func @combine(%s: tensor<2x3x6xf32>) -> tensor<f32> {
  %0 = fsdp.cross_entropy_combine %s : tensor<2x3x6xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
