// RUN: fsdp-opt %s -fsdp-form-units -fsdp-report -o /dev/null | FileCheck %s
// RUN: fsdp-opt %s -fsdp-form-units -fsdp-report="format=json" -o /dev/null | FileCheck %s --check-prefix=JSON
// RUN: fsdp-opt %s -fsdp-set-grid="grid=1" -fsdp-form-units -fsdp-report="format=json" -o /dev/null | FileCheck %s --check-prefix=ONE
// RUN: not fsdp-opt %s -fsdp-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=NO-UNITS
// RUN: not fsdp-opt %s -fsdp-form-units -fsdp-report="format=xml" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FORMAT

// Three units over 4 ranks, AdamW (2 slots), f32 storage, bf16 gathers:
//   fc1: 100x30 + 30 = 3030 elements -> 758 per rank, padded to 768 (64-byte blocks)
//   fc2: 30x10 + 10  =  310 elements ->  78 per rank, padded to  80
//   emb (frozen, root): 50x4 = 200   ->  50 per rank, padded to  64
// parameter shards (768 + 80 + 64) x 4 B = 3648; gradients and state only for the
// trainable units: (768 + 80) x 4 = 3392, twice that for AdamW = 6784.
// Gathered at peak, prefetch 1: the two largest neighbouring units in bf16,
// (4 x 768 + 4 x 80) x 2 B = 6784. A rank sends 3 of 4 shards per gather:
// 3 x (768 + 80 + 64) x 2 = 5472 forward, again in backward; reduce-scatter in f32:
// 3 x (768 + 80) x 4 = 10176.

// CHECK: fsdp-report: grid [4], full_shard, 3540 parameters in 3 units, 4-way sharded, 1 replica(s)
// CHECK: parameter shards 3648
// CHECK: gradient shards 3392
// CHECK: optimizer state 6784
// CHECK: sharded state (total) 13824
// CHECK-NEXT: of which f32 13824
// The textbook (2 + 2 + 12) bytes per parameter (AdamW: f32 master and two
// slots) over 4 ranks: 16 x 3540 / 4.
// CHECK-NEXT: textbook (2 + 2 + 12) P / N 14160
// CHECK: gathered parameters at peak 6784
// CHECK: all-gather, forward 5472
// CHECK: all-gather, backward 5472
// CHECK: reduce-scatter, gradients 10176
// CHECK: all-reduce, gradients 0
// CHECK: all-reduce, gradient norm 0
// CHECK: root 1 200 256 384 0
// CHECK: fc1 2 3030 3072 4608 9216
// CHECK: fc2 2 310 320 480 960

// JSON: "per_rank_bytes":{"gathered_parameters_peak":6784,"gradient_shards":3392,"optimizer_state":6784,"parameter_shards":3648,"sharded_state_dtype_bytes":{"f32":13824},"textbook_bytes":14160,"textbook_k":12}
// JSON-SAME: "shard_ranks":4
// JSON-SAME: {"all_gather_backward_bytes":4608,"all_gather_forward_bytes":4608,"all_reduce_bytes":0,"elements":3030,"name":"fc1","padded_elements":3072,"params":[{"elements":3000,"name":"fc1.w","offset":0},{"elements":30,"name":"fc1.b","offset":3000}],"reduce_scatter_bytes":9216,"shard_elements":768,"trainable":true}

// On one rank nothing is gathered or sent and every shard is whole, padded to 64 bytes:
// (3040 + 320 + 208) x 4 = 14272 bytes of parameters.
// ONE: "per_rank_bytes":{"gathered_parameters_peak":0,"gradient_shards":13440,"optimizer_state":26880,"parameter_shards":14272,"sharded_state_dtype_bytes":{"f32":54592},"textbook_bytes":56640,"textbook_k":12}

// NO-UNITS: error: parameter has no unit; run fsdp-form-units first
// FORMAT: error: fsdp-report: format must be table or json, got 'xml'
module attributes {fsdp.plan = #fsdp.plan<grid = [4], optimizer = #fsdp.adamw<lr = 0.001>, param_dtype = bf16>} {
  fsdp.param frozen @emb : tensor<50x4xf32> = #fsdp.normal<std = 0.02>
  fsdp.param @fc1.w unit "fc1" : tensor<100x30xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc1.b unit "fc1" : tensor<30xf32> = #fsdp.zeros
  fsdp.param @fc2.w unit "fc2" : tensor<30x10xf32> = #fsdp.fan_in_uniform
  fsdp.param @fc2.b unit "fc2" : tensor<10xf32> = #fsdp.zeros
}
