//===- OnednnMatmul.cpp - Products on oneDNN's matmul ---------------------===//
//
// One oneDNN CPU engine and stream per process, and one matmul primitive per
// distinct product: creating a primitive JIT-compiles its kernels (about a
// millisecond), running it costs the product alone. A step calls the same few
// shapes every time, so the primitives are kept for the life of the process.
//
// fsdprt's row-major matrices with row strides and transposes are oneDNN
// memory descriptors with explicit strides (a transposed A is the M x K matrix
// of strides {1, lda}), a batch is a leading dimension of stride stride_a,
// stride_b, stride_c: no copies. alpha is the primitive's output scale and
// beta * C its sum post-op, so that alpha * sum + beta * C is computed in f32
// from the f32 accumulator and, for bf16, rounded once when stored; with beta
// == 0 there is no sum post-op and C is never read.
//
//===----------------------------------------------------------------------===//

#include "cpu/OnednnMatmul.h"

#include "abi/Error.h"

#include <cblas.h>
#include <dnnl.hpp>
#include <dnnl_debug.h>
#include <omp.h>

#include <array>
#include <cstring>
#include <map>
#include <mutex>

namespace fsdprt {

namespace {

using dnnl::memory;

/// What makes two products need different primitives: the kernels (and so
/// the element type), the shape and strides, alpha and beta, and the
/// threads. alpha and beta are in it because oneDNN 2.6 takes a sum
/// post-op's scale only when the primitive is created, and a run-time output
/// scale (DNNL_RUNTIME_F32_VAL) makes it leave its fastest kernels (brgemm)
/// for its generic jit gemm; a step uses a handful of (alpha, beta) pairs (1
/// and 0 mostly). The thread count is in it because oneDNN splits the work
/// for the threads it has when the primitive is created.
using Key = std::array<int64_t, 16>;

int32_t floatBits(float value) {
  int32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

Key keyOf(OnednnKernels kernels, const GemmBatch &p, float alpha, float beta, int threads) {
  const GemmShape &g = p.gemm;
  bool batched = p.batch > 1;
  int64_t strideA = batched ? p.strideA : 0, strideB = batched ? p.strideB : 0,
          strideC = batched ? p.strideC : 0;
  return {static_cast<int64_t>(kernels), g.transA, g.transB, g.m, g.n, g.k, g.lda, g.ldb, g.ldc,
          p.batch, strideA, strideB, strideC, floatBits(alpha), floatBits(beta), threads};
}

/// A rows x cols matrix of `type` whose element (i, j) is at i * rowStride +
/// j * colStride, matrix b of a batch at b * batchStride (no batch dimension
/// when batch is 1).
memory::desc matrix(memory::data_type type, const GemmBatch &p, int64_t rows, int64_t cols,
                    int64_t rowStride, int64_t colStride, int64_t batchStride) {
  if (p.batch == 1)
    return memory::desc({rows, cols}, type, {rowStride, colStride});
  return memory::desc({p.batch, rows, cols}, type, {batchStride, rowStride, colStride});
}

/// Whether oneDNN's implementation `impl` (its impl_info_str) is one of
/// `kernels`.
bool usable(OnednnKernels kernels, const char *impl) {
  if (kernels == OnednnKernels::F32Brgemm)
    return std::strncmp(impl, "brg:", 4) == 0;
  return std::strncmp(impl, "ref", 3) != 0;
}

/// A product's primitive and its operands (whose addresses change from call
/// to call); no primitive when oneDNN has none for it.
struct Matmul {
  std::optional<dnnl::matmul> primitive;
  memory a, b, c;
};

/// The process's engine, stream and primitives. The trainer calls the
/// products from one thread; the lock only keeps the cache consistent if
/// another thread ever calls one.
struct Context {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::mutex mutex;
  std::map<Key, Matmul> primitives;
};

Context &context() {
  static Context instance;
  return instance;
}

/// oneDNN runs on OpenMP threads (Debian builds it so), OpenBLAS on its own:
/// both use openblas_get_num_threads() (OPENBLAS_NUM_THREADS, else the
/// cores), so that `mpirun -np 2` with OPENBLAS_NUM_THREADS=1 runs one thread
/// per rank for both, and the paths compare at the same thread count. The
/// count belongs to the calling thread, which is the one that runs oneDNN.
int matchOpenblasThreads() {
  int threads = openblas_get_num_threads();
  if (omp_get_max_threads() != threads)
    omp_set_num_threads(threads);
  return threads;
}

/// The primitive descriptor of `p`, or an empty one when oneDNN has none of
/// `kernels` for it.
dnnl::matmul::primitive_desc describe(const dnnl::engine &engine, OnednnKernels kernels,
                                      const GemmBatch &p, float alpha, float beta) {
  const GemmShape &g = p.gemm;
  bool bf16 = kernels == OnednnKernels::Bf16Native;
  // Without bf16 instructions oneDNN emulates them: not a kernel of ours.
  if (bf16 && !onednnHasNativeBf16())
    return {};
  memory::data_type t = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  // Row-major A is M x K with strides {lda, 1}; transposed, it is stored
  // K x M, so element (i, p) is at p * lda + i.
  memory::desc a = g.transA ? matrix(t, p, g.m, g.k, 1, g.lda, p.strideA)
                            : matrix(t, p, g.m, g.k, g.lda, 1, p.strideA);
  memory::desc b = g.transB ? matrix(t, p, g.k, g.n, 1, g.ldb, p.strideB)
                            : matrix(t, p, g.k, g.n, g.ldb, 1, p.strideB);
  memory::desc c = matrix(t, p, g.m, g.n, g.ldc, 1, p.strideC);
  dnnl::primitive_attr attr;
  if (alpha != 1.0f)
    attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(beta);
    attr.set_post_ops(ops);
  }
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, engine,
                                    /*allow_empty=*/true);
    if (pd && usable(kernels, pd.impl_info_str()))
      return pd;
  } catch (const dnnl::error &) {
    // An argument oneDNN rejects: the caller computes the product itself.
  }
  return {};
}

