//===- sgemm_bench.cpp - OpenBLAS sgemm GFLOP/s on given shapes -----------===//
//
// The reference of bench/run_mlp_bench.py: times row-major cblas_sgemm, the
// call fsdprt_sgemm makes, on a list of shapes and prints GFLOP/s per shape
// and overall (total flops / total time) as one JSON object on stdout.
//
//   fsdp-bench-sgemm [--reps N] [--warmup N] [--alpha A] [--beta B] [SHAPE...]
//
// A shape is "M,N,K,TA,TB" (commas or 'x' between the fields; TA/TB are 0/1 or
// N/T): C[M x N] = alpha * op(A) * op(B) + beta * C with op(A) M x K and op(B)
// K x N, stored row-major with the tightest strides (as the trainer's are).
// Without SHAPE arguments, shapes are read from stdin, one per line (blank
// lines and lines starting with '#' are skipped); whitespace also separates
// the fields there.
//
// Each shape has its own operands (as each of the trainer's GEMMs has), filled
// with values in [-1, 1). A round runs every shape once, in the given order
// (the trainer's step runs them one after another too). --warmup rounds are
// run first and not timed; then --reps rounds are timed, each GEMM on its own.
// Per shape: the median and the best time; GFLOP/s = 2*M*N*K / median.
// Overall: total flops / sum of the per-shape medians ("gflops"), and total
// flops / (total time of all timed rounds / reps) ("gflops_mean").
//
// Threads: whatever OpenBLAS picks by default (OPENBLAS_NUM_THREADS,
// OMP_NUM_THREADS, else the number of cores), as in the trainer, which
// links the same library; the JSON reports openblas_get_num_threads().
//
//===----------------------------------------------------------------------===//

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

struct Shape {
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  std::string text;
};

struct Operands {
  std::vector<float> a, b, c;
};

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "fsdp-bench-sgemm: error: %s\n", message.c_str());
  std::exit(2);
}

bool parseTrans(const std::string &field, bool &out) {
  if (field == "0" || field == "N" || field == "n") {
    out = false;
    return true;
  }
  if (field == "1" || field == "T" || field == "t") {
    out = true;
    return true;
  }
  return false;
}

bool parseDim(const std::string &field, int64_t &out) {
  if (field.empty() || field.size() > 12)
    return false;
  for (char c : field)
    if (c < '0' || c > '9')
      return false;
  out = std::stoll(field);
  return out >= 1;
}

