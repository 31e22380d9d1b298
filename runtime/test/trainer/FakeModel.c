/*===- FakeModel.c - A hand-written stand-in for an fsdpc object ----------===*
 *
 * What fsdpc emits for a softmax classifier, written by hand: the manifest
 * (version 2) and a training step (forward, backward, SGD with momentum)
 * working in place on the arena, with its matrix products through
 * fsdprt_sgemm and its communication through the runtime's collectives.
 * Linked with libfsdprt_main and libfsdprt it is a complete trainer, which the
 * end-to-end tests (trainer_test.py) drive.
 *
 *   logits = x . w + b          x: [16, 8] f32, w: [8, 4], b: [4]
 *   loss   = mean_i cross_entropy(logits_i, y_i)     y: [16] i32 < 4
 *
 * Both parameters form one unit, "linear": w then b, 36 elements, padded so
 * that each of the FAKE_SHARD_RANKS ranks (1 by default, 2 for
 * fake-trainer-2) owns shard_numel = alignTo(ceil(36 / ranks), 16) of them
 * (docs/Sharding.md). Each rank trains on local_batch = 16 / ranks rows. A
 * step all-gathers the unit, computes on its rows, reduce-scatters (averages)
 * the unit's flat gradient and updates its own shard: FSDP's full_shard.
 *
 * With FAKE_TENSOR_RANKS = 2 (fake-trainer-t2 on grid [1], fake-trainer-2-t2
 * on grid [2]: 2 and 4 ranks), w is split along its columns (split_dim 1):
 * tensor index t holds w[:, 2t:2t+2], a block [8, 2], and b is replicated, so
 * the unit holds 20 elements. The step computes its block of the logits,
 * all-gathers the blocks over the tensor group (in tensor order: it never
 * needs its own index), and after the backward computes the whole of dw on
 * every tensor rank, whose reduce-scatter (an average of equal values,
 * exact) over the tensor group leaves each rank its block's gradient.
 * With FAKE_SPLIT_PARTS as well (fake-trainer-t2-parts, grid [1]), w's
 * columns are two parts of 2 (split_parts [2, 2], as a fused product's
 * weight), each cut into the 2 blocks: tensor index t holds columns t and
 * 2 + t.
 *
 * It also checks the runtime's side of the contract and aborts when it is
 * broken: a 64-byte aligned arena, steps counting 1, 2, 3, ..., gradient and
 * optimizer state zero and parameter padding zero before the first step,
 * classes within their bound.
 *
 *===----------------------------------------------------------------------===*/

#include "fsdprt/fsdprt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FAKE_SHARD_RANKS
#define FAKE_SHARD_RANKS 1
#endif
#ifndef FAKE_TENSOR_RANKS
#define FAKE_TENSOR_RANKS 1
#endif

/* Arena layout (bytes), one rank's. The persistent part holds the parameter
 * shard, the gradient shard, the momentum shard and the inputs; after it come
 * the step's own temporaries (the gathered unit, the probabilities, the flat
 * gradient), which arena_bytes covers exactly. */
#if FAKE_TENSOR_RANKS == 2
/* The step's tensor-parallel temporaries: this rank's block of the logits,
 * every block gathered (later dw whole, [8, 4]), dw by block [2][8][2]. */
#define TENSOR_FIELDS "  \"tensor_ranks\": 2,\n"
#ifdef FAKE_SPLIT_PARTS
#define W_SPLIT ", \"split_dim\": 1, \"split_parts\": [2, 2]"
/* Column j of block t in the whole: part j's t-th column. */
#define BLOCK_COLUMN(t, j) (2 * (j) + (t))
#else
#define W_SPLIT ", \"split_dim\": 1"
#define BLOCK_COLUMN(t, j) (kBlockClasses * (t) + (j))
#endif
#define W_SHAPE "[8, 2]"
#define UNIT_NUMEL 20
#define B_OFFSET 16
#define TENSOR_COLLECTIVES                                                                         \
  "                  {\"kind\": \"all_gather\", \"unit\": \"\"},\n"                                \
  "                  {\"kind\": \"reduce_scatter\", \"unit\": \"\"},\n"
