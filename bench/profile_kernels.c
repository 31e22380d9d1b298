/*===- profile_kernels.c - The CPU device profile's MPI kernels -----------===//
//
// The measurements of bench/measure_cpu_profile.py that need every rank busy
// at once or an MPI collective. The script compiles this file with
// `mpicc -O3 -march=native -ffp-contract=off` into a temporary directory and
// runs it under `mpirun -np R`; rank 0 prints one JSON object on stdout.
//
//   profile_kernels stream MIB REPS      STREAM copy/scale/add/triad on float
//                                        arrays of MIB MiB each, per rank
//   profile_kernels footprints MAX REPS  STREAM triad on arrays of 16 KiB to MAX
//                                        bytes in all, per rank, each size
//                                        repeated from cache where it fits
//   profile_kernels vector REPS          float mul+add (and fmaf), division
//                                        and square root, scalar mul+add and
//                                        dependent addition throughput on
//                                        L1-resident arrays, per rank
//   profile_kernels call REPS            a 16-element loop called through a
//                                        non-inlined function: its time
//   profile_kernels collectives POOL REPS
//                                        MPI_Iallgather (in place) and
//                                        MPI_Ireduce_scatter_block (f32 sum)
//                                        of 8 B to POOL bytes in all, each
//                                        size on one buffer, call after call
//
// Every rank runs the same kernel at the same time (a barrier before each
// repetition) because the profile's rates are per rank with all ranks of the
// node busy: they share the memory bus and the last-level cache. A
// repetition's time is the slowest rank's (MPI_MAX), the result the median
// over the repetitions.
//
// -ffp-contract=off: the compiler's generated loops multiply and add with
// separate arith ops and no fast-math flags, which LLVM does not fuse, so the
// elementwise rate is measured on separate multiplies and adds; the fmaf
// variant is reported alongside for comparison only.
//
//===----------------------------------------------------------------------===*/

#include <mpi.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, ranks;

