/*===- FakeModel.c - A hand-written stand-in for an fsdpc object ----------===*
 *
 * What fsdpc will emit for a softmax classifier, written by hand: the manifest
 * and a training step (forward, backward, SGD with momentum) working in place
 * on the arena, with its matrix products through fsdprt_sgemm. Linked with
 * libfsdprt_main and libfsdprt it is a complete trainer, which the end-to-end
 * tests (trainer_test.py) drive.
 *
 *   logits = x . w + b          x: [16, 8] f32, w: [8, 4], b: [4]
 *   loss   = mean_i cross_entropy(logits_i, y_i)     y: [16] i32 < 4
 *
 * It also checks the runtime's side of the contract and aborts when it is
 * broken: a 64-byte aligned arena, steps counting 1, 2, 3, ..., optimizer state
 * zero before the first step, classes within their bound.
 *
 *===----------------------------------------------------------------------===*/

#include "fsdprt/fsdprt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kBatch = 16, kFeatures = 8, kClasses = 4 };

/* Arena layout (bytes). The scratch buffers after the inputs are the step's
 * own temporaries: the manifest does not list them, but arena_bytes covers
 * them, as it will for generated code. */
enum {
  kWeightOffset = 0,          /* linear.w [8, 4] f32: 128 bytes */
  kBiasOffset = 128,          /* linear.b [4] f32: 16 bytes */
  kWeightMomentumOffset = 192,
  kBiasMomentumOffset = 320,
  kFeaturesOffset = 384,      /* [16, 8] f32: 512 bytes */
  kClassesOffset = 896,       /* [16] i32: 64 bytes */
  kProbsOffset = 960,         /* scratch [16, 4] f32: 256 bytes */
  kWeightGradOffset = 1216,   /* scratch [8, 4] f32: 128 bytes */
  kBiasGradOffset = 1344,     /* scratch [4] f32: 16 bytes */
  kArenaBytes = 1408,
};

static const float kMomentum = 0.9f;
static const float kWeightDecay = 0.0f;

const char fsdp_manifest[] =
    "{\n"
    "  \"version\": 1,\n"
    "  \"arena_bytes\": 1408,\n"
    "  \"batch\": 16,\n"
    "  \"grid\": [1],\n"
    "  \"strategy\": \"full_shard\",\n"
    "  \"optimizer\": {\"kind\": \"sgd\", \"lr\": 0.1, \"momentum\": 0.9, \"weight_decay\": 0.0},\n"
    "  \"clip_grad_norm\": 0.0,\n"
    "  \"params\": [\n"
    "    {\"name\": \"linear.w\", \"shape\": [8, 4], \"dtype\": \"f32\", \"unit\": \"linear\",\n"
    "     \"trainable\": true, \"init\": {\"kind\": \"fan_in_uniform\", \"scale\": 1.0},\n"
    "     \"offset\": 0, \"bytes\": 128},\n"
    "    {\"name\": \"linear.b\", \"shape\": [4], \"dtype\": \"f32\", \"unit\": \"linear\",\n"
    "     \"trainable\": true, \"init\": {\"kind\": \"normal\", \"mean\": 0.0, \"std\": 0.1},\n"
    "     \"offset\": 128, \"bytes\": 16}\n"
    "  ],\n"
    "  \"state\": [\n"
    "    {\"param\": \"linear.w\", \"slot\": \"momentum\", \"offset\": 192, \"bytes\": 128},\n"
    "    {\"param\": \"linear.b\", \"slot\": \"momentum\", \"offset\": 320, \"bytes\": 16}\n"
    "  ],\n"
    "  \"inputs\": [\n"
    "    {\"index\": 0, \"shape\": [16, 8], \"dtype\": \"f32\", \"role\": \"features\",\n"
    "     \"offset\": 384, \"bytes\": 512},\n"
    "    {\"index\": 1, \"shape\": [16], \"dtype\": \"i32\", \"role\": \"classes\", \"bound\": 4,\n"
    "     \"offset\": 896, \"bytes\": 64}\n"
    "  ]\n"
    "}\n";

static void contractBroken(const char *what, long long detail) {
  fprintf(stderr, "fake model: runtime broke the contract: %s (%lld)\n", what, detail);
  abort();
}

static int allZero(const unsigned char *bytes, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (bytes[i] != 0)
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

float fsdp_train_step(void *arena, int64_t step, float lr) {
  static int64_t lastStep = 0;
  unsigned char *base = (unsigned char *)arena;
  if ((size_t)base % 64 != 0)
    contractBroken("arena not 64-byte aligned", (long long)((size_t)base % 64));
  if (step != lastStep + 1)
    contractBroken("steps must count 1, 2, 3, ...; got step", (long long)step);
  lastStep = step;
  if (step == 1 && !allZero(base + kWeightMomentumOffset, kFeaturesOffset - kWeightMomentumOffset))
    contractBroken("optimizer state not zero before step 1", 0);
  if (step == 1 && !allZero(base + kProbsOffset, kArenaBytes - kProbsOffset))
    contractBroken("scratch not zero before step 1", 0);

  float *w = (float *)(base + kWeightOffset);
  float *b = (float *)(base + kBiasOffset);
  float *wMomentum = (float *)(base + kWeightMomentumOffset);
  float *bMomentum = (float *)(base + kBiasMomentumOffset);
  const float *x = (const float *)(base + kFeaturesOffset);
  const int32_t *y = (const int32_t *)(base + kClassesOffset);
  float *probs = (float *)(base + kProbsOffset);
  float *wGrad = (float *)(base + kWeightGradOffset);
  float *bGrad = (float *)(base + kBiasGradOffset);

  /* Forward: probs = softmax(x . w + b); loss = mean(-log probs[y]). */
  fsdprt_sgemm(0, 0, kBatch, kClasses, kFeatures, 1.0f, x, kFeatures, w, kClasses, 0.0f, probs,
               kClasses);
  float loss = 0.0f;
  for (int i = 0; i < kBatch; ++i) {
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
  loss /= kBatch;

  /* Backward: dlogits = (probs - onehot(y)) / batch, in place in probs. */
  for (int i = 0; i < kBatch; ++i) {
    probs[i * kClasses + y[i]] -= 1.0f;
    for (int c = 0; c < kClasses; ++c)
      probs[i * kClasses + c] /= kBatch;
  }
  /* dw = x^T . dlogits ([8, 16] . [16, 4]); db = sum over the batch. */
  fsdprt_sgemm(1, 0, kFeatures, kClasses, kBatch, 1.0f, x, kFeatures, probs, kClasses, 0.0f,
               wGrad, kClasses);
  memset(bGrad, 0, kClasses * sizeof(float));
  for (int i = 0; i < kBatch; ++i)
    for (int c = 0; c < kClasses; ++c)
      bGrad[c] += probs[i * kClasses + c];

  sgdUpdate(w, wMomentum, wGrad, kFeatures * kClasses, lr);
  sgdUpdate(b, bMomentum, bGrad, kClasses, lr);
  return loss;
}
