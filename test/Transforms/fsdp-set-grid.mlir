// RUN: not fsdp-opt %s -split-input-file -fsdp-set-grid="grid=8" 2>&1 | FileCheck %s --check-prefix=ONE-D
// RUN: not fsdp-opt %s -split-input-file -fsdp-set-grid="grid=2,4" 2>&1 | FileCheck %s --check-prefix=TWO-D
// RUN: fsdp-opt %s -split-input-file -fsdp-set-grid="tensor=4" | FileCheck %s --check-prefix=TENSOR
// RUN: not fsdp-opt %s -split-input-file -fsdp-set-grid="grid=8 tensor=2" 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: fsdp-opt %s -split-input-file -fsdp-set-grid="tensor=2 sequence=true" | FileCheck %s --check-prefix=SEQUENCE
// RUN: not fsdp-opt %s -split-input-file -fsdp-set-grid="sequence=true" 2>&1 | FileCheck %s --check-prefix=NO-TENSOR

// The grid changes; every other field of the plan stays. A 2-D grid needs hybrid_shard
// (each run has one case the plan rejects, hence `not`).
// The tensor-parallel degree alone keeps the grid; with a grid, both change.
// ONE-D-DAG: module attributes {fsdp.plan = #fsdp.plan<grid = [8], strategy = shard_grad_op, optimizer = #fsdp.sgd<lr = 0.1>, prefetch = 2>}
// TENSOR-DAG: module attributes {fsdp.plan = #fsdp.plan<grid = [2], tensor_parallel = 4, strategy = shard_grad_op, optimizer = #fsdp.sgd<lr = 0.1>, prefetch = 2>}
// BOTH-DAG: module attributes {fsdp.plan = #fsdp.plan<grid = [8], tensor_parallel = 2, strategy = shard_grad_op, optimizer = #fsdp.sgd<lr = 0.1>, prefetch = 2>}
// Sequence parallelism turns on with tensor ranks, and only with them.
// SEQUENCE-DAG: module attributes {fsdp.plan = #fsdp.plan<grid = [2], tensor_parallel = 2, sequence_parallel = true, strategy = shard_grad_op, optimizer = #fsdp.sgd<lr = 0.1>, prefetch = 2>}
// NO-TENSOR-DAG: fsdp-set-grid.mlir:[[# @LINE + 2]]:1: error: sequence=true: sequence_parallel splits the sequence over the tensor ranks: it needs tensor_parallel above 1
// TWO-D-DAG: fsdp-set-grid.mlir:[[# @LINE + 1]]:1: error: grid [2, 4]: a 2-D grid needs strategy = hybrid_shard, got shard_grad_op
module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = shard_grad_op, optimizer = #fsdp.sgd<lr = 0.1>, prefetch = 2>} {
}

// -----

// TENSOR-DAG: module attributes {fsdp.plan = #fsdp.plan<grid = [4, 4], tensor_parallel = 4, strategy = hybrid_shard, optimizer = #fsdp.sgd<lr = 0.1>>}
// BOTH-DAG: fsdp-set-grid.mlir:[[# @LINE + 3]]:1: error: grid [8]: hybrid_shard needs a 2-D grid [replicate, shard]
// TWO-D-DAG: module attributes {fsdp.plan = #fsdp.plan<grid = [2, 4], strategy = hybrid_shard, optimizer = #fsdp.sgd<lr = 0.1>>}
// ONE-D-DAG: fsdp-set-grid.mlir:[[# @LINE + 1]]:1: error: grid [8]: hybrid_shard needs a 2-D grid [replicate, shard]
module attributes {fsdp.plan = #fsdp.plan<grid = [4, 4], strategy = hybrid_shard, optimizer = #fsdp.sgd<lr = 0.1>>} {
}
