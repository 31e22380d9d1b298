//===- CublasGemm.cpp - The step's matrix products on cuBLAS and cuBLASLt -===//
//
// fsdprt_sgemm(_batched) on cuBLAS, and fsdprt_gemm_bf16(_batched) and the
// f32 product with a bias epilogue (fsdprt_sgemm_bias) on cuBLASLt (fsdprt.h), on the compute stream, with the arguments checked
// first (GemmArguments.h). fsdprt.h's matrices are row-major and cuBLAS's
// column-major: a row-major M x N matrix C is the column-major N x M matrix
// C^T, and C^T = op(B)^T op(A)^T, so every call passes B before A, and N
// before M, with the same transposition flags and strides.
//
// cuBLASLt takes a product as descriptors (the operation, one layout per
// matrix) and an algorithm, which its heuristic chooses for them. Building
// them and asking the heuristic costs host time that a step calling the same
// few shapes every iteration should not pay each time: each distinct product
// (element type, compute type, epilogue, shape, transpositions, strides,
// batch, and how aligned its matrices and bias are, which limits the
// algorithms that can run it) gets its plan once, kept until cuBLAS is
// closed. Every algorithm may use one workspace of 32 MiB (what cuBLASLt
// recommends on Hopper), allocated when cuBLAS is opened: the step's products
// all run on the compute stream, one after another, so they can share it.
// cuBLAS's own products get it too (cublasSetWorkspace): left to itself,
// cuBLAS allocates a workspace of its own at a product's first call on a
// stream, which a CUDA graph's capture must not contain
// (lib/cuda/StepGraph.cpp).
//
//===----------------------------------------------------------------------===//

#include "abi/Device.h"
#include "abi/Error.h"
#include "abi/GemmArguments.h"
#include "cuda/CudaCheck.h"
#include "cuda/CudaDevice.h"
#include "fsdprt/fsdprt.h"

#include <cublasLt.h>

#include <climits>
#include <map>
#include <string>
#include <tuple>

namespace fsdprt {

namespace {

/// What a cuBLASLt product computes: D = alpha op(A) op(B) + beta C, or the
/// same plus a bias (CUBLASLT_EPILOGUE_BIAS).
enum class LtKind { Product, Bias };

/// What a cuBLASLt product's plan depends on: the element type of A, B, C
/// and the bias (CUDA_R_16BF or CUDA_R_32F), the compute type, the kind, the
/// row-major product as fsdprt.h gives it (a product that is not batched has
/// batch 1 and strides 0) and the alignment in bytes of its A, B, C and bias
/// (which cuBLASLt's heuristic reads from the bias pointer; 0 without one).
struct LtKey {
  cudaDataType_t type;
  cublasComputeType_t compute;
  LtKind kind;
  GemmShape gemm;
  int64_t batch, strideA, strideB, strideC;
  uint32_t alignA, alignB, alignC, alignBias;