#if FAKE_SHARD_RANKS == 1
#define GRID "[1]"
#define LOCAL_BATCH 16
#define SHARD_NUMEL 32
#define GRAD_OFFSET 128
#define MOMENTUM_OFFSET 256
#define FEATURES_OFFSET 384 /* [16, 8] f32 */
#define FEATURES_BYTES 512
#define CLASSES_OFFSET 896 /* [16] i32 */
#define CLASSES_BYTES 64
#define PERSISTENT_BYTES 960
#define FULL_OFFSET 960       /* gathered unit: 32 f32 */
#define PROBS_OFFSET 1088     /* [16, 4] f32 */
#define FLAT_GRAD_OFFSET 1344 /* 32 f32 */
#define PARTIAL_OFFSET 1472   /* [16, 2] f32 */
#define GATHERED_OFFSET 1600  /* [2, 16, 2] f32 */
#define BLOCKS_OFFSET 1856    /* [2, 8, 2] f32 */
#define ARENA_BYTES 1984
#elif FAKE_SHARD_RANKS == 2
#define GRID "[2]"
#define LOCAL_BATCH 8
#define SHARD_NUMEL 16
#define GRAD_OFFSET 64
#define MOMENTUM_OFFSET 128
#define FEATURES_OFFSET 192 /* [8, 8] f32 */
#define FEATURES_BYTES 256
#define CLASSES_OFFSET 448 /* [8] i32 */
#define CLASSES_BYTES 32
#define PERSISTENT_BYTES 512
#define FULL_OFFSET 512      /* gathered unit: 2 x 16 f32 */
#define PROBS_OFFSET 640     /* [8, 4] f32 */
#define FLAT_GRAD_OFFSET 768 /* 2 x 16 f32 */
#define PARTIAL_OFFSET 896   /* [8, 2] f32 */
#define GATHERED_OFFSET 960  /* [2, 8, 2] f32 */
#define BLOCKS_OFFSET 1088   /* [2, 8, 2] f32 */
#define ARENA_BYTES 1216
#else
#error "FAKE_SHARD_RANKS must be 1 or 2"
#endif
#elif FAKE_TENSOR_RANKS != 1
#error "FAKE_TENSOR_RANKS must be 1 or 2"
#elif FAKE_SHARD_RANKS == 1
#define GRID "[1]"
#define LOCAL_BATCH 16
#define SHARD_NUMEL 48
#define GRAD_OFFSET 192
#define MOMENTUM_OFFSET 384
#define FEATURES_OFFSET 576 /* [16, 8] f32 */
#define FEATURES_BYTES 512
#define CLASSES_OFFSET 1088 /* [16] i32 */
#define CLASSES_BYTES 64
#define PERSISTENT_BYTES 1152
#define FULL_OFFSET 1152 /* gathered unit: 48 f32 */
#define PROBS_OFFSET 1344 /* [16, 4] f32 */
#define FLAT_GRAD_OFFSET 1600 /* 48 f32 */
#define ARENA_BYTES 1792
#elif FAKE_SHARD_RANKS == 2
#define GRID "[2]"
#define LOCAL_BATCH 8
#define SHARD_NUMEL 32
#define GRAD_OFFSET 128
#define MOMENTUM_OFFSET 256
#define FEATURES_OFFSET 384 /* [8, 8] f32 */
#define FEATURES_BYTES 256
#define CLASSES_OFFSET 640 /* [8] i32 */
#define CLASSES_BYTES 32
#define PERSISTENT_BYTES 704
#define FULL_OFFSET 704 /* gathered unit: 2 x 32 f32 */
#define PROBS_OFFSET 960 /* [8, 4] f32 */
#define FLAT_GRAD_OFFSET 1088 /* 2 x 32 f32 */
#define ARENA_BYTES 1344
#else
#error "FAKE_SHARD_RANKS must be 1 or 2"
#endif
#if FAKE_TENSOR_RANKS == 1
#define TENSOR_FIELDS ""
#define W_SPLIT ""
#define W_SHAPE "[8, 4]"
#define UNIT_NUMEL 36
#define B_OFFSET 32
#define TENSOR_COLLECTIVES ""
#endif
#define PARAM_OFFSET 0

