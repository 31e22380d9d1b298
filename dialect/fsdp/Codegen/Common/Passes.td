//===- Passes.td - code generation shared by the targets ---*- tablegen -*-===//

#ifndef FSDP_CODEGEN_COMMON_PASSES_TD
#define FSDP_CODEGEN_COMMON_PASSES_TD

include "mlir/Pass/PassBase.td"

def FSDPFuseElementwisePass : Pass<"fsdp-fuse-elementwise"> {
  let summary = "Fuses chains of elementwise linalg generics";
  let description = [{
    Fuses each elementwise `linalg.generic` into the elementwise generics
    that consume it, so that a chain such as bias add, activation and its
    gradient mask runs as one loop nest over memory. Unlike upstream
    `linalg-fuse-elementwise-ops`, it does not propagate reshapes through
    named ops: that would turn `linalg.matmul` into a generic contraction and
    take it away from `fsdp-lower-gemms` and BLAS. Scalar (rank-0) ops are
    not fused: the chain that sums a value of every unit (the squared
    gradient norms, for clipping) stays a series of identical adds sharing
    one kernel, not one op whose operands grow with the model's depth.

    An op read by several others is computed again in each of them (and not
    stored) when that costs only arithmetic (its body gathers nothing) and
    keeps none of its inputs alive longer than something else does: SwiGLU's
    `silu(gate)`, read by the forward product and the up projection's
    gradient, is never written. Then two elementwise ops over the same
    iteration space that read an operand in common, with no runtime call
    between them and nothing between reading the first's results, become one
    op with both results, which reads each shared operand once: SwiGLU's
    backward is one loop nest reading the incoming gradient, the gate and the
    up projection, writing both gradients.

    ```mlir
    %du = linalg.generic ... ins(%d, %g : ...)      // d * silu(g)
    %dg = linalg.generic ... ins(%d, %u, %g : ...)  // d * u * silu'(g)
    // become
    %grads:2 = linalg.generic ... ins(%d, %g, %u : ...)
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def FSDPWidenBf16ProductsPass : Pass<"fsdp-widen-bf16-products"> {
  let summary = "Computes bf16 products as f32 products of operands widened where they are made";
  let description = [{
    For a CPU without bf16 product instructions (no AVX512-BF16, no AMX:
    AVX2 machines, Xeons before Cooper Lake), where the runtime would widen a
    bf16 product's A and B to f32 in passes of their own and round C in
    another (docs/Runtime.md, section 1). Each `linalg.matmul` and
    `linalg.batch_matmul` whose operands are all bf16 becomes the same
    product on f32 operands:

    - each bf16 input is widened (`arith.extf`, exact) by an elementwise op
      placed right after the op that computes it, once however many products
      read it (Q, K and V read one normalised input), then reshaped as the
      product reads it; `fsdp-fuse-elementwise`, next, fuses the widening
      into the loop that computes the input;
    - a zero C (`linalg.fill` of an empty tensor) becomes an f32 zero, any
      other C is widened like an input;
    - the f32 result is rounded to bf16 (`arith.truncf`, to nearest even)
      where it is read: through the reshapes that follow it, right before the
      ops that read it, into which `fsdp-fuse-elementwise` fuses the rounding.

    The arithmetic is the runtime's widened product's, as the specification
    says (docs/MixedPrecision.md): a product of two bf16 values is exact in
    f32, the sums are f32, C is rounded once. The products become
    `fsdprt_sgemm` calls; the inputs widened for them take f32 buffers (on
    the MLP, GPT and the small Llama: more arena than the bf16 plan on a CPU
    with bf16 instructions, less than the f32 plan). fsdpc runs it for `--target=cpu` when the CPU it builds for
    (`--cpu`, `--cpu-features`) has neither `avx512bf16` nor `amx-bf16`.

    ```mlir
    %x = linalg.generic ... -> tensor<2x16x64xbf16>       // e.g. an RMSNorm
    %a = tensor.collapse_shape %x [[0, 1], [2]] : ... into tensor<32x64xbf16>
    %c = linalg.matmul ins(%a, %w : tensor<32x64xbf16>, tensor<64x64xbf16>)
                       outs(%zero : tensor<32x64xbf16>) -> tensor<32x64xbf16>
    %y = tensor.expand_shape %c [[0, 1], [2]] ... into tensor<2x16x64xbf16>
    %z = linalg.generic ins(%y ...)                        // e.g. the rotary
    // becomes
    %x = linalg.generic ... -> tensor<2x16x64xbf16>
    %xw = linalg.generic ins(%x) { arith.extf } -> tensor<2x16x64xf32>
    %a = tensor.collapse_shape %xw ... into tensor<32x64xf32>
    %c = linalg.matmul ins(%a, %ww : tensor<32x64xf32>, tensor<64x64xf32>)
                       outs(%zero32 : tensor<32x64xf32>) -> tensor<32x64xf32>
    %y = tensor.expand_shape %c ... into tensor<2x16x64xf32>
    %yr = linalg.generic ins(%y) { arith.truncf } -> tensor<2x16x64xbf16>
    %z = linalg.generic ins(%yr ...)
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def FSDPApproximateMathPass : Pass<"fsdp-approximate-math"> {
  let summary = "Replaces f32 exp, log and tanh by polynomials LLVM can vectorise";
  let description = [{
    Rewrites `math.exp`, `math.log` and `math.tanh` on f32 (scalars or vectors)
    into upstream MLIR's polynomial approximations (Cephes-style range
    reduction and minimax polynomials, a few ulps of float32 at most), built
    from `arith` and `math.fma` only. A libm call per element is what keeps a
    softmax, a cross-entropy or a GELU loop scalar on the CPU; the
    approximation is straight-line arithmetic, so LLVM's loop vectoriser
    turns those loops into SIMD code on CPUs with FMA (every AVX2 x86-64);
    on older ones LLVM calls libm's `fmaf` for each fma (the same values,
    slower). Run on host code before `convert-math-to-llvm`, which makes the
    fmas LLVM intrinsics, and `convert-math-to-libm`, which would make each a
    call; GPU kernels keep NVVM's own functions.

    ```mlir
    %y = math.exp %x : f32
    // becomes range reduction, a polynomial and an exponent insert:
    // arith.mulf / math.fma / arith.fptosi / arith.bitcast ... (no call)
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def FSDPAssignBuffersPass : Pass<"fsdp-assign-buffers", "::mlir::ModuleOp"> {
  let summary = "Places every transient buffer of the step in the arena";
  let description = [{
    After bufferization, gives every `memref.alloc` of `fsdp_train_step`
    (gathered units, flat gradients, activations and temporaries) a fixed
    offset in the rank's arena, after its persistent part, and replaces it by
    a `memref.view` of the arena. A buffer is live from its allocation to the
    last op that uses it or anything derived from it (views, pointers handed
    to the runtime, the handle of a collective until its wait); buffers whose
    lives overlap get disjoint bytes. Offsets are chosen greedily, largest
    buffer first, lowest free 64-byte aligned offset. The body of an `scf.for`
    in the step (the attention's key blocks) is numbered in line after the
    loop: a buffer allocated in it lives within an iteration, whose bytes every
    iteration reuses, and a buffer from outside that the body uses lives to
    the loop's end.

    The step then allocates nothing: its memory is the arena, whose size (the
    planned peak), a breakdown of the buffers live at the peak and each
    trainable unit's gradient shard it writes into the module's
    `#fsdp.manifest` (`arena_bytes`, `transient`, `grad_offset`), before
    anything runs.

    ```mlir
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<32x256xf32>
    // becomes
    %c4096 = arith.constant 4096 : index
    %view = memref.view %arena[%c4096][] : memref<9000xi8> to memref<32x256xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"];
}

def FSDPRecordStepFlopsPass : Pass<"fsdp-record-step-flops", "::mlir::ModuleOp"> {
  let summary = "Writes the FLOPs of one step of a rank into the manifest";
  let description = [{
    Counts the floating-point work of `fsdp_train_step` once its products
    are runtime calls (after `fsdp-lower-gemms`), recomputation included,
    and records it in the module's `#fsdp.manifest` (`step_flops`) for the
    trainer's TFLOP/s and MFU (docs/Runtime.md):

    - `products`: 2 m n k for each matrix of each product call
      (`fsdprt_gemm*`), of which `bf16_products` in bf16;
    - `attention`: the products a fused attention call stands for, 2 (its
      forward) or 5 (its backward) of 2 T S D per batch and head, the causal
      half only;
    - `recomputed`: the part of `products` and `attention` that computes again
      what the step computed before, not the model's FLOPs: each attention
      backward's scores (one of a fused backward's 5 products; the product
      convert-fsdp-to-linalg marks `fsdp.recomputed` in a tiled one), and what
      the plan's rematerialisation adds (the manifest's `recompute`, from
      `fsdp-remat`: its products, and its attentions' forward products, half
      of a causal one's where the step fuses attention). The model's FLOPs,
      `products + attention - recomputed`, count an attention's 2 forward and
      4 backward products, as MFU figures elsewhere do;
    - `other`: one for each arith or math op of the step's loops that makes
      a float (an exponential counts one; conversions and selects none), times
      the points of its linalg op and the trips of its loops, offload's host
      update included.

    Loops count their trips where their bounds are constants. Collectives'
    sums are the communication library's and are not counted.

    ```mlir
    call @fsdprt_sgemm(%no, %no, %c32, %c256, %c784, %one, %a, ...)
    // adds 2 x 32 x 256 x 784 to "products"
    linalg.generic {iterator_types = ["parallel"]} ins(%x : memref<8192xf32>) ... {
      %y = arith.maximumf %in, %zero : f32
    }
    // adds 8192 to "other"
    ```
  }];
}

