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
