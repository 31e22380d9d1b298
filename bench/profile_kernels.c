/*===- profile_kernels.c - The CPU device profile's MPI kernels -----------===//
//
// The measurements of bench/measure_cpu_profile.py that need every rank busy
// at once or an MPI collective. The script compiles this file with
// `mpicc -O3 -march=native -ffp-contract=off` into a temporary directory and
// runs it under `mpirun -np R`; rank 0 prints one JSON object on stdout.
//
//   profile_kernels stream MIB REPS      STREAM copy/scale/add/triad on float
//                                        arrays of MIB MiB each, per rank
//   profile_kernels vector REPS          float mul+add (and fmaf) throughput
//                                        on L1-resident arrays, per rank
//   profile_kernels call REPS            a 16-element loop called through a
//                                        non-inlined function: its time
//   profile_kernels collectives POOL REPS
//                                        MPI_Iallgather (in place) and
//                                        MPI_Ireduce_scatter_block (f32 sum)
//                                        of 8 B to POOL bytes in all, on
//                                        buffers cycling through POOL bytes
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
};

__attribute__((noinline)) static void mulAddPass(const float *restrict in, float *restrict out) {
  for (int i = 0; i < kVectorLength; ++i) {
    float v = in[i];
    v = v * 0.999f + 0.001f;
    v = v * 1.001f - 0.001f;
    v = v * 0.998f + 0.002f;
    v = v * 1.002f - 0.002f;
    v = v * 0.997f + 0.003f;
    v = v * 1.003f - 0.003f;
    v = v * 0.996f + 0.004f;
    v = v * 1.004f - 0.004f;
    out[i] = v;
  }
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

// Each pass reads the previous one's output, so no pass can be skipped.
static void mulAddPasses(void *p) {
  struct Vector *v = p;
  for (int r = 0; r < kPasses; r += 2) {
    mulAddPass(v->x, v->y);
    mulAddPass(v->y, v->x);
  }
}

static void fmaPasses(void *p) {
  struct Vector *v = p;
  for (int r = 0; r < kPasses; r += 2) {
    fmaPass(v->x, v->y);
    fmaPass(v->y, v->x);
  }
}

static void runVector(int reps) {
  struct Vector v = {alloc(kVectorLength * sizeof(float)), alloc(kVectorLength * sizeof(float))};
  for (int i = 0; i < kVectorLength; ++i)
    v.x[i] = v.y[i] = 1.0f + (float)i / kVectorLength;
  double ops = 2.0 * kChain * kVectorLength * (double)kPasses;
  double mulAdd = medianTime(mulAddPasses, &v, reps);
  double fma = medianTime(fmaPasses, &v, reps);
  // Print a value so that the work cannot be optimised away.
  double check = 0;
  for (int i = 0; i < kVectorLength; ++i)
    check += v.x[i];
  if (rank == 0)
    printf("{\"mode\": \"vector\", \"ranks\": %d, \"reps\": %d, \"ops_per_rep\": %.0f, "
           "\"mul_add\": {\"median_s\": %.9f, \"ops_per_s_per_rank\": %.6e}, "
           "\"fma\": {\"median_s\": %.9f, \"ops_per_s_per_rank\": %.6e}, \"check\": %.3f}\n",
           ranks, reps, ops, mulAdd, ops / mulAdd, fma, ops / fma, check);
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
// Each call works on the next S bytes of a pool of `poolBytes` (at least
// twice the last-level cache; the script sees to it), round robin, so that a
// call finds its buffers out of cache, as a trainer's collectives do: a
// unit's shard was last written by the previous step's optimizer, and its
// gathered parameters go to arena memory that other ops used since. (Calling
// it again on the same buffer would time cache-to-cache copies up to the
// cache's size, several times faster than a step sees.) A reduce-scatter is
// the other way round: its input is the unit's flat gradient, which backward
// has just written, so it reads the same buffer call after call, in cache up
// to the cache's size and out of it beyond, as a step does.
struct Collective {
  char *full, *shard;
  size_t poolBytes, totalBytes, next;
  int calls;
  int gather; /* 1: all-gather, 0: reduce-scatter */
};

static void collectiveCalls(void *p) {
  struct Collective *c = p;
  size_t shardBytes = c->totalBytes / (size_t)ranks;
  size_t slots = c->poolBytes / c->totalBytes;
  for (int r = 0; r < c->calls; ++r) {
    size_t slot = c->gather ? c->next++ % slots : 0;
    char *full = c->full + slot * c->totalBytes, *shard = c->shard + slot * shardBytes;
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
  c.next = 0;
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
  else if (!strcmp(mode, "vector") && argc == 3)
    runVector(positive(argv[2]));
  else if (!strcmp(mode, "call") && argc == 3)
    runCall(positive(argv[2]));
  else if (!strcmp(mode, "collectives") && argc == 4)
    runCollectives((size_t)positive(argv[2]), positive(argv[3]));
  else
    fail("usage: profile_kernels stream MIB REPS | vector REPS | call REPS | "
         "collectives POOL_BYTES REPS");
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
