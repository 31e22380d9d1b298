// RUN: fsdp-opt %s -split-input-file -fsdp-form-units -verify-diagnostics | FileCheck %s

// Explicit units: named units stay, the rest join the root unit.
// CHECK-LABEL: module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>}
// CHECK: fsdp.param @embed unit "root"
// CHECK: fsdp.param @fc1.w unit "fc1"
// CHECK: fsdp.param @fc1.b unit "fc1"
// CHECK: fsdp.param @head unit "root"
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @embed : tensor<16x8xf32> = #fsdp.zeros
  fsdp.param @fc1.w unit "fc1" : tensor<8x8xf32> = #fsdp.zeros
  fsdp.param @fc1.b unit "fc1" : tensor<8xf32> = #fsdp.zeros
  fsdp.param @head : tensor<8x4xf32> = #fsdp.zeros
}

// -----

// Auto-wrap: consecutive parameters without a unit fill units of at least 100
// elements; a unit a parameter names is kept.
// CHECK-LABEL: module attributes
// CHECK: fsdp.param @a unit "auto0" : tensor<8x8xf32>
// CHECK: fsdp.param @b unit "auto0" : tensor<8x8xf32>
// CHECK: fsdp.param @c unit "head" : tensor<8xf32>
// CHECK: fsdp.param @d unit "auto1" : tensor<50xf32>
// CHECK: fsdp.param @e unit "auto1" : tensor<50xf32>
// CHECK: fsdp.param @f unit "auto2" : tensor<4xf32>
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, units = auto_wrap, min_unit_params = 100>} {
  fsdp.param @a : tensor<8x8xf32> = #fsdp.zeros
  fsdp.param @b : tensor<8x8xf32> = #fsdp.zeros
  fsdp.param @c unit "head" : tensor<8xf32> = #fsdp.zeros
  fsdp.param @d : tensor<50xf32> = #fsdp.zeros
  fsdp.param @e : tensor<50xf32> = #fsdp.zeros
  fsdp.param @f : tensor<4xf32> = #fsdp.zeros
}

// -----

// One flat buffer per unit: one element type.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @a unit "u" : tensor<8xf32> = #fsdp.zeros
  // expected-error@+1 {{unit 'u' mixes element types: 'bf16' here, 'f32' for 'a'}}
  fsdp.param @b unit "u" : tensor<8xbf16> = #fsdp.zeros
}

// -----

// One flat gradient per unit: all trainable or all frozen.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @a unit "u" : tensor<8xf32> = #fsdp.zeros
  // expected-error@+1 {{unit 'u' mixes frozen and trainable parameters ('b' and 'a')}}
  fsdp.param frozen @b unit "u" : tensor<8xf32> = #fsdp.zeros
}

// -----

// expected-error@+1 {{fsdp-form-units needs the module's 'fsdp.plan'}}
module {
  fsdp.param @a : tensor<8xf32> = #fsdp.zeros
}