Matmul create(const dnnl::engine &engine, OnednnKernels kernels, const GemmBatch &p, float alpha,
              float beta) {
  Matmul matmul;
  dnnl::matmul::primitive_desc pd = describe(engine, kernels, p, alpha, beta);
  if (!pd)
    return matmul;
  try {
    matmul.primitive = dnnl::matmul(pd);
  } catch (const dnnl::error &) {
    return matmul;
  }
  matmul.a = memory(pd.src_desc(), engine, DNNL_MEMORY_NONE);
  matmul.b = memory(pd.weights_desc(), engine, DNNL_MEMORY_NONE);
  matmul.c = memory(pd.dst_desc(), engine, DNNL_MEMORY_NONE);
  return matmul;
}

std::string isaName() {
  std::string name = dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa());
  const std::string prefix = "cpu_isa_";
  return name.compare(0, prefix.size(), prefix) == 0 ? name.substr(prefix.size()) : name;
}

} // namespace

bool onednnGemm(OnednnKernels kernels, const GemmBatch &product, float alpha, const void *a,
                const void *b, float beta, void *c) {
  Context &ctx = context();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  int threads = matchOpenblasThreads();
  Key key = keyOf(kernels, product, alpha, beta, threads);
  auto found = ctx.primitives.find(key);
  if (found == ctx.primitives.end())
    found = ctx.primitives.emplace(key, create(ctx.engine, kernels, product, alpha, beta)).first;
  Matmul &matmul = found->second;
  if (!matmul.primitive)
    return false;
  try {
    matmul.a.set_data_handle(const_cast<void *>(a));
    matmul.b.set_data_handle(const_cast<void *>(b));
    matmul.c.set_data_handle(c);
    matmul.primitive->execute(
        ctx.stream,
        {{DNNL_ARG_SRC, matmul.a}, {DNNL_ARG_WEIGHTS, matmul.b}, {DNNL_ARG_DST, matmul.c}});
    ctx.stream.wait();
  } catch (const dnnl::error &e) {
    fatal(std::string(kernels == OnednnKernels::Bf16Native ? "fsdprt_gemm_bf16" : "fsdprt_sgemm") +
          ": oneDNN matmul failed: " + e.what());
  }
  return true;
}

std::string onednnVersionAndIsa() {
  const dnnl_version_t *version = dnnl_version();
  return "oneDNN " + std::to_string(version->major) + "." + std::to_string(version->minor) + "." +
         std::to_string(version->patch) + ", " + isaName();
}

std::optional<std::string> onednnKernel(OnednnKernels kernels) {
  // The implementation oneDNN picks for a 64 x 64 x 64 product: for
  // F32Jit, which takes the products brgemm declines, one of those (padded
  // rows); for the others a plain one, what the step's products run on
  // (padded rows or gapped batches may run its gemm:jit instead, where
  // `kernels` takes it).
  auto probe = [kernels]() -> std::optional<std::string> {
    int64_t ld = kernels == OnednnKernels::F32Jit ? 65 : 64;
    GemmBatch square{GemmShape{0, 0, 64, 64, 64, ld, ld, ld}, 1, 0, 0, 0};
    dnnl::matmul::primitive_desc pd = describe(context().engine, kernels, square, 1.0f, 0.0f);
    if (!pd)
      return std::nullopt;
    return onednnVersionAndIsa() + " (" + pd.impl_info_str() + ")";
  };
  switch (kernels) {
  case OnednnKernels::F32Brgemm: {
    static const std::optional<std::string> brgemm = probe();
    return brgemm;
  }
  case OnednnKernels::F32Jit: {
    static const std::optional<std::string> jit = probe();
    return jit;
  }
  case OnednnKernels::Bf16Native: {
    static const std::optional<std::string> bf16 = probe();
    return bf16;
  }
  }
  return std::nullopt;
}

bool onednnHasNativeBf16() {
  auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  auto bf16 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_bf16);
  return (isa & bf16) == bf16;
}

} // namespace fsdprt