static void fail(const char *message) {
  if (rank == 0)
    fprintf(stderr, "profile_kernels: error: %s\n", message);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

static void *alloc(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
    fail("out of memory");
  return p;
}

static int compareDoubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *values, int n) {
  qsort(values, (size_t)n, sizeof(double), compareDoubles);
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/// The time of one repetition of `run` on every rank at once: the slowest
/// rank's, so that a rate derived from it holds for all ranks together.
static double timeAll(void (*run)(void *), void *state) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  run(state);
  double mine = MPI_Wtime() - start, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/// The median over `reps` repetitions (after one untimed one: page faults,
/// cold caches, lazy MPI connections).
static double medianTime(void (*run)(void *), void *state, int reps) {
  double *times = alloc(sizeof(double) * (size_t)reps);
  timeAll(run, state);
  for (int r = 0; r < reps; ++r)
    times[r] = timeAll(run, state);
  double result = median(times, reps);
  free(times);
  return result;
}

/*===----------------------------------------------------------------------===//
// stream: memory bandwidth
//===----------------------------------------------------------------------===*/

// The four STREAM kernels on float arrays, written as plain loops like the
// generated linalg loops (no non-temporal stores: LLVM emits none there
// either, so every store also reads its cache line first; that traffic is
// not counted, as the compiler's byte counts do not count it).
struct Stream {
  float *a, *b, *c;
  size_t n;
};

static void streamCopy(void *p) {
  struct Stream *s = p;
  for (size_t i = 0; i < s->n; ++i)
    s->c[i] = s->a[i];
}

static void streamScale(void *p) {
  struct Stream *s = p;
  for (size_t i = 0; i < s->n; ++i)
    s->b[i] = 3.0f * s->c[i];
}

static void streamAdd(void *p) {
  struct Stream *s = p;
  for (size_t i = 0; i < s->n; ++i)
    s->c[i] = s->a[i] + s->b[i];
}

static void streamTriad(void *p) {
  struct Stream *s = p;
  for (size_t i = 0; i < s->n; ++i)
    s->a[i] = s->b[i] + 3.0f * s->c[i];
}

static void runStream(int mib, int reps) {
  struct Stream s;
  s.n = (size_t)mib * 1024 * 1024 / sizeof(float);
  s.a = alloc(s.n * sizeof(float));
  s.b = alloc(s.n * sizeof(float));
  s.c = alloc(s.n * sizeof(float));
  // First touch by the rank that uses the pages (and no page faults timed).
  for (size_t i = 0; i < s.n; ++i) {
    s.a[i] = 1.0f;
    s.b[i] = 2.0f;
    s.c[i] = 0.0f;
  }
  struct {
    const char *name;
    void (*run)(void *);
    int arrays; /* arrays read + arrays written */
  } kernels[] = {{"copy", streamCopy, 2},
                 {"scale", streamScale, 2},
                 {"add", streamAdd, 3},
                 {"triad", streamTriad, 3}};
  double bytesPerArray = (double)s.n * sizeof(float);
  if (rank == 0)
    printf("{\"mode\": \"stream\", \"ranks\": %d, \"array_bytes\": %.0f, \"reps\": %d",
           ranks, bytesPerArray, reps);
  for (int k = 0; k < 4; ++k) {
    double t = medianTime(kernels[k].run, &s, reps);
    if (rank == 0)
      printf(", \"%s\": {\"median_s\": %.9f, \"bytes_per_rank\": %.0f, "
             "\"bytes_per_s_per_rank\": %.6e}",
             kernels[k].name, t, kernels[k].arrays * bytesPerArray,
             kernels[k].arrays * bytesPerArray / t);
  }
  if (rank == 0)
    printf("}\n");
  free(s.a);
  free(s.b);
  free(s.c);
}

/*===----------------------------------------------------------------------===//
// footprints: the memory rate of a loop against the bytes it touches
//===----------------------------------------------------------------------===*/

// A generated loop whose operands were just written by the op before it finds
// them in cache when they fit: triad on the first n floats of each array,
// again and again, moves a footprint of 3 n floats at the rate of the cache
// level that holds it (the first, untimed repetition brings it in).
struct Footprint {
  struct Stream stream;
  int passes;
};

static void footprintPasses(void *p) {
  struct Footprint *f = p;
  for (int r = 0; r < f->passes; ++r)
    streamTriad(&f->stream);
}

static void runFootprints(size_t maxBytes, int reps) {
  struct Footprint f;
  size_t most = maxBytes / 3 / sizeof(float);
  f.stream.a = alloc(most * sizeof(float));
  f.stream.b = alloc(most * sizeof(float));
  f.stream.c = alloc(most * sizeof(float));
  for (size_t i = 0; i < most; ++i) {
    f.stream.a[i] = 1.0f;
    f.stream.b[i] = 2.0f;
    f.stream.c[i] = 0.0f;
  }
  if (rank == 0)
    printf("{\"mode\": \"footprints\", \"ranks\": %d, \"reps\": %d, \"sizes\": [", ranks, reps);
  for (size_t bytes = 16 * 1024; bytes <= maxBytes; bytes *= 2) {
    f.stream.n = bytes / 3 / sizeof(float);
    double moved = 3.0 * (double)f.stream.n * sizeof(float);
    // About 32 MiB moved per repetition: the barrier and the clock are noise.
    f.passes = (int)(32.0 * 1024 * 1024 / moved);
    f.passes = f.passes < 1 ? 1 : f.passes;
    double t = medianTime(footprintPasses, &f, reps) / f.passes;
    if (rank == 0)
      printf("%s\n  {\"footprint_bytes\": %.0f, \"bytes_per_s_per_rank\": %.6e}",
             bytes == 16 * 1024 ? "" : ",", moved, moved / t);
  }
  if (rank == 0)
    printf("]}\n");
  free(f.stream.a);
  free(f.stream.b);
  free(f.stream.c);
}

/*===----------------------------------------------------------------------===//
// vector: elementwise arithmetic on cache-resident data
//===----------------------------------------------------------------------===*/

// 2048 floats in and out (16 KiB in all): inside every x86 core's L1, so the
// loop is bound by arithmetic, not by loads and stores. Each element goes
// through kChain multiply-add steps: 2 * kChain arithmetic ops, the way a
// fused elementwise loop chains ops on one value. The steps depend on each
// other within an element, not across elements, so the vectorised loop keeps
// every pipe busy. The constants keep the values near 1 (no overflow, no
// subnormals).
enum { kVectorLength = 2048, kChain = 8, kPasses = 20000 };

struct Vector {
  float *x, *y;
  void (*pass)(const float *, float *);
};

static inline __attribute__((always_inline)) float mulAddChain(float v) {
  v = v * 0.999f + 0.001f;
  v = v * 1.001f - 0.001f;
  v = v * 0.998f + 0.002f;
  v = v * 1.002f - 0.002f;
  v = v * 0.997f + 0.003f;
  v = v * 1.003f - 0.003f;
  v = v * 0.996f + 0.004f;
  v = v * 1.004f - 0.004f;
  return v;
}

__attribute__((noinline)) static void mulAddPass(const float *restrict in, float *restrict out) {
  for (int i = 0; i < kVectorLength; ++i)
    out[i] = mulAddChain(in[i]);
}

__attribute__((noinline)) static void fmaPass(const float *restrict in, float *restrict out) {
  for (int i = 0; i < kVectorLength; ++i) {
    float v = in[i];
    v = fmaf(v, 0.999f, 0.001f);
    v = fmaf(v, 1.001f, -0.001f);
    v = fmaf(v, 0.998f, 0.002f);
    v = fmaf(v, 1.002f, -0.002f);
    v = fmaf(v, 0.997f, 0.003f);
    v = fmaf(v, 1.003f, -0.003f);
    v = fmaf(v, 0.996f, 0.004f);
    v = fmaf(v, 1.004f, -0.004f);
    out[i] = v;
  }
}

// Divisions and square roots run on a divider that takes several cycles per
// vector (Adam's update and the norms have one or two per element): each
// element goes through kChain divisions and kChain square roots, the values
// staying in [1, 2].
__attribute__((noinline)) static void dividePass(const float *restrict in, float *restrict out) {
  for (int i = 0; i < kVectorLength; ++i) {
    float v = in[i];
    for (int k = 0; k < kChain; ++k)
      v = sqrtf(2.0f / v) + 0.5f;
    out[i] = v;
  }
}

// A loop LLVM does not vectorise: the generated loop nest of a reduction
// along its innermost dimension adds into one accumulator in order (float
// addition does not reassociate without fast-math flags), so its body runs
// one element at a time. The same chain as mulAddPass, kept scalar.
__attribute__((noinline, optimize("no-tree-vectorize"))) static void
scalarPass(const float *restrict in, float *restrict out) {
  for (int i = 0; i < kVectorLength; ++i)
    out[i] = mulAddChain(in[i]);
}

// The accumulator itself: one addition after the other, each waiting for
// the one before (its latency, not the adder's throughput). One chain of
// 2 * kChain sweeps of the row per pass, so that a pass counts as many ops as
// the others.
__attribute__((noinline)) static void dependentPass(const float *restrict in, float *restrict out) {
  float sum = 0.0f;
  for (int k = 0; k < 2 * kChain; ++k)
    for (int i = 0; i < kVectorLength; ++i)
      sum += in[i];
  for (int i = 0; i < kVectorLength; ++i)
    out[i] = in[i] + sum * 1e-12f;
}

// Each pass reads the previous one's output, so no pass can be skipped.
static void passes(void *p) {
  struct Vector *v = p;
  for (int r = 0; r < kPasses; r += 2) {
    v->pass(v->x, v->y);
    v->pass(v->y, v->x);
  }
}

/// The median time of kPasses of `pass`.
static double timePasses(struct Vector *v, void (*pass)(const float *, float *), int reps) {
  v->pass = pass;
  return medianTime(passes, v, reps);
}

static void runVector(int reps) {
  struct Vector v = {alloc(kVectorLength * sizeof(float)), alloc(kVectorLength * sizeof(float)),
                     NULL};
  for (int i = 0; i < kVectorLength; ++i)
    v.x[i] = v.y[i] = 1.0f + (float)i / kVectorLength;
  double ops = 2.0 * kChain * kVectorLength * (double)kPasses;
  double mulAdd = timePasses(&v, mulAddPass, reps);
  double fma = timePasses(&v, fmaPass, reps);
  // Divisions and square roots: 2 * kChain per element, the additions beside
  // them not counted (they run on other pipes).
  double divide = timePasses(&v, dividePass, reps);
  double scalar = timePasses(&v, scalarPass, reps);
  double dependent = timePasses(&v, dependentPass, reps);
  // Print a value so that the work cannot be optimised away.
  double check = 0;
  for (int i = 0; i < kVectorLength; ++i)
    check += v.x[i];
  if (rank == 0)
    printf("{\"mode\": \"vector\", \"ranks\": %d, \"reps\": %d, \"ops_per_rep\": %.0f, "
           "\"mul_add\": {\"median_s\": %.9f, \"ops_per_s_per_rank\": %.6e}, "
           "\"fma\": {\"median_s\": %.9f, \"ops_per_s_per_rank\": %.6e}, "
           "\"divide_sqrt\": {\"median_s\": %.9f, \"ops_per_s_per_rank\": %.6e}, "
           "\"scalar\": {\"median_s\": %.9f, \"ops_per_s_per_rank\": %.6e}, "
           "\"dependent\": {\"median_s\": %.9f, \"ops_per_s_per_rank\": %.6e}, "
           "\"check\": %.3f}\n",
           ranks, reps, ops, mulAdd, ops / mulAdd, fma, ops / fma, divide, ops / divide, scalar,
           ops / scalar, dependent, ops / dependent, check);
  free(v.x);
  free(v.y);
}

/*===----------------------------------------------------------------------===//
// call: the fixed cost of a tiny generated loop
//===----------------------------------------------------------------------===*/

// A generated loop nest is an outlined function called with buffer
// addresses; this is the smallest one: 16 elements through a function
// pointer the compiler cannot see through.
enum { kTinyLength = 16, kCalls = 100000 };

__attribute__((noinline)) static void tinyLoop(const float *restrict in, float *restrict out) {
  for (int i = 0; i < kTinyLength; ++i)
    out[i] = in[i] * 0.5f + 1.0f;
}

static void (*volatile tinyLoopPointer)(const float *, float *) = tinyLoop;

static void tinyCalls(void *p) {
  float *buffers = p;
  for (int r = 0; r < kCalls; ++r)
    tinyLoopPointer(buffers + (r & 1) * kTinyLength, buffers + (~r & 1) * kTinyLength);
}

static void runCall(int reps) {
  float *buffers = alloc(2 * kTinyLength * sizeof(float));
  for (int i = 0; i < 2 * kTinyLength; ++i)
    buffers[i] = 1.0f;
  double t = medianTime(tinyCalls, buffers, reps);
  if (rank == 0)
    printf("{\"mode\": \"call\", \"ranks\": %d, \"reps\": %d, \"elements\": %d, "
           "\"seconds_per_call\": %.6e}\n",
           ranks, reps, kTinyLength, t / kCalls);
  free(buffers);
}

/*===----------------------------------------------------------------------===//
// collectives: latency and bandwidth between the ranks
//===----------------------------------------------------------------------===*/

// The calls the CPU runtime makes (runtime/lib/cpu/MpiCollectives.cpp): a
// nonblocking collective and its wait, the all-gather in place (a rank's shard
// is its block of the full buffer), the reduce-scatter a float sum. S is the
// total (gathered, or reduced) size in bytes; each rank owns S / ranks.
//
// Each call works on the same S bytes, as a step meets its collectives: a
// reduce-scatter's input is the unit's flat gradient, which backward has just
// written, and an all-gather's shard was last written by the optimizer and
// its gathered buffer by the ops before it, all in cache where the step's
// working set fits, out of it beyond the cache's size. (A step whose working
// set is larger than the cache finds a mid-sized gather out of cache, up to
// 3x slower here than measured; prefetch hides those gathers.) The buffers
// are `poolBytes` long, at least twice the last-level cache (the script sees
// to it), so that the largest messages show the rates out of cache.
struct Collective {
  char *full, *shard;
  size_t poolBytes, totalBytes;
  int calls;
  int gather; /* 1: all-gather, 0: reduce-scatter */
};

static void collectiveCalls(void *p) {
  struct Collective *c = p;
  size_t shardBytes = c->totalBytes / (size_t)ranks;
  for (int r = 0; r < c->calls; ++r) {
    char *full = c->full, *shard = c->shard;
    MPI_Request request;
    if (c->gather)
      MPI_Iallgather(MPI_IN_PLACE, (int)shardBytes, MPI_BYTE, full, (int)shardBytes, MPI_BYTE,
                     MPI_COMM_WORLD, &request);
    else
      MPI_Ireduce_scatter_block(full, shard, (int)(shardBytes / sizeof(float)), MPI_FLOAT,
                                MPI_SUM, MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  }
}

static void runCollectives(size_t poolBytes, int reps) {
  struct Collective c;
  c.poolBytes = poolBytes;
  c.full = alloc(poolBytes);
  c.shard = alloc(poolBytes / (size_t)ranks);
  // Finite floats everywhere (the reduce-scatter sums them), and every page
  // touched before anything is timed.
  for (size_t i = 0; i < poolBytes / sizeof(float); ++i)
    ((float *)c.full)[i] = 1.0f;
  memset(c.shard, 0, poolBytes / (size_t)ranks);
  if (rank == 0)
    printf("{\"mode\": \"collectives\", \"ranks\": %d, \"reps\": %d, \"pool_bytes\": %zu, "
           "\"sizes\": [",
           ranks, reps, poolBytes);
  int first = 1;
  // Powers of two from one float per rank up to the pool: every shard a whole
  // number of floats.
  for (size_t bytes = sizeof(float) * (size_t)ranks; bytes <= poolBytes; bytes *= 2) {
    c.totalBytes = bytes;
    // Enough calls per repetition (about 4 MiB moved, at most 1000 calls) that
    // the barrier and the clock are noise against a small message's time.
    c.calls = (int)(4.0 * 1024 * 1024 / (double)bytes);
    c.calls = c.calls < 1 ? 1 : c.calls > 1000 ? 1000 : c.calls;
    c.gather = 1;
    double gather = medianTime(collectiveCalls, &c, reps) / c.calls;
    c.gather = 0;
    double reduce = medianTime(collectiveCalls, &c, reps) / c.calls;
    if (rank == 0)
      printf("%s\n  {\"bytes\": %zu, \"calls\": %d, \"all_gather_s\": %.9e, "
             "\"reduce_scatter_s\": %.9e}",
             first ? "" : ",", bytes, c.calls, gather, reduce);
    first = 0;
  }
  if (rank == 0)
    printf("]}\n");
  free(c.full);
  free(c.shard);
}

/*===----------------------------------------------------------------------===*/

static int positive(const char *text) {
  char *end = NULL;
  long value = strtol(text, &end, 10);
  if (!*text || *end || value < 1 || value > (1L << 30))
    fail("expected a positive integer argument");
  return (int)value;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "stream") && argc == 4)
    runStream(positive(argv[2]), positive(argv[3]));
  else if (!strcmp(mode, "footprints") && argc == 4)
    runFootprints((size_t)positive(argv[2]), positive(argv[3]));
  else if (!strcmp(mode, "vector") && argc == 3)
    runVector(positive(argv[2]));
  else if (!strcmp(mode, "call") && argc == 3)
    runCall(positive(argv[2]));
  else if (!strcmp(mode, "collectives") && argc == 4)
    runCollectives((size_t)positive(argv[2]), positive(argv[3]));
  else
    fail("usage: profile_kernels stream MIB REPS | footprints MAX_BYTES REPS | vector REPS | call REPS | "
         "collectives POOL_BYTES REPS");
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