  auto tied() const {
    return std::tie(type, compute, kind, gemm.transA, gemm.transB, gemm.m, gemm.n, gemm.k, gemm.lda,
                    gemm.ldb, gemm.ldc, batch, strideA, strideB, strideC, alignA, alignB, alignC,
                    alignBias);
  }
  bool operator<(const LtKey &other) const { return tied() < other.tied(); }
};

/// The descriptors of one product and the algorithm the heuristic chose
/// for them. `a` and `b` are cuBLAS's operands: fsdprt.h's B and A.
struct LtPlan {
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algorithm = {};
};

cublasHandle_t handle = nullptr;
cublasLtHandle_t ltHandle = nullptr;
cudaStream_t computeStream = nullptr;
void *workspace = nullptr;
constexpr size_t kWorkspaceBytes = size_t(32) << 20;
std::map<LtKey, LtPlan> plans;
/// The manifest's allow_tf32 (setAllowTf32), for the f32 products on
/// cuBLASLt, whose compute type says it instead of cuBLAS's math mode.
bool allowTf32 = false;

/// fp32 products in fp32 (no TF32 tensor cores), whatever cuBLAS's defaults
/// become; the bf16 products do not use this handle.
const cublasMath_t kExactMath = static_cast<cublasMath_t>(
    CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);

cublasOperation_t operation(int32_t trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

/// The handle, once the arguments of the product `what` are checked.
cublasHandle_t checkedHandle(const char *what, const GemmShape &gemm) {
  checkGemm(what, gemm, INT_MAX);
  openedDevice(what);
  return handle;
}

int64_t elementBytes(cudaDataType_t type) { return type == CUDA_R_32F ? 4 : 2; }

/// The alignment cuBLASLt may assume of every matrix of a batch at `base`,
/// `stride` elements of `bytes` apart: the largest power of two, up to 256
/// (its default, which it would otherwise assume), dividing all their
/// addresses.
uint32_t alignment(const void *base, int64_t batch, int64_t stride, int64_t bytes) {
  uintptr_t bits = reinterpret_cast<uintptr_t>(base) | 256;
  if (batch > 1)
    bits |= static_cast<uintptr_t>(stride * bytes);
  return static_cast<uint32_t>(bits & (~bits + 1));
}

/// A column-major layout of `rows` x `cols` elements of `type`, and of the
/// batch.
cublasLtMatrixLayout_t layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                              int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  FSDPRT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, static_cast<uint64_t>(rows),
                                                 static_cast<uint64_t>(cols), ld));
  if (batch != 1) {
    int32_t count = static_cast<int32_t>(batch);
    FSDPRT_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                         &count, sizeof(count)));
    FSDPRT_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return layout;
}

/// The product `key`, for an error: "bf16 product m = 3, n = 5, ...".
std::string describe(const LtKey &key) {
  const GemmShape &g = key.gemm;
  std::string text = key.type == CUDA_R_32F ? "f32 product " : "bf16 product ";
  if (key.kind == LtKind::Bias)
    text += "with a bias ";
  text += "m = " + std::to_string(g.m) + ", n = " + std::to_string(g.n) +
          ", k = " + std::to_string(g.k) + ", trans_a = " + std::to_string(g.transA) +
          ", trans_b = " + std::to_string(g.transB) + ", lda = " + std::to_string(g.lda) +
          ", ldb = " + std::to_string(g.ldb) + ", ldc = " + std::to_string(g.ldc);
  if (key.batch != 1)
    text += ", batch = " + std::to_string(key.batch) +
            ", stride_a = " + std::to_string(key.strideA) +
            ", stride_b = " + std::to_string(key.strideB) +
            ", stride_c = " + std::to_string(key.strideC);
  return text;
}

/// The bias pointer of `operation`'s epilogue.
void setBias(cublasLtMatmulDesc_t operation, const void *bias) {
  FSDPRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                     &bias, sizeof(bias)));
}