Shape parseShape(const std::string &text) {
  std::vector<std::string> fields;
  std::string current;
  for (char c : text) {
    if (c == ',' || c == 'x' || c == ' ' || c == '\t' || c == '\r') {
      if (!current.empty())
        fields.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (!current.empty())
    fields.push_back(current);
  Shape shape;
  if (fields.size() != 5 || !parseDim(fields[0], shape.m) || !parseDim(fields[1], shape.n) ||
      !parseDim(fields[2], shape.k) || !parseTrans(fields[3], shape.transA) ||
      !parseTrans(fields[4], shape.transB))
    fail("bad shape '" + text + "': expected M,N,K,TA,TB with M, N, K >= 1 and TA, TB in "
         "{0, 1, N, T}");
  shape.text = std::to_string(shape.m) + "," + std::to_string(shape.n) + "," +
               std::to_string(shape.k) + "," + (shape.transA ? "1" : "0") + "," +
               (shape.transB ? "1" : "0");
  return shape;
}

int parseCount(const char *flag, const char *value, int minimum) {
  char *end = nullptr;
  long parsed = std::strtol(value, &end, 10);
  if (!*value || *end || parsed < minimum || parsed > 1000000)
    fail(std::string(flag) + " expects an integer >= " + std::to_string(minimum) + ", got '" +
         value + "'");
  return static_cast<int>(parsed);
}

float parseReal(const char *flag, const char *value) {
  char *end = nullptr;
  float parsed = std::strtof(value, &end);
  if (!*value || *end)
    fail(std::string(flag) + " expects a number, got '" + value + "'");
  return parsed;
}

void fill(std::vector<float> &values, uint64_t seed) {
  // A cheap LCG: the values only need to be ordinary finite floats.
  uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (float &v : values) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<float>(static_cast<int32_t>(state >> 33) & 0xFFFF) / 32768.0f - 1.0f;
  }
}

void run(const Shape &s, Operands &ops, float alpha, float beta) {
  // Row-major, tightest strides: A is M x K (K x M when transposed), B is K x N
  // (N x K when transposed), C is M x N; exactly how fsdprt_sgemm calls it.
  int lda = static_cast<int>(s.transA ? s.m : s.k);
  int ldb = static_cast<int>(s.transB ? s.k : s.n);
  int ldc = static_cast<int>(s.n);
  cblas_sgemm(CblasRowMajor, s.transA ? CblasTrans : CblasNoTrans,
              s.transB ? CblasTrans : CblasNoTrans, static_cast<int>(s.m),
              static_cast<int>(s.n), static_cast<int>(s.k), alpha, ops.a.data(), lda,
              ops.b.data(), ldb, beta, ops.c.data(), ldc);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

void usage() {
  std::fputs("usage: fsdp-bench-sgemm [--reps N] [--warmup N] [--alpha A] [--beta B] "
             "[M,N,K,TA,TB ...]\n"
             "  Times row-major cblas_sgemm on each shape (stdin, one a line, without\n"
             "  shape arguments) and prints GFLOP/s per shape and overall as JSON.\n"
             "  Defaults: --reps 20 --warmup 3 --alpha 1 --beta 0.\n",
             stdout);
}

} // namespace

int main(int argc, char **argv) {
  int reps = 20, warmup = 3;
  float alpha = 1.0f, beta = 0.0f;
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc)
        fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else if (arg == "--reps") {
      reps = parseCount("--reps", value(), 1);
    } else if (arg == "--warmup") {
      warmup = parseCount("--warmup", value(), 0);
    } else if (arg == "--alpha") {
      alpha = parseReal("--alpha", value());
    } else if (arg == "--beta") {
      beta = parseReal("--beta", value());
    } else if (arg.size() > 1 && arg[0] == '-') {
      fail("unknown flag '" + arg + "' (see --help)");
    } else {
      shapes.push_back(parseShape(arg));
    }
  }
  if (shapes.empty()) {
    std::string line;
    while (std::getline(std::cin, line)) {
      size_t start = line.find_first_not_of(" \t\r");
      if (start == std::string::npos || line[start] == '#')
        continue;
      shapes.push_back(parseShape(line.substr(start)));
    }
  }
  if (shapes.empty())
    fail("no shapes given (arguments or stdin)");

  std::vector<Operands> operands(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape &s = shapes[i];
    operands[i].a.resize(static_cast<size_t>(s.m * s.k));
    operands[i].b.resize(static_cast<size_t>(s.k * s.n));
    operands[i].c.assign(static_cast<size_t>(s.m * s.n), 0.0f);
    fill(operands[i].a, 2 * i + 1);
    fill(operands[i].b, 2 * i + 2);
  }

  using Clock = std::chrono::steady_clock;
  for (int r = 0; r < warmup; ++r)
    for (size_t i = 0; i < shapes.size(); ++i)
      run(shapes[i], operands[i], alpha, beta);

  std::vector<std::vector<double>> seconds(shapes.size());
  Clock::time_point allStart = Clock::now();
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < shapes.size(); ++i) {
      Clock::time_point start = Clock::now();
      run(shapes[i], operands[i], alpha, beta);
      Clock::time_point end = Clock::now();
      seconds[i].push_back(std::chrono::duration<double>(end - start).count());
    }
  double allSeconds = std::chrono::duration<double>(Clock::now() - allStart).count();

  double totalFlops = 0, totalMedian = 0;
  std::printf("{\n  \"openblas_threads\": %d,\n  \"openblas_config\": \"%s\",\n"
              "  \"reps\": %d,\n  \"warmup\": %d,\n  \"alpha\": %g,\n  \"beta\": %g,\n"
              "  \"shapes\": [\n",
              openblas_get_num_threads(), openblas_get_config(), reps, warmup,
              static_cast<double>(alpha), static_cast<double>(beta));
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape &s = shapes[i];
    double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) *
                   static_cast<double>(s.k);
    double med = std::max(median(seconds[i]), 1e-12);
    double best = std::max(*std::min_element(seconds[i].begin(), seconds[i].end()), 1e-12);
    totalFlops += flops;
    totalMedian += med;
    std::printf("    {\"m\": %lld, \"n\": %lld, \"k\": %lld, \"trans_a\": %d, \"trans_b\": %d, "
                "\"flops\": %.0f, \"median_s\": %.9f, \"best_s\": %.9f, \"gflops\": %.3f, "
                "\"gflops_best\": %.3f}%s\n",
                static_cast<long long>(s.m), static_cast<long long>(s.n),
                static_cast<long long>(s.k), s.transA ? 1 : 0, s.transB ? 1 : 0, flops, med,
                best, flops / med * 1e-9, flops / best * 1e-9,
                i + 1 == shapes.size() ? "" : ",");
  }
  double meanRound = std::max(allSeconds / reps, 1e-12);
  std::printf("  ],\n  \"total_flops\": %.0f,\n  \"total_median_s\": %.9f,\n"
              "  \"gflops\": %.3f,\n  \"round_mean_s\": %.9f,\n  \"gflops_mean\": %.3f\n}\n",
              totalFlops, totalMedian, totalFlops / totalMedian * 1e-9, meanRound,
              totalFlops / meanRound * 1e-9);
  return 0;
}
