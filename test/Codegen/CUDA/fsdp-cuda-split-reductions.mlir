// RUN: fsdp-opt %s -split-input-file --fsdp-cuda-split-reductions | FileCheck %s
// RUN: fsdp-opt %s -split-input-file --fsdp-cuda-split-reductions="min-elements=1000 chunk-elements=100" | FileCheck %s --check-prefix=SMALL

// A sum of 65536 elements: 16 chunks of 4096 (at least 4096 elements each;
// SMALL, at least 100: 512 of 128, the largest divisor up to 655),
// each summed into a partial from the combiner's neutral element, then the
// partials summed into the original output.
#id = affine_map<(d0) -> (d0)>
#sc = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @sum_of_squares
// CHECK-SAME:    (%[[G:.+]]: tensor<65536xf32>, %[[INIT:.+]]: tensor<f32>)
// CHECK:       %[[CHUNKS:.+]] = tensor.expand_shape %[[G]] {{\[\[}}0, 1]] output_shape [16, 4096] : tensor<65536xf32> into tensor<16x4096xf32>
// CHECK:       %[[EMPTY:.+]] = tensor.empty() : tensor<16xf32>
// CHECK:       %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK:       %[[ZEROS:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<16xf32>)
// CHECK:       %[[PARTIAL:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]} ins(%[[CHUNKS]] : tensor<16x4096xf32>) outs(%[[ZEROS]] : tensor<16xf32>)
// CHECK:         arith.mulf
// CHECK:         arith.addf
// CHECK:       %[[SUM:.+]] = linalg.generic {{.+}} iterator_types = ["reduction"]} ins(%[[PARTIAL]] : tensor<16xf32>) outs(%[[INIT]] : tensor<f32>)
// CHECK:       return %[[SUM]]
// SMALL-LABEL: func.func @sum_of_squares
// SMALL:       tensor.expand_shape %{{.+}} {{\[\[}}0, 1]] output_shape [512, 128]
func.func @sum_of_squares(%g: tensor<65536xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [#id, #sc], iterator_types = ["reduction"]}
      ins(%g : tensor<65536xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %sq = arith.mulf %in, %in : f32
    %s = arith.addf %out, %sq : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// 65537 is prime: no chunking; 1000 elements are fewer than 65536 (with the smaller options,
// 10 chunks of 100); a combiner without a neutral element stays whole.
#id = affine_map<(d0) -> (d0)>
#sc = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @whole
// CHECK-NOT:   tensor.expand_shape
// CHECK:       return
// SMALL-LABEL: func.func @whole
// SMALL:       tensor.expand_shape %{{.+}} {{\[\[}}0, 1]] output_shape [10, 100] : tensor<1000xf32>
// SMALL-NOT:   tensor.expand_shape
// SMALL:       return
func.func @whole(%p: tensor<65537xf32>, %s: tensor<1000xf32>, %init: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>) {
  %a = linalg.generic {indexing_maps = [#id, #sc], iterator_types = ["reduction"]}
      ins(%p : tensor<65537xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %x = arith.addf %out, %in : f32
    linalg.yield %x : f32
  } -> tensor<f32>
  %b = linalg.generic {indexing_maps = [#id, #sc], iterator_types = ["reduction"]}
      ins(%s : tensor<1000xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %x = arith.addf %out, %in : f32
    linalg.yield %x : f32
  } -> tensor<f32>
  %c = linalg.generic {indexing_maps = [#id, #sc], iterator_types = ["reduction"]}
      ins(%s : tensor<1000xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %x = arith.subf %out, %in : f32
    linalg.yield %x : f32
  } -> tensor<f32>
  return %a, %b, %c : tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// A norm's gain gradient over [8, 2048, 2048]: 16,384 rows per column. The
// two reduction loops become one loop over the rows (the operands viewed as
// rows), split into 64 chunks of 256 rows (the fewest chunks of at most 256
// rows: 64 x 2,048 = 131,072 threads), each chunk summed per column from
// zero, then the 64 chunks of each column in order into the output.
#x3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#r3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#c3 = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @gain_gradient
// CHECK-SAME:    (%[[DY:.+]]: tensor<8x2048x2048xbf16>, %[[R:.+]]: tensor<8x2048xf32>, %[[INIT:.+]]: tensor<2048xf32>)
// CHECK-DAG:   %[[DYROWS:.+]] = tensor.collapse_shape %[[DY]] {{\[\[}}0, 1], [2]] : tensor<8x2048x2048xbf16> into tensor<16384x2048xbf16>
// CHECK-DAG:   %[[RROWS:.+]] = tensor.collapse_shape %[[R]] {{\[\[}}0, 1]] : tensor<8x2048xf32> into tensor<16384xf32>
// CHECK-DAG:   %[[DYCHUNKS:.+]] = tensor.expand_shape %[[DYROWS]] {{\[\[}}0, 1], [2]] output_shape [64, 256, 2048]
// CHECK-DAG:   %[[RCHUNKS:.+]] = tensor.expand_shape %[[RROWS]] {{\[\[}}0, 1]] output_shape [64, 256]
// CHECK:       %[[ZEROS:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<64x2048xf32>)
// CHECK:       %[[PARTIAL:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[DYCHUNKS]], %[[RCHUNKS]] : tensor<64x256x2048xbf16>, tensor<64x256xf32>) outs(%[[ZEROS]] : tensor<64x2048xf32>)
// CHECK:         arith.extf
// CHECK:         arith.mulf
// CHECK:         arith.addf
// CHECK:       %[[SUM:.+]] = linalg.generic {{.+}} iterator_types = ["reduction", "parallel"]} ins(%[[PARTIAL]] : tensor<64x2048xf32>) outs(%[[INIT]] : tensor<2048xf32>)
// CHECK:       return %[[SUM]]
func.func @gain_gradient(%dy: tensor<8x2048x2048xbf16>, %r: tensor<8x2048xf32>, %init: tensor<2048xf32>) -> tensor<2048xf32> {
  %g = linalg.generic {indexing_maps = [#x3, #r3, #c3], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%dy, %r : tensor<8x2048x2048xbf16>, tensor<8x2048xf32>) outs(%init : tensor<2048xf32>) {
  ^bb0(%a: bf16, %b: f32, %out: f32):
    %w = arith.extf %a : bf16 to f32
    %p = arith.mulf %w, %b : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  } -> tensor<2048xf32>
  return %g : tensor<2048xf32>
}

// -----

// A narrow one: 2,048 rows of 512 columns take 128 chunks of 16 rows to make
// 65,536 threads; 256 rows stay whole (a thread may add 256 in order); so do
// rows whose count has no divisor that leaves 16 to 256 rows a chunk (4,099 =
// 4,099 x 1), a bf16 output (its partials would round), and a body that reads
// its loop index.
#x2 = affine_map<(d0, d1) -> (d0, d1)>
#c2 = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @narrow
// CHECK:       tensor.expand_shape %{{.+}} {{\[\[}}0, 1], [2]] output_shape [128, 16, 512] : tensor<2048x512xf32> into tensor<128x16x512xf32>
// CHECK-NOT:   tensor.expand_shape
// CHECK:       return
func.func @narrow(%x: tensor<2048x512xf32>, %short: tensor<256x512xf32>, %prime: tensor<4099x512xf32>,
                  %init: tensor<512xf32>, %binit: tensor<512xbf16>)
    -> (tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xbf16>, tensor<512xf32>) {
  %a = linalg.generic {indexing_maps = [#x2, #c2], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<2048x512xf32>) outs(%init : tensor<512xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<512xf32>
  %b = linalg.generic {indexing_maps = [#x2, #c2], iterator_types = ["reduction", "parallel"]}
      ins(%short : tensor<256x512xf32>) outs(%init : tensor<512xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<512xf32>
  %c = linalg.generic {indexing_maps = [#x2, #c2], iterator_types = ["reduction", "parallel"]}
      ins(%prime : tensor<4099x512xf32>) outs(%init : tensor<512xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<512xf32>
  %d = linalg.generic {indexing_maps = [#x2, #c2], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<2048x512xf32>) outs(%binit : tensor<512xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    %s = arith.addf %out, %t : bf16
    linalg.yield %s : bf16
  } -> tensor<512xbf16>
  %e = linalg.generic {indexing_maps = [#x2, #c2], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<2048x512xf32>) outs(%init : tensor<512xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %j = arith.index_cast %i : index to i32
    %f = arith.sitofp %j : i32 to f32
    %m = arith.mulf %in, %f : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<512xf32>
  return %a, %b, %c, %d, %e : tensor<512xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xbf16>, tensor<512xf32>
}