enum {
  kBatch = 16,
  kFeatures = 8,
  kClasses = 4,
  kRanks = FAKE_SHARD_RANKS,
  kTensors = FAKE_TENSOR_RANKS,
  kBlockClasses = kClasses / kTensors, /* the columns of w a tensor rank holds */
  kLocalBatch = LOCAL_BATCH,
  kWeightNumel = kFeatures * kBlockClasses, /* linear.w's block at unit offset 0 */
  kUnitNumel = kWeightNumel + kClasses,     /* linear.b at unit offset 32 (16 split) */
  kShardNumel = SHARD_NUMEL,
  kFlatNumel = kRanks * kShardNumel,
};

/* The layout above, checked rather than trusted. */
_Static_assert(kLocalBatch * kRanks == kBatch, "local batch");
_Static_assert(kShardNumel % 16 == 0 && kFlatNumel >= kUnitNumel &&
                   kFlatNumel - kShardNumel < kUnitNumel,
               "shard size");
_Static_assert(GRAD_OFFSET == PARAM_OFFSET + 4 * kShardNumel, "gradient shard");
_Static_assert(MOMENTUM_OFFSET == GRAD_OFFSET + 4 * kShardNumel, "momentum shard");
_Static_assert(FEATURES_OFFSET == MOMENTUM_OFFSET + 4 * kShardNumel, "features");
_Static_assert(FEATURES_BYTES == 4 * kLocalBatch * kFeatures, "features bytes");
_Static_assert(CLASSES_OFFSET == FEATURES_OFFSET + FEATURES_BYTES, "classes");
_Static_assert(CLASSES_BYTES == 4 * kLocalBatch, "classes bytes");
_Static_assert(PERSISTENT_BYTES >= CLASSES_OFFSET + CLASSES_BYTES, "persistent");
_Static_assert(PROBS_OFFSET == FULL_OFFSET + 4 * kFlatNumel, "probabilities");
_Static_assert(FLAT_GRAD_OFFSET == PROBS_OFFSET + 4 * kLocalBatch * kClasses, "flat gradient");
_Static_assert(kUnitNumel == UNIT_NUMEL && kWeightNumel == B_OFFSET, "unit");
#if FAKE_TENSOR_RANKS == 1
_Static_assert(ARENA_BYTES == FLAT_GRAD_OFFSET + 4 * kFlatNumel, "arena");
#else
_Static_assert(PARTIAL_OFFSET == FLAT_GRAD_OFFSET + 4 * kFlatNumel, "block of the logits");
_Static_assert(GATHERED_OFFSET == PARTIAL_OFFSET + 4 * kLocalBatch * kBlockClasses, "gathered");
_Static_assert(BLOCKS_OFFSET == GATHERED_OFFSET + 4 * kLocalBatch * kClasses &&
                   kLocalBatch * kClasses >= kFeatures * kClasses,
               "dw by block (dw whole fits the gathered logits)");
_Static_assert(ARENA_BYTES == BLOCKS_OFFSET + 4 * kFeatures * kClasses, "arena");
#endif

static const float kMomentum = 0.9f;
static const float kWeightDecay = 0.0f;

#define STR_(x) #x
#define STR(x) STR_(x)

