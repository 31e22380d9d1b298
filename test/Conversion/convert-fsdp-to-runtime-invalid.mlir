// RUN: fsdp-opt %s -split-input-file -fsdp-form-units -fsdp-partition -fsdp-autodiff -fsdp-insert-collectives -convert-fsdp-to-runtime -verify-diagnostics

// The trainer must be able to check integer inputs against a bound.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "lin" : tensor<4xf32> = #fsdp.ones
  // expected-error@+1 {{integer input #1 is neither embedding indices nor cross-entropy targets, so the trainer could not check its values}}
  func.func @loss(%t: tensor<2x4xf32>, %unused: tensor<2xi32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<4xf32>
    %b = fsdp.broadcast %w : tensor<4xf32> -> tensor<2x4xf32>
    %l = fsdp.mse %b, %t : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Every input's dimension 0 is the batch.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "lin" : tensor<4xf32> = #fsdp.ones
  // expected-error@+1 {{every input's dimension 0 is the batch, but input #1 is 'tensor<3x4xf32>' and input #0 is 'tensor<2x4xf32>'}}
  func.func @loss(%t: tensor<2x4xf32>, %u: tensor<3x4xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<4xf32>
    %b = fsdp.broadcast %w : tensor<4xf32> -> tensor<2x4xf32>
    %l = fsdp.mse %b, %t : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// bf16 parameters are not lowered for CPUs yet.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  // expected-error@+1 {{the CPU target supports f32 parameters only}}
  fsdp.param @w unit "lin" : tensor<4xbf16> = #fsdp.ones
  func.func @loss(%t: tensor<2x4xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<4xbf16>
    %b = fsdp.broadcast %w : tensor<4xbf16> -> tensor<2x4xbf16>
    %l = fsdp.mse %b, %b : tensor<2x4xbf16>, tensor<2x4xbf16> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// bf16 inputs neither.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>} {
  fsdp.param @w unit "lin" : tensor<4xf32> = #fsdp.ones
  // expected-error@+1 {{input #0 has element type 'bf16'; the CPU target supports f32, i32 and i64}}
  func.func @loss(%t: tensor<2x4xbf16>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<4xf32>
    %l = fsdp.mse %w, %w : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A plan with micro-batches needs the step that runs them.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>, micro_batches = 2>} {
  fsdp.param @w unit "lin" : tensor<4xf32> = #fsdp.ones
  // expected-error@+1 {{the plan asks for 2 micro-batches, but the step runs 1; run fsdp-accumulate-micro-batches first}}
  func.func @loss(%t: tensor<2x4xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<4xf32>
    %p = fsdp.mul %t, %w : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %l = fsdp.mse %p, %t : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The CPU target keeps everything in host memory already: offload is an error
// at the plan (the module), not silently ignored.
// expected-error@+1 {{offload = optimizer moves the optimizer to host memory, where the CPU target keeps everything already; it applies to --target=cuda}}
module attributes {fsdp.plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>, offload = optimizer>} {
  fsdp.param @w unit "lin" : tensor<4xf32> = #fsdp.ones
  func.func @loss(%t: tensor<2x4xf32>) -> tensor<f32> {
    %w = fsdp.use @w : tensor<4xf32>
    %p = fsdp.mul %t, %w : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %l = fsdp.mse %p, %t : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
