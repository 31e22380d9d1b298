// The bundled examples verify and their printed form is a fixed point.
// RUN: fsdp-opt %examples/mlp.mlir | fsdp-opt | FileCheck %s --check-prefix=MLP
// RUN: fsdp-opt %examples/gpt.mlir > %t.gpt.mlir
// RUN: fsdp-opt %t.gpt.mlir | diff %t.gpt.mlir -
// RUN: fsdp-opt %t.gpt.mlir | FileCheck %s --check-prefix=GPT

// MLP: module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.adamw<lr = 0.001, weight_decay = 0.0>>}
// MLP-COUNT-6: fsdp.param
// MLP: func.func @loss(%{{.*}}: tensor<64x784xf32>, %{{.*}}: tensor<64xi32>) -> tensor<f32>
// MLP-COUNT-3: fsdp.matmul
// MLP: fsdp.cross_entropy

// GPT: fsdp.param @wte unit "embed" : tensor<256x64xf32> = #fsdp.normal<std = 0.02>
// GPT: fsdp.param @h0.attn.wq unit "block0"
// GPT: fsdp.param @h1.attn.wq unit "block1"
// GPT: fsdp.param @lm_head unit "head"
// GPT: fsdp.embedding
// GPT-COUNT-2: fsdp.attention %{{.+}} causal key_block 16
// GPT: fsdp.cross_entropy

// The Llama-2-70B example verifies and is exactly what its generator writes.
// RUN: fsdp-opt %examples/llama-70b.mlir -o /dev/null
// RUN: %python %examples/generate_llama.py | diff %examples/llama-70b.mlir -