const char
    fsdp_manifest[] =
        "{\n"
        "  \"version\": 2,\n"
        "  \"arena_bytes\": " STR(
            ARENA_BYTES) ",\n"
                         "  \"persistent_bytes\": " STR(PERSISTENT_BYTES) ",\n"
                                                                          "  \"batch\": 16,\n"
                                                                          "  \"local_batch\": " STR(
                                                                              LOCAL_BATCH) ",\n"
                                                                                           "  "
                                                                                           "\"grid"
                                                                                           "\":"
                                                                                           " " GRID
                                                                                           ","
                                                                                           "\n" TENSOR_FIELDS
                                                                                           "  "
                                                                                           "\"strat"
                                                                                           "egy\": "
                                                                                           "\"full_"
                                                                                           "shard\""
                                                                                           ",\n"
                                                                                           "  "
                                                                                           "\"shard"
                                                                                           "_ranks"
                                                                                           "\":"
                                                                                           " " STR(FAKE_SHARD_RANKS) ",\n"
                                                                                                                     "  \"replicas\": 1,\n"
                                                                                                                     "  \"optimizer\": {\"kind\": \"sgd\", \"lr\": 0.1, \"momentum\": 0.9, \"weight_decay\": 0.0},\n"
                                                                                                                     "  \"clip_grad_norm\": 0.0,\n"
                                                                                                                     "  \"units\": [\n"
                                                                                                                     "    {\"name\": \"linear\", \"dtype\": \"f32\", \"trainable\": true, "
                                                                                                                     "\"numel\": " STR(
                                                                                                                         UNIT_NUMEL) ",\n"
                                                                                                                                     "     \"shard_numel\": " STR(SHARD_NUMEL) ", \"param_offset\": " STR(
                                                                                                                                         PARAM_OFFSET) ",\n"
                                                                                                                                                       "     \"grad_offset\": " STR(GRAD_OFFSET) ",\n"
                                                                                                                                                                                                 "     \"state\": [{\"slot\": \"momentum\", \"offset\": " STR(MOMENTUM_OFFSET) "}]}\n"
                                                                                                                                                                                                                                                                               "  ],\n"
                                                                                                                                                                                                                                                                               "  \"params\": [\n"
                                                                                                                                                                                                                                                                               "    {\"name\": \"linear.w\", \"shape\": " W_SHAPE
                                                                                                                                                                                                                                                                               ", \"dtype\": \"f32\", "
                                                                                                                                                                                                                                                                               "\"unit\": \"linear\",\n"
                                                                                                                                                                                                                                                                               "     \"trainable\": true, \"init\": {\"kind\": \"fan_in_uniform\", \"scale\": 1.0},\n"
                                                                                                                                                                                                                                                                               "     \"unit_offset\": 0" W_SPLIT
                                                                                                                                                                                                                                                                               "},\n"
                                                                                                                                                                                                                                                                               "    {\"name\": \"linear.b\", \"shape\": [4], \"dtype\": \"f32\", \"unit\": \"linear\",\n"
                                                                                                                                                                                                                                                                               "     \"trainable\": true, \"init\": {\"kind\": \"normal\", \"mean\": 0.0, \"std\": 0.1},\n"
                                                                                                                                                                                                                                                                               "     \"unit_offset\": " STR(B_OFFSET) "}\n"
                                                                                                                                                                                                                                                                                                                      "  ],\n"
                                                                                                                                                                                                                                                                                                                      "  \"inputs\": [\n"
                                                                                                                                                                                                                                                                                                                      "    {\"index\": 0, \"shape\": [" STR(LOCAL_BATCH) ", 8], \"dtype\": \"f32\", "
                                                                                                                                                                                                                                                                                                                                                                         "\"role\": \"features\",\n"
                                                                                                                                                                                                                                                                                                                                                                         "     \"offset\": " STR(
                                                                                                                                                                                                                                                                                                                                                                             FEATURES_OFFSET) ", \"bytes\": " STR(FEATURES_BYTES) "},\n"
                                                                                                                                                                                                                                                                                                                                                                                                                                  "    {\"index\": 1, \"shape\": [" STR(LOCAL_BATCH) "], \"dtype\": \"i32\", "
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                     "\"role\": \"classes\", \"bound\": 4,\n"
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                     "     \"offset\": " STR(CLASSES_OFFSET) ", \"bytes\": " STR(CLASSES_BYTES) "}\n"
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                "  ],\n"
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                "  \"collectives\": [{\"kind\": \"all_gather\", \"unit\": \"linear\"},\n" TENSOR_COLLECTIVES "                  {\"kind\": \"reduce_scatter\", \"unit\": \"linear\"}]\n"
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                "}\n";