def FSDPSerializeManifestPass : Pass<"fsdp-serialize-manifest", "::mlir::ModuleOp"> {
  let summary = "Writes the step's manifest as the JSON document the trainer reads";
  let description = [{
    The last pass of a step's pipeline: turns the module's `fsdp.manifest`
    (`#fsdp.manifest`, recorded by `convert-fsdp-to-runtime` and completed by
    `fsdp-assign-buffers`, `fsdp-record-step-flops` and fsdpc) into the
    `fsdp_manifest` global, the NUL-terminated JSON document of
    docs/Runtime.md, section 2, whose keys come from
    runtime/include/fsdprt/ManifestSchema.def (every field:
    docs/Reference/Manifest.md). The attribute is gone afterwards. A module
    without the attribute, or one that already has the global, is an error.

    ```mlir
    module attributes {fsdp.manifest = #fsdp.manifest<plan = ..., arena_bytes = 1024, ...>}
    // becomes
    llvm.mlir.global external constant @fsdp_manifest("{\22allow_tf32\22:false,...}\00")
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def FSDPLowerGemmsPass : Pass<"fsdp-lower-gemms", "::mlir::ModuleOp"> {
  let summary = "Hands matrix products on buffers to the runtime's BLAS";
  let description = [{
    After bufferization, replaces each `linalg.matmul` and
    `linalg.batch_matmul` on f32 memrefs whose rows are contiguous (unit
    inner stride) and whose indexing maps are plain or transposed operands
    by a call of the runtime (docs/Runtime.md):

    ```c
    void fsdprt_sgemm(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n,
                      int64_t k, float alpha, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
    void fsdprt_sgemm_batched(int32_t trans_a, int32_t trans_b, int64_t batch,
                              int64_t m, int64_t n, int64_t k, float alpha,
                              const float *a, int64_t lda, int64_t stride_a,
                              const float *b, int64_t ldb, int64_t stride_b,
                              float beta, float *c, int64_t ldc, int64_t stride_c);
    ```

    with `beta = 1`: linalg's products accumulate into their output, unless
    a zero fill of it comes right before (`beta = 0`, the fill goes). bf16
    products call `fsdprt_gemm_bf16(_batched)` (f32 sums, one rounding).
    Other f32 products are left to the loop lowering; other bf16 ones are an
    error.

    With `fuse-bias` (the CUDA target), an f32 product into a fresh buffer
    whose only reader adds a row vector to every row (`out = C + bias`, a
    linear layer's bias) computes `out` itself: `fsdprt_sgemm_bias`
    (fsdprt_sgemm's arguments, then the bias), which cuBLASLt's bias
    epilogue adds to the f32 sums before they are stored, the same numbers
    as the add. The add's kernel goes, and so does C. bf16 products keep
    their add: the epilogue would add the bias before the product's one
    rounding, where the bf16 step rounds the product, then the sum:

    ```mlir
    linalg.fill ins(%zero : f32) outs(%c : memref<128x256xf32>)
    linalg.matmul ins(%a, %w : ...) outs(%c : memref<128x256xf32>)
    %e = memref.expand_shape %c [[0, 1], [2]] ...
    linalg.generic ... ins(%e, %bias : memref<4x32x256xf32>, memref<256xf32>)
                       outs(%out : memref<4x32x256xf32>) { addf }
    // becomes
    %o = memref.collapse_shape %out [[0, 1], [2]] ...
    call @fsdprt_sgemm_bias(..., %beta0, %o_ptr, %ldo, %bias_ptr)
    ```
  }];
  let options = [
    Option<"fuseBias", "fuse-bias", "bool", /*default=*/"false",
           "Products followed by a bias add compute it (cuBLASLt's bias epilogue)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def FSDPOutlineKernelsPass : Pass<"fsdp-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Outlines each compute op of the step into a function; identical ones share it";
  let description = [{
    After the buffer plan, every top-level op of `fsdp_train_step` that
    computes on buffers in loops of its own (a `linalg` op, a `memref.copy`,
    an `scf.for` without results such as an embedding gradient's scatter, and
    an op named in `launch-ops`: the CUDA target's `gpu.launch_func`) becomes a call of a private function
    `fsdp_kernel_<n>`, which takes the buffers and scalars the op uses (what
    is computed from constants alone is cloned in). Two ops that
    are identical up to the buffers they touch call the same function, so the
    decoder blocks of a deep model share their kernels and LLVM optimises each
    distinct loop nest once, on a function of its own:

    ```mlir
    %v0 = memref.view %arena[%c0][] : memref<1024xi8> to memref<64xf32>
    %v1 = memref.view %arena[%c256][] : memref<1024xi8> to memref<64xf32>
    linalg.fill ins(%cst : f32) outs(%v0 : memref<64xf32>)
    linalg.fill ins(%cst : f32) outs(%v1 : memref<64xf32>)
    // becomes
    call @fsdp_kernel_0(%v0) : (memref<64xf32>) -> ()
    call @fsdp_kernel_0(%v1) : (memref<64xf32>) -> ()
    func.func private @fsdp_kernel_0(%arg0: memref<64xf32> {llvm.noalias})
        attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]} {
      %cst = arith.constant 0.000000e+00 : f32
      linalg.fill ins(%cst : f32) outs(%arg0 : memref<64xf32>)
      return
    }
    ```

    Kernels are internal to the trainer and never inlined back into the step
    (LLVM would make it one large function again). A buffer argument whose
    arena bytes no other argument of the call overlaps is `llvm.noalias`
    (an op updating a buffer in place takes it once); the attribute is part
    of what two kernels must share to be one.
  }];
  let options = [
    ListOption<"launchOps", "launch-ops", "std::string",
               "Ops that launch a kernel of a target's own, outlined as compute ops are "
               "(the CUDA target: gpu.launch_func)">,
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
  ];
}

def FSDPSplitStepPass : Pass<"fsdp-split-step", "::mlir::ModuleOp"> {
  let summary = "Cuts the step into functions of a bounded number of ops, called in order";
  let description = [{
    After `fsdp-outline-kernels`, `fsdp_train_step` is one block of calls
    whose length grows with the model's depth, and LLVM's register allocator
    is superlinear in the length of a block. This pass cuts the step's ops
    into parts of at most `max-ops-per-part` ops that do work (calls, loads,
    scalar arithmetic on loaded values), each moved into a private,
    never-inlined function `fsdp_step_part_<n>` that the step calls in order.
    A part takes the values it uses from before it as arguments (the arena,
    the step's scalars, collective handles, values loaded earlier) and
    returns those used after it; what is cheap to recompute (constants, views
    of the arena, addresses, arithmetic on the step's arguments) is cloned
    into each part that uses it instead. A step of one part is unchanged.

    ```mlir
    func.func @fsdp_train_step(%arena: memref<1024xi8>, %step: i64, %lr: f32) -> f32 {
      %h = call @fsdprt_all_gather_start(...)      // part 0
      call @fsdp_kernel_0(%v0)                      // part 0
      call @fsdprt_wait(%h)                         // part 1
      ...
    // becomes
      %h = call @fsdp_step_part_0(%arena) : (memref<1024xi8>) -> i64
      %loss = call @fsdp_step_part_1(%arena, %h) : (memref<1024xi8>, i64) -> f32
      return %loss : f32
    ```
  }];
  let options = [
    Option<"maxOpsPerPart", "max-ops-per-part", "int64_t", /*default=*/"256",
           "The most ops that do work in one part">,
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
  ];
}

#endif // FSDP_CODEGEN_COMMON_PASSES_TD
