// RUN: fsdp-opt %s -fsdp-form-units -fsdp-partition -fsdp-autodiff -fsdp-insert-collectives -fsdp-lower-precision -fsdp-accumulate-micro-batches -convert-fsdp-to-runtime -fsdp-serialize-manifest | FileCheck %s --enable-var-scope

// 2 micro-batches on 2 ranks of a batch of 8: each rank's 4 rows of each
// input are one arena region, the manifest's input (shape [4, ...]), and
// micro-batch m reads rows [2m, 2m + 2) of it: a view at the region's offset
// plus m times a micro-batch's bytes.
// CHECK: \22inputs\22:[{\22bytes\22:64,\22dtype\22:\22f32\22,\22index\22:0,\22offset\22:64,\22role\22:\22features\22,\22shape\22:[4,4]}
// CHECK-SAME: {\22bound\22:4,\22bytes\22:16,\22dtype\22:\22i32\22,\22index\22:1,\22offset\22:128,\22role\22:\22classes\22,\22shape\22:[4]}
// CHECK-SAME: \22local_batch\22:4
// CHECK-LABEL: func.func @fsdp_train_step
// CHECK-NOT: fsdp.micro_batches
// CHECK: %[[C64:.+]] = arith.constant 64 : index
// CHECK-NEXT: %[[X0:.+]] = memref.view %{{.+}}[%[[C64]]][] : memref<192xi8> to memref<2x4xf32>
// CHECK: %[[C128:.+]] = arith.constant 128 : index
// CHECK-NEXT: %[[Y0:.+]] = memref.view %{{.+}}[%[[C128]]][] : memref<192xi8> to memref<2xi32>
// CHECK: %[[C96:.+]] = arith.constant 96 : index
// CHECK-NEXT: %[[X1:.+]] = memref.view %{{.+}}[%[[C96]]][] : memref<192xi8> to memref<2x4xf32>
// CHECK: %[[C136:.+]] = arith.constant 136 : index
// CHECK-NEXT: %[[Y1:.+]] = memref.view %{{.+}}[%[[C136]]][] : memref<192xi8> to memref<2xi32>
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, micro_batches = 2>} {
  fsdp.param @w unit "lin" : tensor<4x4xf32> = #fsdp.fan_in_uniform
  func.func @loss(%x: tensor<8x4xf32>, %y: tensor<8xi32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<4x4xf32>
    %z = fsdp.matmul %x, %w : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
    %l = fsdp.cross_entropy %z, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
