// Every attribute of the step's manifest parses, verifies and prints, and
// the printed form parses back to itself.
// RUN: fsdp-opt %s | FileCheck %s
// RUN: fsdp-opt %s | fsdp-opt | FileCheck %s

// CHECK-LABEL: module attributes {fsdp.manifest = #fsdp.manifest<
// CHECK-SAME: plan = #fsdp.plan<grid = [2], optimizer = #fsdp.adamw<lr = 0.0003, weight_decay = 0.1>, clip_grad_norm = 1.0, offload = optimizer>,
// CHECK-SAME: arena_bytes = 4096, persistent_bytes = 1024, host_arena_bytes = 2048, local_batch = 2, shard_ranks = 2,
// CHECK-SAME: units = [#fsdp.manifest_unit<name = "emb", dtype = f32, trainable = true, numel = 64, shard_numel = 32, param_offset = 0, state = [#fsdp.state_slot<name = "exp_avg", offset = 128>, #fsdp.state_slot<name = "exp_avg_sq", offset = 256>], param_dtype = bf16, host = #fsdp.unit_host<master_offset = 0, grad_offset = 384, grad_dtype = bf16>>,
// CHECK-SAME: #fsdp.manifest_unit<name = "head", dtype = f32, trainable = true, numel = 16, shard_numel = 8, param_offset = 64, grad_offset = 2048, state = [#fsdp.state_slot<name = "exp_avg", offset = 512>, #fsdp.state_slot<name = "exp_avg_sq", offset = 576>]>,
// CHECK-SAME: #fsdp.manifest_unit<name = "norm", dtype = bf16, trainable = false, numel = 4, shard_numel = 2, param_offset = 128>],
// CHECK-SAME: params = [#fsdp.manifest_param<name = "emb.w", shape = [16, 4], dtype = f32, unit = "emb", trainable = true, init = #fsdp.normal<std = 0.02>, unit_offset = 0>,
// CHECK-SAME: #fsdp.manifest_param<name = "head.w", shape = [4, 4], dtype = f32, unit = "head", trainable = true, init = #fsdp.fan_in_uniform, unit_offset = 0>,
// CHECK-SAME: #fsdp.manifest_param<name = "norm.g", shape = [4], dtype = bf16, unit = "norm", trainable = false, init = #fsdp.ones, unit_offset = 0>],
// CHECK-SAME: inputs = [#fsdp.manifest_input<shape = [2, 3], dtype = i32, role = "tokens", bound = 16, offset = 192, bytes = 24>, #fsdp.manifest_input<shape = [2, 3], dtype = f32, role = "features", offset = 256, bytes = 24>],
// CHECK-SAME: collectives = [#fsdp.manifest_collective<kind = "all_gather", unit = "emb">, #fsdp.manifest_collective<kind = "all_reduce">],
// CHECK-SAME: tokens_per_step = 12, device_scalars = 320,
// CHECK-SAME: recompute = #fsdp.recompute<ops = 4, products = 2, product_flops = 1024, other_elements = 64, step_product_flops = 4352, attention_flops = 512, fused_attention_flops = 256>,
// CHECK-SAME: transient = #fsdp.transient_plan<peak_bytes = 3072, live_bytes = 2880, buffers = 9, live_buffers = 4, gathered_bytes = 256, gradient_bytes = 128, collective_bytes = 64, gradient_shard_bytes = 32, activation_bytes = 2400, dtype_bytes = {bf16 = 480 : i64, f32 = 2400 : i64}>,
// CHECK-SAME: step_flops = #fsdp.step_flops<products = 11328, bf16_products = 3072, attention = 114688, recomputed = 18984, other = 176>,
// CHECK-SAME: device_profile = #fsdp.device_profile<name = "h100-sxm", matmul_f32 = 5.1e+13, matmul_bf16 = 7.5e+14>>}
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