/// The descriptors of the product `key` (with `bias`, for one with a bias)
/// and cuBLASLt's best algorithm for them; none is fatal, naming the product
/// `what` and its shape.
LtPlan makePlan(const char *what, const LtKey &key, const void *bias) {
  const GemmShape &g = key.gemm;
  LtPlan plan;
  // fp32 (or TF32) products, and fp32 alpha and beta (host pointers, the
  // default mode).
  FSDPRT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.operation, key.compute, CUDA_R_32F));
  cublasOperation_t transA = operation(g.transB), transB = operation(g.transA);
  FSDPRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.operation, CUBLASLT_MATMUL_DESC_TRANSA,
                                                     &transA, sizeof(transA)));
  FSDPRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.operation, CUBLASLT_MATMUL_DESC_TRANSB,
                                                     &transB, sizeof(transB)));
  if (key.kind == LtKind::Bias) {
    // One bias element per row of cuBLAS's D (N x M), that is per column of
    // fsdprt.h's C, of C's type (the default bias type), added to the fp32
    // value before its one conversion to C's type. The heuristic reads the
    // pointer (not the data) for its alignment: the first call's pointer,
    // which the key's alignment stands for.
    uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    FSDPRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        plan.operation, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    setBias(plan.operation, bias);
  }
  // cuBLAS's A is fsdprt.h's B read column-major: N x K, or K x N to be
  // transposed; its B is fsdprt.h's A: K x M, or M x K; its C is N x M.
  plan.a =
      layout(key.type, g.transB ? g.k : g.n, g.transB ? g.n : g.k, g.ldb, key.batch, key.strideB);
  plan.b =
      layout(key.type, g.transA ? g.m : g.k, g.transA ? g.k : g.m, g.lda, key.batch, key.strideA);
  plan.c = layout(key.type, g.n, g.m, g.ldc, key.batch, key.strideC);

  cublasLtMatmulPreference_t preference = nullptr;
  FSDPRT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  uint64_t maxWorkspace = kWorkspaceBytes;
  FSDPRT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxWorkspace, sizeof(maxWorkspace)));
  // Split-K algorithms may add their partial sums in fp32 only (in the
  // workspace), never in bf16 (in the output, or in a workspace of the
  // output's type): every sum stays fp32 until the one rounding of the
  // result. (For f32 outputs both are fp32.)
  uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  FSDPRT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reductions, sizeof(reductions)));
  // cuBLASLt assumes 256-byte aligned matrices unless told: a view into a
  // buffer (a head's slice) may be less aligned.
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.alignB},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.alignA},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.alignC},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.alignC}};
  for (const auto &[attribute, bytes] : alignments)
    FSDPRT_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(preference, attribute, &bytes, sizeof(bytes)));

  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      ltHandle, plan.operation, plan.a, plan.b, plan.c, plan.c, preference, 1, &result, &found);
  FSDPRT_CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(preference));
  if (status != CUBLAS_STATUS_NOT_SUPPORTED)
    checkCublas(status, "cublasLtMatmulAlgoGetHeuristic(...)");
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
    fatal(std::string(what) + ": cuBLASLt has no algorithm for the " + describe(key) +
          " (cublasLtMatmulAlgoGetHeuristic found none)");
  plan.algorithm = result.algo;
  return plan;
}

void destroyPlan(const LtPlan &plan) {
  FSDPRT_CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(plan.c));
  FSDPRT_CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(plan.b));
  FSDPRT_CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(plan.a));
  FSDPRT_CUBLAS_CHECK(cublasLtMatmulDescDestroy(plan.operation));
}

/// A product on cuBLASLt, batched or not (batch 1), of checked arguments,
/// with its plan made at its first call; `bias` only for LtKind::Bias.
void ltGemm(const char *what, cudaDataType_t type, cublasComputeType_t compute, LtKind kind,
            const GemmShape &gemm, int64_t batch, float alpha, const void *a, int64_t strideA,
            const void *b, int64_t strideB, float beta, void *c, int64_t strideC,
            const void *bias) {
  int64_t bytes = elementBytes(type);
  LtKey key{type,
            compute,
            kind,
            gemm,
            batch,
            strideA,
            strideB,
            strideC,
            alignment(a, batch, strideA, bytes),
            alignment(b, batch, strideB, bytes),
            alignment(c, batch, strideC, bytes),
            kind == LtKind::Bias ? alignment(bias, 1, 0, bytes) : 0};
  auto found = plans.find(key);
  if (found == plans.end())
    found = plans.emplace(key, makePlan(what, key, bias)).first;
  const LtPlan &plan = found->second;
  // The bias may move between calls of the same plan (another layer's, of
  // the same shape): cublasLtMatmul reads the descriptor when it is called.
  if (kind == LtKind::Bias)
    setBias(plan.operation, bias);
  // C in place: D is C, with C's layout.
  FSDPRT_CUBLAS_CHECK(cublasLtMatmul(ltHandle, plan.operation, &alpha, b, plan.a, a, plan.b, &beta,
                                     c, plan.c, c, plan.c, &plan.algorithm, workspace,
                                     kWorkspaceBytes, computeStream));
}