static void contractBroken(const char *what, long long detail) {
  fprintf(stderr, "fake model: runtime broke the contract: %s (%lld)\n", what, detail);
  abort();
}

static int allZero(const void *bytes, size_t count) {
  const unsigned char *p = (const unsigned char *)bytes;
  for (size_t i = 0; i < count; ++i)
    if (p[i] != 0)
      return 0;
  return 1;
}

static void sgdUpdate(float *param, float *momentum, const float *grad, int count, float lr) {
  for (int i = 0; i < count; ++i) {
    float g = grad[i] + kWeightDecay * param[i];
    momentum[i] = kMomentum * momentum[i] + g;
    param[i] -= lr * momentum[i];
  }
}

#if FAKE_TENSOR_RANKS > 1
/* logits = x . w, of which this rank's block of w gives kBlockClasses
 * columns: the blocks of every tensor rank, gathered in tensor order, are the
 * logits' column blocks. */
static void tensorParallelLogits(unsigned char *base, const float *x, const float *w,
                                 float *logits) {
  float *partial = (float *)(base + PARTIAL_OFFSET);
  float *gathered = (float *)(base + GATHERED_OFFSET);
  fsdprt_sgemm(0, 0, kLocalBatch, kBlockClasses, kFeatures, 1.0f, x, kFeatures, w, kBlockClasses,
               0.0f, partial, kBlockClasses);
  fsdprt_wait(fsdprt_all_gather_start(partial, gathered, 4 * kLocalBatch * kBlockClasses,
                                      FSDPRT_GROUP_TENSOR));
  for (int t = 0; t < kTensors; ++t)
    for (int i = 0; i < kLocalBatch; ++i)
      for (int j = 0; j < kBlockClasses; ++j)
        logits[i * kClasses + BLOCK_COLUMN(t, j)] =
            gathered[(t * kLocalBatch + i) * kBlockClasses + j];
}

/* dw = x^T . dlogits, whole on every tensor rank (each has every column of
 * dlogits); laid out block by block, its reduce-scatter over the tensor group
 * (an average of equal values: exact) leaves each rank its block's. */
static void tensorParallelWeightGrad(unsigned char *base, const float *x, const float *dlogits,
                                     float *blockGrad) {
  float *whole = (float *)(base + GATHERED_OFFSET);
  float *blocks = (float *)(base + BLOCKS_OFFSET);
  fsdprt_sgemm(1, 0, kFeatures, kClasses, kLocalBatch, 1.0f, x, kFeatures, dlogits, kClasses, 0.0f,
               whole, kClasses);
  for (int t = 0; t < kTensors; ++t)
    for (int f = 0; f < kFeatures; ++f)
      for (int j = 0; j < kBlockClasses; ++j)
        blocks[(t * kFeatures + f) * kBlockClasses + j] = whole[f * kClasses + BLOCK_COLUMN(t, j)];
  fsdprt_wait(fsdprt_reduce_scatter_start(blocks, blockGrad, kWeightNumel, FSDPRT_DTYPE_F32,
                                          FSDPRT_REDUCE_AVG, FSDPRT_GROUP_TENSOR));
}
#endif

