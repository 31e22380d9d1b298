//===- Passes.td - CUDA code generation --------------------*- tablegen -*-===//

#ifndef FSDP_CODEGEN_CUDA_PASSES_TD
#define FSDP_CODEGEN_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def FSDPSinkHostReadsPass : Pass<"fsdp-cuda-sink-host-reads", "::mlir::ModuleOp"> {
  let summary = "Keeps the host from reading device memory in the step";
  let description = [{
    On a GPU the arena is device memory, which the host code of
    `fsdp_train_step` cannot load from. After bufferization the step's top
    level still reads scalars the kernels use: a factor computed on the
    device (gradient clipping), and the learning rate and step number, which
    `convert-fsdp-to-runtime` reads from the arena's `device_scalars` (the
    runtime writes them there before each step, so that a step replayed as a
    CUDA graph sees this step's values). This pass moves each such
    `memref.load`, and every pure op the host computes from it (the
    optimizer's bias corrections), into the blocks that use the value (a
    `linalg` body, later a kernel), once per block, at its start:

    ```mlir
    %step = memref.load %step_slot[] : memref<i64>
    %t = arith.sitofp %step : i64 to f64
    linalg.generic ... {
    ^bb0(%m: f32, %p: f32):
      %x = ... %t ...
    }
    // becomes
    linalg.generic ... {
    ^bb0(%m: f32, %p: f32):
      %step = memref.load %step_slot[] : memref<i64>
      %t = arith.sitofp %step : i64 to f64
      %x = ... %t ...
    }
    ```

    It runs before `fsdp-assign-buffers`, so that a buffer read in a kernel
    stays live until that kernel. A host op with effects that reads a device
    value (a call, the step's `return`) is an error.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def FSDPSplitUnalignedBiasesPass : Pass<"fsdp-cuda-split-unaligned-biases", "::mlir::ModuleOp"> {
  let summary = "Adds a bias the buffer plan did not align to 16 bytes after its product";
  let description = [{
    `fsdp-lower-gemms` gives an f32 product the bias added after it as
    cuBLASLt's bias epilogue (`fsdprt_sgemm_bias`). The epilogue reads the
    bias with vector loads, and a bias that is not 16-byte aligned faults on
    GPUs whatever algorithm cuBLASLt's heuristic chose; the bias of a unit's
    flat parameters lies wherever the parameters before it end. After the
    buffer plan every bias's address is known: each call whose bias is not
    16-byte aligned in the (256-byte aligned) arena becomes the plain product
    (`fsdprt_sgemm`, the same arguments) and an elementwise add of the bias
    to every row of C, the same f32 sum, one kernel more. The runtime refuses
    any other bias (docs/Runtime.md, section 7).

    ```mlir
    %bias = memref.view %arena[%c5996][] : memref<9000xi8> to memref<6xf32>
    func.call @fsdprt_sgemm_bias(..., %c, %ldc, %bias_ptr) : (...) -> ()
    // becomes
    func.call @fsdprt_sgemm(..., %c, %ldc) : (...) -> ()
    linalg.generic {indexing_maps = [(d0, d1) -> (d1), (d0, d1) -> (d0, d1)], ...}
        ins(%bias : memref<6xf32>) outs(%c_buffer : memref<4x6xf32>) {...}
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect"];
}

def FSDPInsertStreamEventsPass : Pass<"fsdp-cuda-insert-stream-events", "::mlir::ModuleOp"> {
  let summary = "Orders the GPU streams of the step by events from the buffer plan";
  let description = [{
    On the CUDA target kernels and GEMMs run on a compute stream, all-gathers
    on a second stream, reduce-scatters and all-reduces on a third
    (docs/Runtime.md, section 7). After `fsdp-assign-buffers` every buffer
    of the step is a fixed byte range of the arena, so each op's reads and
    writes are known ranges. For every pair of ops on different streams that
    touch overlapping bytes, one of them writing, the later one must wait for
    the earlier: this pass records an event on the earlier op's stream right
    after it and makes the later op's stream wait for it, unless the streams
    are already ordered (transitively, through earlier events or a collective's
    `fsdprt_wait`, which makes the compute stream wait for the collective).
    The cases that arise: an arena region must be free (its last kernel done)
    before a gather on another stream overwrites it, and a gradient must be
    computed before its reduce-scatter reads it.

    ```mlir
    linalg.generic ... outs(%view_64 : memref<256x256xf32>)   // last reader of [4096, 266240)
    call @fsdprt_event_record(%c3_i32, %c0_i32) : (i32, i32) -> ()
    ...
    call @fsdprt_stream_wait_event(%c1_i32, %c3_i32) : (i32, i32) -> ()
    %h = call @fsdprt_all_gather_start(...)                   // writes [4096, 135168)
    ```

    Event ids are numbered in program order from 0; each is recorded once per
    step.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect"];
}

def FSDPSplitReductionsPass : Pass<"fsdp-cuda-split-reductions", "::mlir::ModuleOp"> {
  let summary = "Splits sums of whole large tensors, and column sums, into per-chunk partial sums, then their sum";
  let description = [{
    A GPU reduces a whole tensor in one block of threads at best, one of its
    multiprocessors. On tensors, before bufferization, each `linalg.generic`
    that reduces a one-dimensional tensor of at least `min-elements` into one
    value (the gradient norm's sum of squares over a unit's shard) is split
    by upstream `linalg::splitReduction`: the input is viewed as
    `chunks x (n / chunks)` (`chunks` the largest divisor of `n` that leaves
    at least `chunk-elements` per chunk, at most `max-chunks`), a first op
    reduces each contiguous chunk into a partial (one block each on the GPU),
    a second sums the partials. The buffer plan counts the partials. A
    reduction whose combiner has no neutral element, or a size with no such
    divisor, stays as it is. Only the CUDA target runs it: the CPU's sum keeps
    its order.

    A column sum (a single f32 output, its reduction loops first and its
    parallel loops after them, a body that reads no loop index: a norm's
    gain gradient, a bias gradient) gets a thread per column from
    `fsdp-cuda-form-kernels`, which would add every row in order. One of more
    than `column-max-rows` rows has its reduction loops collapsed into one
    loop over the rows (where every operand holds them side by side), split
    into `chunks x (rows / chunks)`: the fewest chunks that divide the rows,
    keep at most `column-max-rows` rows a chunk and make at least
    `column-min-threads` (chunk, column) threads, with at least
    `column-min-rows` rows a chunk (the most chunks short of the threads
    otherwise). A first op sums each chunk of each column (a thread each,
    neighbouring threads on neighbouring columns), a second the chunks of
    each column in order: the same bits every run.

    ```mlir
    linalg.generic {iterator_types = ["reduction", "reduction", "parallel"]}
        ins(%dy, %x : tensor<8x2048x2048xbf16>, ...) outs(%init : tensor<2048xf32>) ...
    // becomes (16,384 rows: 64 chunks of 256, 131,072 threads)
    %rows = tensor.collapse_shape %dy [[0, 1], [2]] ... into tensor<16384x2048xbf16>
    %chunks = tensor.expand_shape %rows [[0, 1], [2]] ... into tensor<64x256x2048xbf16>
    %partial = linalg.generic {iterator_types = ["parallel", "reduction", "parallel"]}
        ins(%chunks, ...) outs(%zeros : tensor<64x2048xf32>) ...
    linalg.generic {iterator_types = ["reduction", "parallel"]}
        ins(%partial : tensor<64x2048xf32>) outs(%init : tensor<2048xf32>) ...
    ```

    ```mlir
    linalg.generic {iterator_types = ["reduction"]}
        ins(%g : tensor<1048576xf32>) outs(%init : tensor<f32>) ...
    // becomes
    %chunks = tensor.expand_shape %g [[0, 1]] ... into tensor<256x4096xf32>
    %partial = linalg.generic {iterator_types = ["parallel", "reduction"]}
        ins(%chunks ...) outs(%zeros : tensor<256xf32>) ...
    linalg.generic {iterator_types = ["reduction"]}
        ins(%partial : tensor<256xf32>) outs(%init : tensor<f32>) ...
    ```
  }];
  let options = [
    Option<"minElements", "min-elements", "int64_t", /*default=*/"65536",
           "Reductions of fewer elements stay whole">,
    Option<"chunkElements", "chunk-elements", "int64_t", /*default=*/"4096",
           "Fewest elements per chunk">,
    Option<"maxChunks", "max-chunks", "int64_t", /*default=*/"4096",
           "Most chunks (partial sums)">,
    Option<"columnMaxRows", "column-max-rows", "int64_t", /*default=*/"256",
           "Most rows a thread of a column sum adds in order">,
    Option<"columnMinRows", "column-min-rows", "int64_t", /*default=*/"16",
           "Fewest rows a chunk of a column sum keeps">,
    Option<"columnMinThreads", "column-min-threads", "int64_t", /*default=*/"65536",
           "Threads a split column sum aims for: every multiprocessor of an H100 about twice over">,
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def FSDPPreciseGpuMathPass : Pass<"fsdp-cuda-precise-math", "::mlir::ModuleOp"> {
  let summary = "IEEE-rounded square roots in GPU kernels unless the plan allows approximate math";
  let description = [{
    `convert-gpu-to-nvvm` lowers `math.sqrt` and `math.rsqrt` to libdevice,
    which the NVVM target compiles to the approximate `sqrt.approx` and
    `rsqrt.approx`. This pass (run on the outlined kernels, before that
    lowering; `fsdp-cuda-pipeline` leaves it out when the plan sets
    `approximate_math = true`) replaces
    them in every `gpu.module`: f32 and f64 `math.sqrt` by a call of
    libdevice's correctly rounded `__nv_fsqrt_rn` / `__nv_dsqrt_rn`
    (`sqrt.rn`), and `math.rsqrt` by `1.0 /` that (`div.rn`), as the CPU
    target computes them.

    ```mlir
    %r = math.rsqrt %v : f32
    // becomes
    %s = llvm.call @__nv_fsqrt_rn(%v) : (f32) -> f32
    %r = arith.divf %one, %s : f32
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::LLVM::LLVMDialect",
  ];
}

def FSDPMarkRowProloguesPass : Pass<"fsdp-cuda-mark-row-prologues", "::mlir::ModuleOp"> {
  let summary = "Marks the elementwise ops a block reduction's kernel will run first";
  let description = [{
    `fsdp-cuda-form-kernels` runs an elementwise op on buffers in the kernel
    of the block reduction right after it (a residual add before a norm's
    sum of squares: one pass over the row instead of two kernels) only when
    what the reduction writes overlaps nothing the op reads or writes, since
    the reduction's blocks store while other blocks still compute the op.
    The buffer plan would often place the reduction's output over an input
    the op reads last. This pass, before `fsdp-assign-buffers`, marks each
    such op of the step `fsdp.row_prologue`; the plan then keeps the op's
    operands live until the reduction (`lib/Analysis/BufferLiveness.cpp`),
    a few bytes per row more at that point of the step.

    ```mlir
    linalg.generic {...} ins(%x, %y : ...) outs(%h : memref<2x64x256xbf16>) {...}
    linalg.fill ins(%zero : f32) outs(%sum : memref<2x64xf32>)
    linalg.generic {iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%h : memref<2x64x256xbf16>) outs(%sum : memref<2x64xf32>) {...}
    // the first generic gains {fsdp.row_prologue}
    ```
  }];
}

def FSDPFormKernelsPass : Pass<"fsdp-cuda-form-kernels", "::mlir::ModuleOp"> {
  let summary = "Turns the step's compute into parallel loop nests, one per GPU kernel";
  let description = [{
    Prepares the compute of `fsdp_train_step` on buffers for the upstream
    GPU mapping (`gpu-map-parallel-loops`, `convert-parallel-loops-to-gpu`):
    every `linalg` op and `memref.copy` becomes a kernel-shaped loop nest,
    and no kernel runs on a single thread.

    - A `memref.copy` becomes a `linalg.copy`; the loops of a `linalg.generic`
      are interchanged so that its parallel dimensions come first.
    - An op without reductions is an `scf.parallel` over its dimensions.
      Each thread takes the adjacent elements of the last dimension that make
      `vector-bytes` bytes (16: a vector load or store) of the smallest
      element it accesses contiguously along that dimension, as many as
      divide it: the loop goes over runs of that many, the body is repeated
      for each element of a run, and each buffer read or written contiguously
      along the row is one `vector.load` (where the run's first element was
      loaded) and one `vector.store` (where its last was stored). Other
      accesses (a value of the row's, a transposed input) stay per element,
      as does the arithmetic, so the results are the same bits. An aligned
      vector access is one 16-byte instruction on the GPU (`.v4`); LLVM splits
      one it cannot prove aligned.
    - A reduction keeps its running values in registers (`scf.for` with
      `iter_args`) and stores each output once; a `linalg.fill` just before
      it that only starts it becomes its first value, and no kernel of its
      own. A full reduction, and a reduction of at least 64 contiguous
      elements per output whose combiner is `addf`, `mulf`, `maximumf`,
      `minimumf`, `maxnumf` or `minnumf`, is a block per output whose threads
      each fold a strided slice, then combine in a `gpu.all_reduce` (a fixed
      tree: the result is the same every run, a reassociation of the CPU's
      sum); thread 0 stores. Other reductions get a thread per output.
    - A scalar (rank-0) op is done by thread 0 of the full reduction just
      before it, or else computed by every thread of the kernels just after
      it that read it (the first of them stores it).
    - A sequential scatter-add (an embedding gradient) gets a thread per
      column, which adds the rows in order.
    - Parallel nests are collapsed to one dimension; a run of consecutive
      nests that touch no byte another of them writes (by the buffer plan's
      byte ranges) becomes one kernel over their index spaces end to end,
      and a matrix product of the compute stream that touches none of their
      bytes does not break the run; a run stops before 4 KiB of kernel
      parameters, and before the same in-place update of another identical
      unit. Consecutive block reductions of one shape merge when independent
      (or, in one block, when the later folds read nothing the earlier one
      wrote).
    - An elementwise op right after a reduction whose leading loops are the
      reduced rows runs in its kernel: the block's threads (or, for a row of
      at most 64 elements, the row's thread) go through the row with the
      result in hand.
    - An elementwise op right before a block reduction over the same loops
      that reads its results at its own point (a residual add before a
      norm's sum of squares) runs in the reduction's kernel: each thread
      computes and stores the elements it folds and folds them as computed,
      when what the reduction writes touches no byte the op reads or writes
      (`fsdp-cuda-mark-row-prologues` keeps the buffer plan from placing it
      there).
    - Each nest is tiled by `block-size`: the outer loop becomes the blocks,
      the inner one the threads of a block, and an `scf.if` guards the last,
      partial block.
    - An `scf.for` that calls the runtime (the attention's key blocks, whose
      products are library calls) stays on the host: the work of its body
      becomes kernels as above, launched once per iteration.

    ```mlir
    linalg.generic {iterator_types = ["parallel"]} ins(%a : memref<1000xf32>) ...
    // becomes 250 threads of 4 adjacent elements each
    scf.parallel (%block) = (%c0) to (%c250) step (%c250) {
      scf.parallel (%thread) = (%c0) to (%c250) step (%c1) {
        %i = arith.muli (%block + %thread), %c4 : index
        %x = vector.load %a[%i] : memref<1000xf32>, vector<4xf32>
        ... 4 x (vector.extract, arith.mulf) ...
        vector.store %y, %b[%i] : memref<1000xf32>, vector<4xf32>
      }
    }
    // and a sum of %a into memref<f32>
    scf.parallel (%block) = (%c0) to (%c1) step (%c1) {
      scf.parallel (%thread) = (%c0) to (%c256) step (%c1) {
        %partial = scf.for %i = %thread to %c1000 step %c256 iter_args(%s = %zero) ...
        %sum = gpu.all_reduce add %partial uniform {} : (f32) -> f32
        scf.if %thread_is_0 { ... memref.store ... }
      }
    }
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block">,
    Option<"vectorBytes", "vector-bytes", "int64_t", /*default=*/"16",
           "Bytes of adjacent elements a thread of an elementwise kernel "
           "takes, for vector loads and stores (a power of two; 1 gives "
           "every thread one element)">,
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def FSDPBundleKernelsPass : Pass<"fsdp-cuda-bundle-kernels", "::mlir::ModuleOp"> {
  let summary = "Puts every outlined kernel in one GPU module, launched on the compute stream";
  let description = [{
    After `gpu-kernel-outlining`, moves every kernel of the step into one
    `gpu.module @fsdp_kernels` (so the device code is compiled once per
    architecture, into one binary the runtime loads once), keeps one of
    identical kernels (the same op on the same shapes, as in every block of a
    deep model: each distinct kernel is compiled once and launched for every
    block), names them `fsdp_kernel_<n>` in launch order, and launches each on
    the runtime's compute stream, fetched once at the start of the step. The stream stands
    for an async token each launch depends on, so that `gpu-to-llvm` launches
    on it without creating a stream or synchronising:

    ```mlir
    %stream = call @fsdprt_stream(%c0_i32) : (i32) -> !llvm.ptr
    %compute = builtin.unrealized_conversion_cast %stream : !llvm.ptr to !gpu.async.token
    %t = gpu.launch_func async [%compute] @fsdp_kernels::@fsdp_kernel_0 blocks in (...) threads in (...) args(...)
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
  ];
}

def FSDPRecordKernelOriginsPass
    : Pass<"fsdp-cuda-record-kernel-origins", "::mlir::ModuleOp"> {
  let summary = "Records where in the model each kernel comes from, for the runtime's errors";
  let description = [{
    After `fsdp-cuda-bundle-kernels`, writes the global `fsdp_kernel_origins`:
    a line per kernel of `gpu.module @fsdp_kernels`, its name, a tab and the
    distinct source locations of its ops (`file:line:col`, in the order its
    body first uses them, at most four, then `...`). A kernel shared by
    identical blocks has the first block's. The runtime names a kernel with
    them when the device reports an error in it (`--debug-sync`), so that a
    fault points at the model's lines, not only at `fsdp_kernel_29`:

    ```mlir
    llvm.mlir.global external constant @fsdp_kernel_origins("fsdp_kernel_0\09gpt.mlir:26:3\0A...\00")
    ```

    A module without kernels gets an empty table.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def FSDPWriteKernelTablePass
    : Pass<"fsdp-cuda-write-kernel-table", "::mlir::ModuleOp"> {
  let summary = "Writes what each kernel of the step does and its predicted time, as JSON";
  let description = [{
    After `gpu-kernel-outlining`, writes a JSON table of the step's kernels
    (`fsdpc --kernels=FILE`): for each kernel and launch shape, its places in
    the model, its launches per step (a launch in a host loop counts once per
    iteration), grid and block, the bytes it reads and writes, its
    floating-point operations, the iterations of the longest loop chain a
    thread runs in order (`serial_trips`, and whether each iteration loads
    what the one before stored: `memory_carried`), its roofline time and its
    predicted time on the device profile (`KernelCost.h`: the roofline over
    the share of the multiprocessors its blocks occupy, or its serial chain
    at the profile's latency per iteration, whichever is longer, plus a
    launch), then a summary by kind:

    ```json
    {"profile": "h200", "multiprocessors": 132,
     "kernels": [{"name": "fsdp_kernel_29", "kind": "thread reduction",
                  "origin": ["llama.mlir:175:10"], "launches": 4,
                  "grid": [514, 1, 1], "block": [256, 1, 1],
                  "bytes_read": 4202496, "bytes_written": 2099200, "flops": 4063232,
                  "serial_trips": 2048, "memory_carried": false,
                  "roofline_seconds": 1.6e-06, "predicted_seconds": 1.5e-04}, ...],
     "summary": [{"kind": "thread reduction", "kernels": 3, "launches": 9, ...}, ...]}
    ```

    A thread's bytes are its loads and stores, each executed once per
    iteration of the loops around it, by the threads its guards admit (a
    fused kernel's parts, a partial last block: comparisons of one index with
    constants); a buffer's bytes are at most its size (threads that read the
    same element read it from cache). The kinds: `scatter` (a memory-carried
    chain), `block reduction` (threads combining in a `gpu.all_reduce`),
    `thread reduction` (a loop a thread runs in order), `elementwise`.
  }];
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"-\"",
           "The file to write (- for standard output)">,
    Option<"deviceProfile", "device-profile", "std::string", /*default=*/"\"h100-sxm\"",
           "The device profile the kernels are priced on (a name or a file)">,
  ];
}

def FSDPPackFatbinPass : Pass<"fsdp-cuda-pack-fatbin", "::mlir::ModuleOp"> {
  let summary = "Packs the cubins of every target architecture into one fatbin";
  let description = [{
    `gpu-module-to-binary` (format `bin`) leaves one cubin per
    `#nvvm.target` in each `gpu.binary`; the runtime loads one image. This
    pass runs the CUDA toolkit's `fatbinary` to pack them into one fat binary
    that holds the code of every architecture (the driver picks the one of
    the device), and replaces the objects by that single `fatbin` object.
  }];
  let options = [
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"/usr/local/cuda\"",
           "The CUDA toolkit holding bin/fatbinary">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def FSDPSinkKernelViewsPass : Pass<"fsdp-cuda-sink-kernel-views", "::mlir::ModuleOp"> {
  let summary = "Makes each view a kernel cannot take as a bare pointer, and each constant, inside the kernel";
  let description = [{
    The CUDA pipeline passes each memref to a kernel as a bare pointer
    (`convert-gpu-to-nvvm`'s `use-bare-ptr-memref-call-conv` and
    `gpu-to-llvm`'s `use-bare-pointers-for-kernels`): one 8-byte parameter
    instead of a descriptor of two pointers, the offset, the sizes and the
    strides. The kernel knows the rest from the memref's type, which must
    then be static. Every buffer of the plan is a static view of the arena;
    a view made from one at an offset a host loop computes (the attention's
    key block) is not. Before outlining, this pass clones each such view
    (a side-effect-free view-like op: subview, reshape, cast) into the
    `gpu.launch` that uses it, until the launch takes only static memrefs:
    the kernel gets the view's source and the loop's index instead. A launch
    that would still take another memref is an error.

    Each launch also gets its own copy of every constant it uses.
    `gpu-launch-sink-index-computations` would do the same one launch at a
    time, replacing a constant's uses in that launch by walking all of them:
    the step's constants are shared by thousands of launches (Llama-2-70B's
    CUDA step), which made that pass quadratic.

    ```mlir
    scf.for %kb = %c0 to %c32 step %c16 {
      %blk = memref.subview %buf[0, %kb, 0] [16, 16, 16] [1, 1, 1]
          : memref<16x32x16xf32> to memref<16x16x16xf32, strided<[512, 16, 1], offset: ?>>
      gpu.launch ... {
        memref.store %v, %blk[%i, %j, %k] : memref<16x16x16xf32, strided<[512, 16, 1], offset: ?>>
      }
    }
    // becomes
    scf.for %kb = %c0 to %c32 step %c16 {
      gpu.launch ... {
        %blk = memref.subview %buf[0, %kb, 0] [16, 16, 16] [1, 1, 1] : ...
        memref.store %v, %blk[%i, %j, %k] : ...
      }
    }
    ```
  }];
}

def FSDPAnnotateKernelArgumentsPass
    : Pass<"fsdp-cuda-annotate-kernel-arguments", "::mlir::ModuleOp"> {
  let summary = "Alignment and noalias of the kernels' pointer parameters, from the buffer plan";
  let description = [{
    After `fsdp-cuda-bundle-kernels`, and before `fsdp-outline-kernels` hides
    where the launches' memrefs come from: every memref a kernel takes is a
    static view of the step's arena (its first argument), 64-byte aligned,
    at a byte offset the buffer plan chose (or a reshape, cast or subview of
    one: the same pointer). For each parameter of each `gpu.func`, over every
    `gpu.launch_func` of it (identical kernels of identical blocks are one):

    - `llvm.align`: the largest power of two up to 64 dividing the byte
      offset of what every launch passes;
    - `llvm.noalias`: when no launch passes it bytes of the arena another of
      its memref parameters also gets (two views of one buffer, an update
      in place, are not noalias; nor is anything this pass cannot trace to a
      static view of the arena).

    With them the NVPTX backend loads the buffers a kernel only reads
    through the read-only data cache (`ld.global.nc`) and merges accesses to
    adjacent elements into vector ones where the alignment allows.

    ```mlir
    gpu.launch_func @fsdp_kernels::@k blocks in (...) threads in (...)
        args(%x : memref<64xf32>, %y : memref<64xf32>)   // views at bytes 256 and 320
    gpu.func @k(%arg0: memref<64xf32>, %arg1: memref<64xf32>) kernel
    // becomes
    gpu.func @k(%arg0: memref<64xf32> {llvm.align = 64 : i64, llvm.noalias},
                %arg1: memref<64xf32> {llvm.align = 64 : i64, llvm.noalias}) kernel
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def FSDPNarrowKernelIndicesPass : Pass<"fsdp-cuda-narrow-kernel-indices", "::mlir::ModuleOp"> {
  let summary = "32-bit index arithmetic in GPU modules whose index values all fit";
  let description = [{
    `convert-gpu-to-nvvm` makes `index` as wide as the GPU module's data
    layout says, 64 bits by default. This pass gives a `gpu.module` a 32-bit
    index (`dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>`) when every index
    value of every kernel in it provably fits a signed 32-bit integer, by
    upstream's integer range analysis: from the known block and grid sizes
    of each kernel, and for a parameter of type index from the ranges of what
    every `gpu.launch_func` passes (the same analysis of the host code, a
    host loop's bounds). Besides, an unsigned operation must see no negative
    index, and the largest element offset of each memref type in the module
    must fit (accesses are in bounds). Otherwise the module stays 64-bit.
    Run after `fsdp-cuda-bundle-kernels` with affine ops lowered in the kernels,
    before the host's launches are outlined and before structured control
    flow is lowered (loop bounds bound the induction variables).

    Addresses stay 64-bit: kernels get bare pointers (the arena of a large
    model is far beyond 2^31 bytes) and add each access's element offset to
    them sign-extended. The kernels must take memrefs as bare pointers: a
    descriptor's offset, sizes and strides are index values, which the host
    passes at 64 bits. A kernel's index parameters become `i32`, and each
    launch passes `arith.index_cast` of its value to `i32`, so that both
    sides agree.

    ```mlir
    gpu.module @fsdp_kernels {
      gpu.func @k(%arg0: memref<4x32xf32>, %arg1: index) kernel ...
    }
    // becomes
    gpu.module @fsdp_kernels attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>} {
      gpu.func @k(%arg0: memref<4x32xf32>, %arg1: i32) kernel {
        %0 = arith.index_cast %arg1 : i32 to index
        ...
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

#endif // FSDP_CODEGEN_CUDA_PASSES_TD