/// A bf16 product, batched or not (batch 1), of checked arguments.
void bf16Gemm(const char *what, const GemmShape &gemm, int64_t batch, float alpha, const void *a,
              int64_t strideA, const void *b, int64_t strideB, float beta, void *c,
              int64_t strideC) {
  if (gemm.k == 0) {
    // No sum: C = beta C. cuBLAS defines a product with k = 0, cuBLASLt's
    // documentation does not; it is no step's hot path.
    for (int64_t i = 0; i < batch; ++i)
      FSDPRT_CUBLAS_CHECK(cublasGemmEx(handle, operation(gemm.transB), operation(gemm.transA),
                                       int(gemm.n), int(gemm.m), 0, &alpha, b, CUDA_R_16BF,
                                       int(gemm.ldb), a, CUDA_R_16BF, int(gemm.lda), &beta,
                                       static_cast<uint16_t *>(c) + i * strideC, CUDA_R_16BF,
                                       int(gemm.ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }
  ltGemm(what, CUDA_R_16BF, CUBLAS_COMPUTE_32F, LtKind::Product, gemm, batch, alpha, a, strideA, b,
         strideB, beta, c, strideC, nullptr);
}

} // namespace

void openCublas(cudaStream_t compute) {
  FSDPRT_CUBLAS_CHECK(cublasCreate(&handle));
  FSDPRT_CUBLAS_CHECK(cublasSetStream(handle, compute));
  FSDPRT_CUBLAS_CHECK(cublasSetMathMode(handle, kExactMath));
  FSDPRT_CUBLAS_CHECK(cublasLtCreate(&ltHandle));
  FSDPRT_CUDA_CHECK(cudaMalloc(&workspace, kWorkspaceBytes));
  // After cublasSetStream, which resets the handle to cuBLAS's own pool.
  FSDPRT_CUBLAS_CHECK(cublasSetWorkspace(handle, workspace, kWorkspaceBytes));
  computeStream = compute;
  allowTf32 = false; // as kExactMath
}

void closeCublas() {
  for (const auto &entry : plans)
    destroyPlan(entry.second);
  plans.clear();
  FSDPRT_CUBLAS_CHECK(cublasLtDestroy(ltHandle));
  ltHandle = nullptr;
  FSDPRT_CUBLAS_CHECK(cublasDestroy(handle));
  handle = nullptr;
  // Once no handle holds it.
  FSDPRT_CUDA_CHECK(cudaFree(workspace));
  workspace = nullptr;
  computeStream = nullptr;
  allowTf32 = false;
}

void setAllowTf32(bool allow) {
  openedDevice("setAllowTf32");
  // TF32 tensor cores round fp32 products' inputs to 10 bits of mantissa
  // (sums stay fp32): several times faster, and what the manifest's
  // allow_tf32 asks for. cuBLAS's math mode covers fsdprt_sgemm(_batched);
  // fsdprt_sgemm_bias, on cuBLASLt, takes it as its compute type. The bf16
  // products are not affected.
  FSDPRT_CUBLAS_CHECK(cublasSetMathMode(handle, allow ? CUBLAS_TF32_TENSOR_OP_MATH : kExactMath));
  allowTf32 = allow;
}

} // namespace fsdprt

using namespace fsdprt;

/// Every product runs on the compute stream.
static void afterProduct(const char *what) {
  afterDeviceWork(what, deviceStream(what, FSDPRT_STREAM_COMPUTE));
}

extern "C" void fsdprt_sgemm(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k,
                             float alpha, const float *a, int64_t lda, const float *b,
                             int64_t ldb, float beta, float *c, int64_t ldc) {
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  cublasHandle_t cublas = checkedHandle("fsdprt_sgemm", gemm);
  if (gemm.empty())
    return;
  FSDPRT_CUBLAS_CHECK(cublasSgemm(cublas, operation(trans_b), operation(trans_a), int(n), int(m),
                                  int(k), &alpha, b, int(ldb), a, int(lda), &beta, c, int(ldc)));
  afterProduct("fsdprt_sgemm");
}

extern "C" void fsdprt_sgemm_batched(int32_t trans_a, int32_t trans_b, int64_t batch,
                                     int64_t m, int64_t n, int64_t k, float alpha,
                                     const float *a, int64_t lda, int64_t stride_a,
                                     const float *b, int64_t ldb, int64_t stride_b,
                                     float beta, float *c, int64_t ldc, int64_t stride_c) {
  const char *what = "fsdprt_sgemm";
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  checkGemmBatch(what, gemm, batch, stride_a, stride_b, stride_c, INT_MAX);
  cublasHandle_t cublas = checkedHandle(what, gemm);
  if (gemm.empty() || batch == 0)
    return;
  FSDPRT_CUBLAS_CHECK(cublasSgemmStridedBatched(
      cublas, operation(trans_b), operation(trans_a), int(n), int(m), int(k), &alpha, b,
      int(ldb), stride_b, a, int(lda), stride_a, &beta, c, int(ldc), stride_c, int(batch)));
  afterProduct("fsdprt_sgemm_batched");
}

extern "C" void fsdprt_gemm_bf16(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n,
                                 int64_t k, float alpha, const void *a, int64_t lda,
                                 const void *b, int64_t ldb, float beta, void *c, int64_t ldc) {
  const char *what = "fsdprt_gemm_bf16";
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  checkedHandle(what, gemm);
  if (gemm.empty())
    return;
  bf16Gemm(what, gemm, 1, alpha, a, 0, b, 0, beta, c, 0);
  afterProduct(what);
}

extern "C" void fsdprt_gemm_bf16_batched(int32_t trans_a, int32_t trans_b, int64_t batch, int64_t m,
                                         int64_t n, int64_t k, float alpha, const void *a,
                                         int64_t lda, int64_t stride_a, const void *b, int64_t ldb,
                                         int64_t stride_b, float beta, void *c, int64_t ldc,
                                         int64_t stride_c) {
  const char *what = "fsdprt_gemm_bf16_batched";
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  checkGemmBatch(what, gemm, batch, stride_a, stride_b, stride_c, INT_MAX);
  checkedHandle(what, gemm);
  if (gemm.empty() || batch == 0)
    return;
  bf16Gemm(what, gemm, batch, alpha, a, stride_a, b, stride_b, beta, c, stride_c);
  afterProduct(what);
}

/// fsdprt.h's rule: cuBLASLt's bias epilogue loads the bias in 16-byte
/// vectors, and no preference tells its heuristic the bias's alignment, so a
/// less aligned bias would be a misaligned-address fault on the GPU. The
/// compiler adds such a bias in a kernel of its own
/// (fsdp-cuda-split-unaligned-biases).
static constexpr uintptr_t kBiasAlignment = 16;

static void checkBiasAlignment(const char *what, const void *bias) {
  if (reinterpret_cast<uintptr_t>(bias) % kBiasAlignment != 0)
    fatal(std::string(what) + ": the bias is not " + std::to_string(kBiasAlignment) +
          "-byte aligned, as cuBLASLt's bias epilogue needs (the compiler adds a less aligned "
          "bias after fsdprt_sgemm instead)");
}

extern "C" void fsdprt_sgemm_bias(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k,
                                  float alpha, const float *a, int64_t lda, const float *b,
                                  int64_t ldb, float beta, float *c, int64_t ldc,
                                  const float *bias) {
  const char *what = "fsdprt_sgemm_bias";
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  checkGemm(what, gemm, INT_MAX);
  // (k = 0 is refused: cuBLASLt does not define a product without a sum.)
  checkBias(what, gemm, bias);
  openedDevice(what);
  if (gemm.empty())
    return;
  checkBiasAlignment(what, bias);
  // TF32 rounds the inputs, as cuBLAS's math mode does for fsdprt_sgemm.
  ltGemm(what, CUDA_R_32F, allowTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
         LtKind::Bias, gemm, 1, alpha, a, 0, b, 0, beta, c, 0, bias);
  afterProduct(what);
}