float fsdp_train_step(void *arena, int64_t step, float lr) {
  static int64_t lastStep = 0;
  unsigned char *base = (unsigned char *)arena;
  if ((size_t)base % 64 != 0)
    contractBroken("arena not 64-byte aligned", (long long)((size_t)base % 64));
  /* A resumed run starts after its checkpoint's step. */
  if (step < 1 || (lastStep != 0 && step != lastStep + 1))
    contractBroken("steps must count k, k + 1, k + 2, ... from k >= 1; got step", (long long)step);
  lastStep = step;
  if (step == 1 && !allZero(base + GRAD_OFFSET, FEATURES_OFFSET - GRAD_OFFSET))
    contractBroken("gradient or optimizer state not zero before step 1", 0);

  float *shard = (float *)(base + PARAM_OFFSET);
  float *gradShard = (float *)(base + GRAD_OFFSET);
  float *momentum = (float *)(base + MOMENTUM_OFFSET);
  const float *x = (const float *)(base + FEATURES_OFFSET);
  const int32_t *y = (const int32_t *)(base + CLASSES_OFFSET);
  float *full = (float *)(base + FULL_OFFSET);
  float *probs = (float *)(base + PROBS_OFFSET);
  float *flatGrad = (float *)(base + FLAT_GRAD_OFFSET);

  /* The whole unit, from every rank's shard. */
  fsdprt_wait(fsdprt_all_gather_start(shard, full, 4 * kShardNumel, FSDPRT_GROUP_SHARD));
  if (step == 1 && !allZero(full + kUnitNumel, 4 * (kFlatNumel - kUnitNumel)))
    contractBroken("parameter padding not zero before step 1", 0);
  const float *w = full;
  const float *b = full + kWeightNumel;

  /* Forward on this rank's rows: probs = softmax(x . w + b); loss = mean(-log probs[y]). */
#if FAKE_TENSOR_RANKS == 1
  fsdprt_sgemm(0, 0, kLocalBatch, kClasses, kFeatures, 1.0f, x, kFeatures, w, kClasses, 0.0f,
               probs, kClasses);
#else
  tensorParallelLogits(base, x, w, probs);
#endif
  float loss = 0.0f;
  for (int i = 0; i < kLocalBatch; ++i) {
    if (y[i] < 0 || y[i] >= kClasses)
      contractBroken("class out of range", y[i]);
    float *row = probs + i * kClasses;
    float max = -INFINITY;
    for (int c = 0; c < kClasses; ++c) {
      row[c] += b[c];
      if (row[c] > max)
        max = row[c];
    }
    float sum = 0.0f;
    for (int c = 0; c < kClasses; ++c)
      sum += expf(row[c] - max);
    loss += logf(sum) + max - row[y[i]];
    for (int c = 0; c < kClasses; ++c)
      row[c] = expf(row[c] - max) / sum;
  }
  loss /= kLocalBatch;

  /* Backward: dlogits = (probs - onehot(y)) / local_batch, in place in probs;
   * the average over the ranks below makes it the global batch's. */
  for (int i = 0; i < kLocalBatch; ++i) {
    probs[i * kClasses + y[i]] -= 1.0f;
    for (int c = 0; c < kClasses; ++c)
      probs[i * kClasses + c] /= kLocalBatch;
  }
  /* The flat gradient, laid out as the unit: dw = x^T . dlogits, db = the
   * sum over the rows, zero padding. */
  memset(flatGrad, 0, sizeof(float) * kFlatNumel);
#if FAKE_TENSOR_RANKS == 1
  fsdprt_sgemm(1, 0, kFeatures, kClasses, kLocalBatch, 1.0f, x, kFeatures, probs, kClasses, 0.0f,
               flatGrad, kClasses);
#else
  tensorParallelWeightGrad(base, x, probs, flatGrad);
#endif
  for (int i = 0; i < kLocalBatch; ++i)
    for (int c = 0; c < kClasses; ++c)
      flatGrad[kWeightNumel + c] += probs[i * kClasses + c];

  /* Each rank keeps the average of its shard's gradient, and updates its shard. */
  fsdprt_wait(fsdprt_reduce_scatter_start(flatGrad, gradShard, kShardNumel, FSDPRT_DTYPE_F32,
                                          FSDPRT_REDUCE_AVG, FSDPRT_GROUP_SHARD));
  sgdUpdate(shard, momentum, gradShard, kShardNumel, lr);
  return loss;
}
