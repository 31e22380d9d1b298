// RUN: fsdp-opt %s -split-input-file -fsdp-serialize-manifest -verify-diagnostics | FileCheck %s

// Every field of the typed manifest, written with the schema's keys
// (runtime/include/fsdprt/ManifestSchema.def), sorted as llvm::json prints
// them: the batch is local_batch x the plan's 2 ranks, the replicas 2 / 2;
// the plan gives the grid, strategy, optimizer (with AdamW's defaults),
// clipping and TF32; an offloaded unit's param_dtype and host, a trainable
// one's state (none for a frozen one), an input's index from its place and
// its bound when it has one, a collective without a unit as "". The
// attribute is gone afterwards.
// CHECK-NOT: fsdp.manifest =
// CHECK-LABEL: llvm.mlir.global external constant @fsdp_manifest(
// CHECK-SAME: "{\22allow_tf32\22:false,\22arena_bytes\22:4096,\22batch\22:4,\22clip_grad_norm\22:1,
// CHECK-SAME: \22collectives\22:[{\22kind\22:\22all_gather\22,\22unit\22:\22emb\22},{\22kind\22:\22all_reduce\22,\22unit\22:\22\22}],
// CHECK-SAME: \22device_profile\22:{\22matmul_flops\22:{\22bf16\22:750000000000000,\22f32\22:51000000000000},\22name\22:\22h100-sxm\22},
// CHECK-SAME: \22device_scalars\22:{\22offset\22:320},\22grid\22:[2],\22host_arena_bytes\22:2048,
// CHECK-SAME: \22inputs\22:[{\22bound\22:16,\22bytes\22:24,\22dtype\22:\22i32\22,\22index\22:0,\22offset\22:192,\22role\22:\22tokens\22,\22shape\22:[2,3]},{\22bytes\22:24,\22dtype\22:\22f32\22,\22index\22:1,\22offset\22:256,\22role\22:\22features\22,\22shape\22:[2,3]}],
// CHECK-SAME: \22local_batch\22:2,
// CHECK-SAME: \22optimizer\22:{\22beta1\22:0.90000000000000002,\22beta2\22:0.999,\22eps\22:1e-08,\22kind\22:\22adamw\22,\22lr\22:0.00029999999999999997,\22weight_decay\22:0.10000000000000001},
// CHECK-SAME: \22params\22:[{\22dtype\22:\22f32\22,\22init\22:{\22kind\22:\22normal\22,\22mean\22:0,\22std\22:0.02},\22name\22:\22emb.w\22,\22shape\22:[16,4],\22trainable\22:true,\22unit\22:\22emb\22,\22unit_offset\22:0},
// CHECK-SAME: {\22dtype\22:\22f32\22,\22init\22:{\22kind\22:\22fan_in_uniform\22,\22scale\22:1},\22name\22:\22head.w\22,\22shape\22:[4,4],\22trainable\22:true,\22unit\22:\22head\22,\22unit_offset\22:0},
// CHECK-SAME: {\22dtype\22:\22bf16\22,\22init\22:{\22kind\22:\22ones\22},\22name\22:\22norm.g\22,\22shape\22:[4],\22trainable\22:false,\22unit\22:\22norm\22,\22unit_offset\22:0}],
// CHECK-SAME: \22persistent_bytes\22:1024,
// CHECK-SAME: \22recompute\22:{\22attention_flops\22:512,\22fused_attention_flops\22:256,\22ops\22:4,\22other_elements\22:64,\22product_flops\22:1024,\22products\22:2,\22step_product_flops\22:4352},
// CHECK-SAME: \22replicas\22:1,\22shard_ranks\22:2,
// CHECK-SAME: \22step_flops\22:{\22attention\22:114688,\22bf16_products\22:3072,\22other\22:176,\22products\22:11328,\22recomputed\22:18984},
// CHECK-SAME: \22strategy\22:\22full_shard\22,\22tokens_per_step\22:12,
// CHECK-SAME: \22transient\22:{\22activation_bytes\22:2400,\22buffers\22:9,\22collective_bytes\22:64,\22dtype_bytes\22:{\22bf16\22:480,\22f32\22:2400},\22gathered_bytes\22:256,\22gradient_bytes\22:128,\22gradient_shard_bytes\22:32,\22live_buffers\22:4,\22live_bytes\22:2880,\22peak_bytes\22:3072},
// CHECK-SAME: \22units\22:[{\22dtype\22:\22f32\22,\22host\22:{\22grad_dtype\22:\22bf16\22,\22grad_offset\22:384,\22master_offset\22:0},\22name\22:\22emb\22,\22numel\22:64,\22param_dtype\22:\22bf16\22,\22param_offset\22:0,\22shard_numel\22:32,\22state\22:[{\22offset\22:128,\22slot\22:\22exp_avg\22},{\22offset\22:256,\22slot\22:\22exp_avg_sq\22}],\22trainable\22:true},
// CHECK-SAME: {\22dtype\22:\22f32\22,\22grad_offset\22:2048,\22name\22:\22head\22,\22numel\22:16,\22param_offset\22:64,\22shard_numel\22:8,\22state\22:[{\22offset\22:512,\22slot\22:\22exp_avg\22},{\22offset\22:576,\22slot\22:\22exp_avg_sq\22}],\22trainable\22:true},
// CHECK-SAME: {\22dtype\22:\22bf16\22,\22name\22:\22norm\22,\22numel\22:4,\22param_offset\22:128,\22shard_numel\22:2,\22trainable\22:false}],
// CHECK-SAME: \22version\22:2}\00")
module attributes {fsdp.manifest = #fsdp.manifest<
    plan = #fsdp.plan<grid = [2], optimizer = #fsdp.adamw<lr = 3.0e-4, weight_decay = 0.1>, clip_grad_norm = 1.0, offload = optimizer>,
    arena_bytes = 4096, persistent_bytes = 1024, host_arena_bytes = 2048, local_batch = 2, shard_ranks = 2,
    units = [#fsdp.manifest_unit<name = "emb", dtype = f32, trainable = true, numel = 64, shard_numel = 32,
               param_offset = 0, state = [#fsdp.state_slot<name = "exp_avg", offset = 128>,
                                          #fsdp.state_slot<name = "exp_avg_sq", offset = 256>],
               param_dtype = bf16, host = #fsdp.unit_host<master_offset = 0, grad_offset = 384, grad_dtype = bf16>>,
             #fsdp.manifest_unit<name = "head", dtype = f32, trainable = true, numel = 16, shard_numel = 8,
               param_offset = 64, grad_offset = 2048,
               state = [#fsdp.state_slot<name = "exp_avg", offset = 512>,
                        #fsdp.state_slot<name = "exp_avg_sq", offset = 576>]>,
             #fsdp.manifest_unit<name = "norm", dtype = bf16, trainable = false, numel = 4, shard_numel = 2,
               param_offset = 128>],
    params = [#fsdp.manifest_param<name = "emb.w", shape = [16, 4], dtype = f32, unit = "emb", trainable = true,
                init = #fsdp.normal<std = 0.02>, unit_offset = 0>,
              #fsdp.manifest_param<name = "head.w", shape = [4, 4], dtype = f32, unit = "head", trainable = true,
                init = #fsdp.fan_in_uniform, unit_offset = 0>,
              #fsdp.manifest_param<name = "norm.g", shape = [4], dtype = bf16, unit = "norm", trainable = false,
                init = #fsdp.ones, unit_offset = 0>],
    inputs = [#fsdp.manifest_input<shape = [2, 3], dtype = i32, role = "tokens", bound = 16, offset = 192, bytes = 24>,
              #fsdp.manifest_input<shape = [2, 3], dtype = f32, role = "features", offset = 256, bytes = 24>],
    collectives = [#fsdp.manifest_collective<kind = "all_gather", unit = "emb">,
                   #fsdp.manifest_collective<kind = "all_reduce">],
    tokens_per_step = 12, device_scalars = 320,
    recompute = #fsdp.recompute<ops = 4, products = 2, product_flops = 1024, other_elements = 64,
                                step_product_flops = 4352, attention_flops = 512, fused_attention_flops = 256>,
    transient = #fsdp.transient_plan<peak_bytes = 3072, live_bytes = 2880, buffers = 9, live_buffers = 4,
                                     gathered_bytes = 256, gradient_bytes = 128, collective_bytes = 64,
                                     gradient_shard_bytes = 32, activation_bytes = 2400,
                                     dtype_bytes = {bf16 = 480 : i64, f32 = 2400 : i64}>,
    step_flops = #fsdp.step_flops<products = 11328, bf16_products = 3072, attention = 114688, recomputed = 18984, other = 176>,
    device_profile = #fsdp.device_profile<name = "h100-sxm", matmul_f32 = 5.1e13, matmul_bf16 = 7.5e14>>} {
}

// -----

// Nothing to write: the step was not lowered by convert-fsdp-to-runtime.
// expected-error @below {{fsdp-serialize-manifest needs the manifest of convert-fsdp-to-runtime (fsdp.manifest); the module has none}}
module {
}

// -----

// Written once: a second manifest would be a second symbol of that name.
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [1], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 64, persistent_bytes = 64, local_batch = 1, shard_ranks = 1>} {
  // expected-error @below {{fsdp-serialize-manifest writes @fsdp_manifest, which the module already has}}
  llvm.mlir.global external constant @fsdp_manifest("{}\00") {addr_space = 0 : i32}
}
