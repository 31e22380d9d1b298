// Every pass that transforms the training step says so, at the module's location, when
// the module has none (or only its declaration), rather than doing nothing: the model's
// passes need fsdp-autodiff's @train_step, those after the lowering
// convert-fsdp-to-runtime's @fsdp_train_step (lib/Utils/StepFunction.cpp).
// RUN: not fsdp-opt %s -split-input-file -fsdp-insert-collectives 2>&1 | FileCheck %s -DPASS=fsdp-insert-collectives --check-prefix=MODEL
// RUN: not fsdp-opt %s -split-input-file -fsdp-remat 2>&1 | FileCheck %s -DPASS=fsdp-remat --check-prefix=MODEL
// RUN: not fsdp-opt %s -split-input-file -fsdp-lower-precision 2>&1 | FileCheck %s -DPASS=fsdp-lower-precision --check-prefix=MODEL
// RUN: not fsdp-opt %s -split-input-file -fsdp-accumulate-micro-batches 2>&1 | FileCheck %s -DPASS=fsdp-accumulate-micro-batches --check-prefix=MODEL
// RUN: not fsdp-opt %s -split-input-file -convert-fsdp-to-runtime 2>&1 | FileCheck %s -DPASS=convert-fsdp-to-runtime --check-prefix=MODEL
// RUN: not fsdp-opt %s -split-input-file -fsdp-assign-buffers 2>&1 | FileCheck %s -DPASS=fsdp-assign-buffers --check-prefix=RUNTIME
// RUN: not fsdp-opt %s -split-input-file -fsdp-record-step-flops 2>&1 | FileCheck %s -DPASS=fsdp-record-step-flops --check-prefix=RUNTIME
// RUN: not fsdp-opt %s -split-input-file -fsdp-outline-kernels 2>&1 | FileCheck %s -DPASS=fsdp-outline-kernels --check-prefix=RUNTIME
// RUN: not fsdp-opt %s -split-input-file -fsdp-split-step 2>&1 | FileCheck %s -DPASS=fsdp-split-step --check-prefix=RUNTIME
// RUN: not fsdp-opt %s -split-input-file -fsdp-cuda-sink-host-reads 2>&1 | FileCheck %s -DPASS=fsdp-cuda-sink-host-reads --check-prefix=RUNTIME
// RUN: not fsdp-opt %s -split-input-file -fsdp-cuda-split-unaligned-biases 2>&1 | FileCheck %s -DPASS=fsdp-cuda-split-unaligned-biases --check-prefix=RUNTIME
// RUN: not fsdp-opt %s -split-input-file -fsdp-cuda-insert-stream-events 2>&1 | FileCheck %s -DPASS=fsdp-cuda-insert-stream-events --check-prefix=RUNTIME
// RUN: not fsdp-opt %s -split-input-file -fsdp-cuda-mark-row-prologues 2>&1 | FileCheck %s -DPASS=fsdp-cuda-mark-row-prologues --check-prefix=RUNTIME
// RUN: not fsdp-opt %s -split-input-file -fsdp-cuda-form-kernels 2>&1 | FileCheck %s -DPASS=fsdp-cuda-form-kernels --check-prefix=RUNTIME
// RUN: not fsdp-opt %s -split-input-file -fsdp-cuda-bundle-kernels 2>&1 | FileCheck %s -DPASS=fsdp-cuda-bundle-kernels --check-prefix=RUNTIME

// MODEL: require-step.mlir:[[@LINE+3]]:1: error: [[PASS]] needs the training step @train_step of fsdp-autodiff; the module has none
// RUNTIME: require-step.mlir:[[@LINE+2]]:1: error: [[PASS]] needs the training step @fsdp_train_step of convert-fsdp-to-runtime; the module has none
// A function of another name is not the step.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  func.func @step(%x: f32) -> f32 {
    return %x : f32
  }
}

// -----

// MODEL: require-step.mlir:[[@LINE+2]]:1: error: [[PASS]] needs the training step @train_step of fsdp-autodiff; the module has only its declaration
// RUNTIME: require-step.mlir:[[@LINE+1]]:1: error: [[PASS]] needs the training step @fsdp_train_step of convert-fsdp-to-runtime; the module has only its declaration
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  func.func private @train_step(f32) -> f32
  func.func private @fsdp_train_step(f32) -> f32
}
