// RUN: fsdp-opt %s -convert-fsdp-to-linalg | FileCheck %s

// Broadcasting reads the smaller operand through a map that drops the missing
// leading dimension.
// CHECK-DAG: #[[$ID2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$LAST:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[$MK:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$NK:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$MN:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$BKM:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>
// CHECK-DAG: #[[$BKN:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[$BMN:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @add_broadcast
// CHECK: linalg.generic {indexing_maps = [#[[$ID2]], #[[$LAST]], #[[$ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK: arith.addf
// CHECK-NOT: fsdp.
func.func @add_broadcast(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = fsdp.add %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Leading dimensions merge into M; a transposed operand is an indexing map of a
// named linalg.matmul, which fsdp-lower-gemms can give to BLAS.
// CHECK-LABEL: func.func @matmul_rank3
// CHECK: %[[X:.+]] = tensor.collapse_shape %{{.+}} {{\[}}[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
// CHECK: %[[ZERO:.+]] = linalg.fill
// CHECK: %[[MM:.+]] = linalg.matmul indexing_maps = [#[[$MK]], #[[$NK]], #[[$MN]]] ins(%[[X]], %{{.+}} : tensor<8x8xf32>, tensor<16x8xf32>) outs(%[[ZERO]] : tensor<8x16xf32>)
// CHECK: tensor.expand_shape %[[MM]] {{\[}}[0, 1], [2]] output_shape [2, 4, 16]
func.func @matmul_rank3(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>) -> tensor<2x4x16xf32> {
  %0 = fsdp.matmul %x, %w transpose_rhs : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// A transposed lhs with leading dimensions cannot merge: an explicit contraction.
// CHECK-LABEL: func.func @matmul_transposed_rank3
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @matmul_transposed_rank3(%x: tensor<2x8x4xf32>, %w: tensor<8x16xf32>) -> tensor<2x4x16xf32> {
  %0 = fsdp.matmul %x, %w transpose_lhs : tensor<2x8x4xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// Batch dimensions merge into one.
// CHECK-LABEL: func.func @batch_matmul
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0, 1], [2], [3]] : tensor<2x3x4x5xf32> into tensor<6x4x5xf32>
// CHECK: linalg.batch_matmul indexing_maps = [#[[$BKM]], #[[$BKN]], #[[$BMN]]]
// CHECK: tensor.expand_shape {{.+}} output_shape [2, 3, 5, 5]
func.func @batch_matmul(%q: tensor<2x3x4x5xf32>, %k: tensor<2x3x4x5xf32>) -> tensor<2x3x5x5xf32> {
  %0 = fsdp.batch_matmul %q, %k transpose_lhs : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32> -> tensor<2x3x5x5xf32>
  return %0 : tensor<2x3x5x5xf32>
}

// CHECK-LABEL: func.func @relu_grad
// CHECK: %[[POS:.+]] = arith.cmpf ogt, %[[X:.+]], %[[ZERO:.+]] : f32
// CHECK: arith.select %[[POS]], %{{.+}}, %[[ZERO]] : f32
func.func @relu_grad(%x: tensor<4xf32>, %dy: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fsdp.relu_grad %x, %dy : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Softmax: a max reduction, exp(x - max), a sum, a division.
// CHECK-LABEL: func.func @softmax
// CHECK: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: %[[MAX:.+]] = linalg.generic {indexing_maps = [#[[$ID2]], #[[$ROW]]], iterator_types = ["parallel", "reduction"]}
// CHECK: arith.maximumf
// CHECK: %[[EXP:.+]] = linalg.generic {{.+}} ins(%{{.+}}, %[[MAX]] :
// CHECK: math.exp
// CHECK: %[[SUM:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]} ins(%[[EXP]]
// CHECK: linalg.generic {{.+}} ins(%[[EXP]], %[[SUM]] :
// CHECK: arith.divf
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = fsdp.softmax %x dim 1 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Cross-entropy picks each position's target logit by index and averages.
// CHECK-LABEL: func.func @cross_entropy
// CHECK: %[[Z:.+]] = tensor.collapse_shape %{{.+}} {{\[}}[0, 1], [2]] : tensor<2x3x10xf32> into tensor<6x10xf32>
// CHECK: %[[ROWIDX:.+]] = linalg.index 0 : index
// CHECK: %[[TARGET:.+]] = arith.index_cast %{{.+}} : i32 to index
// CHECK: tensor.extract %[[Z]][%[[ROWIDX]], %[[TARGET]]] : tensor<6x10xf32>
// CHECK: math.log
// CHECK: arith.constant 0.166666672 : f32
func.func @cross_entropy(%z: tensor<2x3x10xf32>, %t: tensor<2x3xi32>) -> tensor<f32> {
  %0 = fsdp.cross_entropy %z, %t : tensor<2x3x10xf32>, tensor<2x3xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[TABLE:.+]]: tensor<16x4xf32>, %[[IDS:.+]]: tensor<2x3xi64>)
// CHECK: linalg.generic {{.+}} ins(%[[IDS]] : tensor<2x3xi64>)
// CHECK: %[[COL:.+]] = linalg.index 2 : index
// CHECK: %[[ROWI:.+]] = arith.index_cast %{{.+}} : i64 to index
// CHECK: tensor.extract %[[TABLE]][%[[ROWI]], %[[COL]]] : tensor<16x4xf32>
func.func @embedding(%table: tensor<16x4xf32>, %ids: tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  %0 = fsdp.embedding %table[%ids] : tensor<16x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// The table gradient is a scatter-add over positions and features.
// CHECK-LABEL: func.func @embedding_grad
// CHECK: %[[ZEROS:.+]] = linalg.fill {{.+}} -> tensor<16x4xf32>
// CHECK: scf.for %[[N:.+]] = {{.+}} iter_args(%[[ACC:.+]] = %[[ZEROS]]) -> (tensor<16x4xf32>)
// CHECK: scf.for {{.+}} iter_args(%[[T:.+]] = %[[ACC]])
// CHECK: %[[OLD:.+]] = tensor.extract %[[T]]
// CHECK: %[[NEW:.+]] = arith.addf %[[OLD]]
// CHECK: tensor.insert %[[NEW]] into %[[T]]
func.func @embedding_grad(%ids: tensor<2x3xi32>, %d: tensor<2x3x4xf32>) -> tensor<16x4xf32> {
  %0 = fsdp.embedding_grad %ids, %d : tensor<2x3xi32>, tensor<2x3x4xf32> -> tensor<16x4xf32>
  return %0 : tensor<16x4xf32>
}

// Reshapes go through the flat vector (views after bufferization).
// CHECK-LABEL: func.func @reshape_transpose
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape %{{.+}} {{\[}}[0, 1]] : tensor<2x12xf32> into tensor<24xf32>
// CHECK: %[[R:.+]] = tensor.expand_shape %[[FLAT]] {{\[}}[0, 1, 2]] output_shape [2, 3, 4]
// CHECK: linalg.transpose ins(%[[R]] : tensor<2x3x4xf32>) outs(%{{.+}} : tensor<3x2x4xf32>) permutation = [1, 0, 2]
func.func @reshape_transpose(%x: tensor<2x12xf32>) -> tensor<3x2x4xf32> {
  %0 = fsdp.reshape %x : tensor<2x12xf32> -> tensor<2x3x4xf32>
  %1 = fsdp.transpose %0 [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  return %1 : tensor<3x2x4xf32>
}

// The mean divides the sum over the 2 x 4 reduced elements.
// CHECK-LABEL: func.func @reduce_mean
// CHECK: linalg.generic {{.+}} iterator_types = ["reduction", "parallel", "reduction"]
// CHECK: arith.constant 1.250000e-01 : f32
func.func @reduce_mean(%x: tensor<2x3x4xf32>) -> tensor<3xf32> {
  %0 = fsdp.reduce_mean %x dims [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// Norm gradients recompute the statistics and reduce dgamma over the leading dims.
// CHECK-LABEL: func.func @layer_norm_grad
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: math.sqrt
// CHECK: iterator_types = ["reduction", "parallel"]
func.func @layer_norm_grad(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %dy: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %dg, %db = fsdp.layer_norm_grad %x, %g, %dy : tensor<4x8xf32>, tensor<8xf32>
  return %dx, %dg, %db : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// A norm's gradient computes xhat = x * rstd and dxhat = dy * gamma where it
// reads them (the dot of the two, dx, dgamma): no f32 tensor of the
// activations' shape is stored.
// CHECK-LABEL: func.func @rms_norm_grad_bf16
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xbf16>, %[[G:.+]]: tensor<8xbf16>, %[[DY:.+]]: tensor<4x8xbf16>)
// CHECK-NOT: tensor<4x8xf32>
// CHECK: %[[SQUARES:.+]] = linalg.generic {{.+}} ins(%[[X]] : tensor<4x8xbf16>)
// CHECK-NOT: tensor<4x8xf32>
// CHECK: %[[RSTD:.+]] = linalg.generic {{.+}} ins(%[[SQUARES]] : tensor<4xf32>)
// CHECK-NOT: tensor<4x8xf32>
// CHECK: %[[DOT:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]} ins(%[[DY]], %[[G]], %[[X]], %[[RSTD]] :
// CHECK-NOT: tensor<4x8xf32>
// CHECK: %[[DX:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel"]} ins(%[[DY]], %[[G]], %[[X]], %[[RSTD]], %[[DOT]] :
// CHECK-NOT: tensor<4x8xf32>
// CHECK: linalg.generic {{.+}} iterator_types = ["reduction", "parallel"]} ins(%[[DY]], %[[X]], %[[RSTD]] :
// CHECK-NOT: tensor<4x8xf32>
// CHECK: return %[[DX]]
func.func @rms_norm_grad_bf16(%x: tensor<4x8xbf16>, %g: tensor<8xbf16>, %dy: tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<8xbf16>) {
  %dx, %dg = fsdp.rms_norm_grad %x, %g, %dy : tensor<4x8xbf16>, tensor<8xbf16>
  return %dx, %dg : tensor<4x8xbf16>, tensor<8xbf16>
}

// Clipping: min(1, max_norm / (sqrt(sum of squares) + 1e-6)).
// CHECK-LABEL: func.func @clip_coefficient
// CHECK: arith.constant 9.99999997E-7 : f32
// CHECK: math.sqrt
// CHECK: arith.constant 5.000000e-01 : f32
// CHECK: arith.divf
// CHECK: arith.minimumf
func.func @clip_coefficient(%s: tensor<f32>) -> tensor<f32> {
  %0 = fsdp.clip_coefficient %s max_norm 0.5 : tensor<f32>
  return %0 : tensor<f32>
}

// bf16 (docs/MixedPrecision.md, section 2): a body computes in f32 from its
// widened bf16 elements and rounds its result once.
// CHECK-LABEL: func.func @bf16_add
// CHECK: ^bb0(%[[A:.+]]: bf16, %[[B:.+]]: bf16, %{{.+}}: bf16):
// CHECK-NEXT: %[[AW:.+]] = arith.extf %[[A]] : bf16 to f32
// CHECK-NEXT: %[[BW:.+]] = arith.extf %[[B]] : bf16 to f32
// CHECK: %[[S:.+]] = arith.addf %[[AW]], %[[BW]] : f32
// CHECK-NEXT: %[[R:.+]] = arith.truncf %[[S]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[R]] : bf16
func.func @bf16_add(%x: tensor<4x8xbf16>, %b: tensor<8xbf16>) -> tensor<4x8xbf16> {
  %0 = fsdp.add %x, %b : tensor<4x8xbf16>, tensor<8xbf16> -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// Reductions accumulate in f32; the sum is rounded once, after.
// CHECK-LABEL: func.func @bf16_reduce_sum
// CHECK: %[[SUM:.+]] = linalg.generic {{.+}} ins(%{{.+}} : tensor<4x8xbf16>) outs(%{{.+}} : tensor<8xf32>)
// CHECK: linalg.generic {{.+}} ins(%[[SUM]] : tensor<8xf32>) outs(%{{.+}} : tensor<8xbf16>)
// CHECK: arith.truncf %{{.+}} : f32 to bf16
func.func @bf16_reduce_sum(%x: tensor<4x8xbf16>) -> tensor<8xbf16> {
  %0 = fsdp.reduce_sum %x dims [0] : tensor<4x8xbf16> -> tensor<8xbf16>
  return %0 : tensor<8xbf16>
}

// softmax: maximum, exponentials and their sum stay f32; only the result is
// bf16.
// CHECK-LABEL: func.func @bf16_softmax
// CHECK: %[[MAX:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<4xf32>)
// CHECK: %[[EXPS:.+]] = linalg.generic {{.+}} ins(%{{.+}}, %[[MAX]] : tensor<4x8xbf16>, tensor<4xf32>) outs(%{{.+}} : tensor<4x8xf32>)
// CHECK: %[[SUM:.+]] = linalg.generic {{.+}} ins(%[[EXPS]] : tensor<4x8xf32>) outs(%{{.+}} : tensor<4xf32>)
// CHECK: linalg.generic {{.+}} ins(%[[EXPS]], %[[SUM]] : tensor<4x8xf32>, tensor<4xf32>) outs(%{{.+}} : tensor<4x8xbf16>)
// CHECK: arith.divf
// CHECK-NEXT: arith.truncf %{{.+}} : f32 to bf16
func.func @bf16_softmax(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %0 = fsdp.softmax %x dim 1 : tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// convert rounds f32 to bf16.
// CHECK-LABEL: func.func @bf16_convert
// CHECK: ^bb0(%[[IN:.+]]: f32, %{{.+}}: bf16):
// CHECK: %[[R:.+]] = arith.truncf %[[IN]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[R]] : bf16
func.func @bf16_convert(%x: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  %0 = fsdp.convert %x : tensor<4x8xf32> -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// A bf16 product is a bf16 linalg.matmul, which fsdp-lower-gemms turns into
// the runtime's f32-accumulating bf16 GEMM.
// CHECK-LABEL: func.func @bf16_matmul
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x8xbf16>, tensor<8x2xbf16>) outs(%{{.+}} : tensor<4x2xbf16>)
func.func @bf16_matmul(%x: tensor<4x8xbf16>, %w: tensor<8x2xbf16>) -> tensor<4x2xbf16> {
  %0 = fsdp.matmul %x, %w : tensor<4x8xbf16>, tensor<8x2xbf16> -> tensor<4x2xbf16>
  return %0 : tensor<4x2xbf16>
}

// The loss of bf16 logits is f32 throughout: the picked logit is widened.
// CHECK-LABEL: func.func @bf16_cross_entropy
// CHECK: %[[PICKED:.+]] = tensor.extract %{{.+}} : tensor<4x8xbf16>
// CHECK-NEXT: %[[PW:.+]] = arith.extf %[[PICKED]] : bf16 to f32
// CHECK: arith.subf %{{.+}}, %[[PW]] : f32
// CHECK-NOT: truncf
// CHECK: return %{{.+}} : tensor<f32>
func.func @bf16_cross_entropy(%z: tensor<4x8xbf16>, %y: tensor<4xi32>) -> tensor<f32> {
  %0 = fsdp.cross_entropy %z, %y : tensor<4x8xbf16>, tensor<4xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// fsdp.attention, grouped-query (4 query heads on 2 key heads: [1, 4, 8, 3] viewed as
// [2, 16, 3], no copy), 6 keys in blocks of 4: scores exist for one block at a time
// ([2, 16, 4], then [2, 16, 2]), never for all 6 keys. The running maximum, sum and
// output start at -infinity, 0 and 0; each block's maximum continues from a copy of the
// running one (the rescale reads the old one), the sum and the output are rescaled in
// place, the block's product with the values adds to the rescaled output (the GEMM's
// accumulation), and the new maximum is copied over the old.
// CHECK-LABEL: func.func @attention(
// CHECK: %[[Q:.+]] = tensor.collapse_shape %{{.+}} {{\[}}[0, 1], [2, 3], [4]] : tensor<1x2x2x8x3xf32> into tensor<2x16x3xf32>
// CHECK: %[[K:.+]] = tensor.collapse_shape %arg1 {{\[}}[0, 1], [2], [3]] : tensor<1x2x6x3xf32> into tensor<2x6x3xf32>
// CHECK: %[[M:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2x16xf32>)
// CHECK: %[[K0:.+]] = tensor.extract_slice %[[K]][0, 0, 0] [2, 4, 3] [1, 1, 1]
// CHECK: linalg.batch_matmul {{.*}}ins(%[[Q]], %[[K0]] : tensor<2x16x3xf32>, tensor<2x4x3xf32>) outs(%{{.+}} : tensor<2x16x4xf32>)
// CHECK: %[[M0COPY:.+]] = linalg.copy ins(%[[M]] : tensor<2x16xf32>)
// CHECK: %[[M0:.+]] = linalg.generic {{.*}}outs(%[[M0COPY]] : tensor<2x16xf32>)
// CHECK: %[[M1:.+]] = linalg.copy ins(%[[M0]] : tensor<2x16xf32>) outs(%[[M]] : tensor<2x16xf32>)
// CHECK: %[[K1:.+]] = tensor.extract_slice %[[K]][0, 4, 0] [2, 2, 3] [1, 1, 1]
// CHECK: linalg.batch_matmul {{.*}}ins(%[[Q]], %[[K1]] : tensor<2x16x3xf32>, tensor<2x2x3xf32>) outs(%{{.+}} : tensor<2x16x2xf32>)
// CHECK: linalg.copy ins(%[[M1]] : tensor<2x16xf32>)
// CHECK: %[[RESCALED:.+]] = linalg.generic {{.*}}outs(%{{.+}} : tensor<2x16x3xf32>)
// CHECK: linalg.batch_matmul {{.*}}outs(%[[RESCALED]] : tensor<2x16x3xf32>)
// CHECK-NOT: 2x16x6xf32
// CHECK: return
func.func @attention(%q: tensor<1x4x8x3xf32>, %k: tensor<1x2x6x3xf32>) -> tensor<1x4x8x3xf32> {
  %o, %lse = fsdp.attention %q, %k, %k key_block 4 : tensor<1x4x8x3xf32>, tensor<1x2x6x3xf32>, tensor<1x2x6x3xf32> -> tensor<1x4x8x3xf32>, tensor<1x4x8xf32>
  return %o : tensor<1x4x8x3xf32>
}

// Two full blocks of 4 keys and a last one of 2: the full blocks are one scf.for
// whose body is written once (the key block at the loop's offset), carrying the
// running maximum, sum and output, each yielded from the op that updated it in place;
// the last block follows the loop.
// CHECK-LABEL: func.func @attention_loop(
// CHECK: %[[K:.+]] = tensor.collapse_shape %arg1 {{\[}}[0, 1], [2], [3]] : tensor<1x2x10x3xf32> into tensor<2x10x3xf32>
// CHECK: %[[C0:.+]] = arith.constant 0 : index
// CHECK: %[[C8:.+]] = arith.constant 8 : index
// CHECK: %[[C4:.+]] = arith.constant 4 : index
// CHECK: %{{.+}}:3 = scf.for %[[FIRST:.+]] = %[[C0]] to %[[C8]] step %[[C4]] iter_args(%[[M:.+]] = %{{.+}}, %[[L:.+]] = %{{.+}}, %[[ACC:.+]] = %{{.+}}) -> (tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16x3xf32>)
// CHECK: tensor.extract_slice %[[K]][0, %[[FIRST]], 0] [2, 4, 3] [1, 1, 1] : tensor<2x10x3xf32> to tensor<2x4x3xf32>
// CHECK: %[[LSCALED:.+]] = linalg.generic {{.*}}outs(%[[L]] : tensor<2x16xf32>)
// CHECK: %[[NEWL:.+]] = linalg.generic {{.*}}outs(%[[LSCALED]] : tensor<2x16xf32>)
// CHECK: %[[RESCALED:.+]] = linalg.generic {{.*}}outs(%[[ACC]] : tensor<2x16x3xf32>)
// CHECK: %[[NEWACC:.+]] = linalg.batch_matmul {{.*}}outs(%[[RESCALED]] : tensor<2x16x3xf32>)
// CHECK: %[[NEWM:.+]] = linalg.copy ins(%{{.+}} : tensor<2x16xf32>) outs(%[[M]] : tensor<2x16xf32>)
// CHECK: scf.yield %[[NEWM]], %[[NEWL]], %[[NEWACC]]
// CHECK: tensor.extract_slice %[[K]][0, 8, 0] [2, 2, 3] [1, 1, 1]
// CHECK-NOT: scf.for
// CHECK: return
func.func @attention_loop(%q: tensor<1x4x8x3xf32>, %k: tensor<1x2x10x3xf32>) -> tensor<1x4x8x3xf32> {
  %o, %lse = fsdp.attention %q, %k, %k key_block 4 : tensor<1x4x8x3xf32>, tensor<1x2x10x3xf32>, tensor<1x2x10x3xf32> -> tensor<1x4x8x3xf32>, tensor<1x4x8xf32>
  return %o : tensor<1x4x8x3xf32>
}

// A sliding window of 4 over 20 positions in blocks of 8: the queries are taken a block
// at a time too (two full blocks in a loop, a last one of 4), each block's rows copied
// together ([2, 2, 8, 3] -> [2, 16, 3]), against only the 4 + 8 - 1 = 11 keys its window
// reaches, from max(0, first + 8 - 11) (the last block: 7 keys from 13). Scores exist
// for 8 keys of a block at a time ([2, 16, 8], then the window's last 3), never for all
// 20; a score is hidden after its query or 4 or more positions before it.
// CHECK-LABEL: func.func @attention_window(
// CHECK-DAG: %[[K:.+]] = tensor.collapse_shape %arg1 {{\[}}[0, 1], [2], [3]] : tensor<1x2x20x3xf32> into tensor<2x20x3xf32>
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
// CHECK: scf.for %[[FIRST:.+]] = %{{.+}} to %[[C16]] step %[[C8]] iter_args({{.+}}) -> (tensor<2x2x20x3xf32>, tensor<2x2x20xf32>)
// CHECK: %[[BACK:.+]] = arith.addi %[[FIRST]], %{{.+}} : index
// CHECK: %[[START:.+]] = arith.maxsi %[[BACK]], %{{.+}} : index
// CHECK: tensor.extract_slice %[[K]][0, %[[START]], 0] [2, 11, 3] [1, 1, 1] : tensor<2x20x3xf32> to tensor<2x11x3xf32>
// CHECK: %[[ROWS:.+]] = linalg.copy ins(%{{.+}} : tensor<2x2x8x3xf32>)
// CHECK: %[[Q:.+]] = tensor.collapse_shape %[[ROWS]] {{\[}}[0], [1, 2], [3]] : tensor<2x2x8x3xf32> into tensor<2x16x3xf32>
// CHECK: linalg.batch_matmul {{.*}}ins(%[[Q]], %{{.+}} : tensor<2x16x3xf32>, tensor<2x8x3xf32>) outs(%{{.+}} : tensor<2x16x8xf32>)
// CHECK: arith.remsi
// CHECK: arith.ori
// CHECK: linalg.batch_matmul {{.*}}ins(%[[Q]], %{{.+}} : tensor<2x16x3xf32>, tensor<2x3x3xf32>) outs(%{{.+}} : tensor<2x16x3xf32>)
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, %[[FIRST]], 0] [2, 2, 8, 3] [1, 1, 1, 1]
// CHECK: scf.yield
// CHECK: tensor.extract_slice %[[K]][0, 13, 0] [2, 7, 3] [1, 1, 1] : tensor<2x20x3xf32> to tensor<2x7x3xf32>
// CHECK-NOT: tensor<2x16x20xf32>
// CHECK-NOT: tensor<2x16x11xf32>
// CHECK: return
func.func @attention_window(%q: tensor<1x4x20x3xf32>, %k: tensor<1x2x20x3xf32>) -> tensor<1x4x20x3xf32> {
  %o, %lse = fsdp.attention %q, %k, %k causal window 4 key_block 8 : tensor<1x4x20x3xf32>, tensor<1x2x20x3xf32>, tensor<1x2x20x3xf32> -> tensor<1x4x20x3xf32>, tensor<1x4x20xf32>
  return %o : tensor<1x4x20x3xf32>
}

// Soft-capped scores: each block's scaled score s becomes 50 tanh(s / 50) before the
// mask; the gradient recomputes the capped scores and multiplies the scores' gradient by
// the cap's derivative 1 - (c / 50)^2, floored at 0 (a hidden score is -infinity).
// CHECK-LABEL: func.func @attention_softcap(
// CHECK: linalg.batch_matmul
// CHECK: linalg.generic
// CHECK: %[[SCALED:.+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK: %[[IN:.+]] = arith.divf %[[SCALED]], %{{.+}} : f32
// CHECK: %[[TANH:.+]] = math.tanh %[[IN]] : f32
// CHECK: %[[CAPPED:.+]] = arith.mulf %[[TANH]], %{{.+}} : f32
// CHECK: arith.select %{{.+}}, %{{.+}}, %[[CAPPED]] : f32
// CHECK: linalg.batch_matmul {{.*}}{fsdp.recomputed}
// CHECK: math.tanh
// CHECK: %[[SQUARE:.+]] = arith.mulf %[[RATIO:.+]], %[[RATIO]] : f32
// CHECK-NEXT: arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[SLOPE:.+]] = arith.subf %{{.+}}, %[[SQUARE]] : f32
// CHECK-NEXT: %[[CAPPED:.+]] = arith.maximumf %[[SLOPE]], %{{.+}} : f32
// CHECK-NEXT: arith.mulf %{{.+}}, %[[CAPPED]] : f32
// CHECK: return
func.func @attention_softcap(%q: tensor<1x2x8x4xf32>, %do: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %o, %lse = fsdp.attention %q, %q, %q causal softcap 50.0 key_block 8 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  %zero = arith.constant dense<0.0> : tensor<1x2x8xf32>
  %dq, %dk, %dv = fsdp.attention_grad %q, %q, %q, %o, %lse, %do, %zero causal softcap 50.0 key_block 8 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>
  return %dq : tensor<1x2x8x4xf32>
}
