//===- gemm_bench.cpp - f32 and bf16 GEMM GFLOP/s on given shapes ---------===//
//
// Compares, on the same shapes and thread count, the ways the CPU runtime can
// compute a product (runtime/lib/cpu/Sgemm.h, Bf16Gemm.h):
//
//   sgemm        OpenBLAS cblas_sgemm on f32 operands, at the core OpenBLAS
//                runs (openblasSgemm)
//   onednn_f32   oneDNN's f32 brgemm matmul (onednnGemm F32Brgemm)
//   onednn_jit   oneDNN's f32 matmul on any JIT kernel, its gemm:jit included
//                (F32Jit: what takes the products brgemm declines where
//                OpenBLAS's core is generic)
//   onednn_bf16  oneDNN's bf16 matmul on bf16 instructions (Bf16Native): bf16
//                A, B and C, f32 accumulation, one rounding
//   widened      bf16 A and B widened to f32 for the f32 rule, C rounded to
//                bf16 (widenedGemmBf16: bf16 products without bf16
//                instructions)
//   fsdprt_f32   what fsdprt_sgemm runs here, by the rule (f32Gemm)
//   fsdprt_bf16  what fsdprt_gemm_bf16 runs here, by the rule
//
// Every column calls the runtime's own code (linked from libfsdprt), so it
// times exactly what a trainer runs, primitive cache and all.
//
// and prints GFLOP/s per shape and library as one JSON object on stdout.
//
//   fsdp-bench-gemm [--reps N] [--warmup N] [--alpha A] [--beta B] [--threads T]
//                   [--impl LIST | --dtype f32|bf16] [SHAPE...]
//
// Shapes and timing as fsdp-bench-sgemm (sgemm_bench.cpp): "M,N,K,TA,TB",
// arguments or stdin; tightest row-major strides; each shape has its own
// operands (values in [-1, 1), bf16 ones rounded from the same values); per
// shape the median and best of --reps timed rounds after --warmup rounds. One
// library runs all its rounds before the next starts: oneDNN's OpenMP threads
// and OpenBLAS's threads each spin a while after a call, and interleaving them
// on few cores would time the other's spinning.
//
// Threads: --threads T sets both OpenBLAS's (openblas_set_num_threads) and
// oneDNN's (omp_set_num_threads; Debian's oneDNN runs on OpenMP), as the
// runtime does; default: OpenBLAS's own default (OPENBLAS_NUM_THREADS, else
// the cores). oneDNN primitives are created (JIT-compiled) before timing.
//
// --dtype f32 is fsdprt_f32 and --dtype bf16 fsdprt_bf16: what the runtime's
// products run on this CPU.
// Each shape's "median_s"/"gflops" are those of the first library listed, so
// that scripts reading fsdp-bench-sgemm's output read this one too.
//
//===----------------------------------------------------------------------===//

#include "abi/DType.h"
#include "cpu/Bf16Gemm.h"
#include "cpu/OpenblasCore.h"
#include "cpu/Sgemm.h"
#include "fsdprt/fsdprt.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

const char *const kImpls[] = {"sgemm",   "onednn_f32", "onednn_jit", "onednn_bf16",
                              "widened", "fsdprt_f32", "fsdprt_bf16"};
/// What runs without --impl or --dtype: each library once.
const char *const kLibraries[] = {"sgemm", "onednn_f32", "onednn_jit", "onednn_bf16", "widened"};

struct Shape {
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
};

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "fsdp-bench-gemm: error: %s\n", message.c_str());
  std::exit(2);
}

Shape parseShape(const std::string &text) {
  std::vector<std::string> fields(1);
  for (char c : text) {
    if (std::strchr(",x \t\r", c)) {
      if (!fields.back().empty())
        fields.emplace_back();
    } else {
      fields.back().push_back(c);
    }
  }
  if (fields.back().empty())
    fields.pop_back();
  auto dim = [](const std::string &f, int64_t &out) {
    if (f.empty() || f.size() > 12 || f.find_first_not_of("0123456789") != std::string::npos)
      return false;
    out = std::stoll(f);
    return out >= 1;
  };
  auto trans = [](const std::string &f, bool &out) {
    out = f == "1" || f == "T" || f == "t";
    return out || f == "0" || f == "N" || f == "n";
  };
  Shape s;
  if (fields.size() != 5 || !dim(fields[0], s.m) || !dim(fields[1], s.n) || !dim(fields[2], s.k) ||
      !trans(fields[3], s.transA) || !trans(fields[4], s.transB))
    fail("bad shape '" + text +
         "': expected M,N,K,TA,TB with M, N, K >= 1 and TA, TB in "
         "{0, 1, N, T}");
  return s;
}

double parseNumber(const std::string &flag, const char *value, double minimum) {
  char *end = nullptr;
  double parsed = std::strtod(value, &end);
  if (!*value || *end || parsed < minimum)
    fail(flag + " expects a number >= " + std::to_string(minimum) + ", got '" + value + "'");
  return parsed;
}

/// One shape's operands in both types and what each library needs to run.
struct Problem {
  Shape s;
  std::vector<float> a, b, c;
  std::vector<uint16_t> a16, b16, c16;

  /// The shape as the runtime's products take it.
  fsdprt::GemmBatch batch() const {
    return {fsdprt::GemmShape{s.transA, s.transB, s.m, s.n, s.k, s.transA ? s.m : s.k,
                              s.transB ? s.k : s.n, s.n},
            1, 0, 0, 0};
  }
};

void fill(std::vector<float> &values, uint64_t seed) {
  // A cheap LCG: the values only need to be ordinary finite floats.
  uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (float &v : values) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<float>(static_cast<int32_t>(state >> 33) & 0xFFFF) / 32768.0f - 1.0f;
  }
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

struct Timing {
  double medianS = 0, bestS = 0;
  std::string kernel;
};

void usage() {
  std::fputs("usage: fsdp-bench-gemm [--reps N] [--warmup N] [--alpha A] [--beta B] [--threads T]\n"
             "                       [--impl LIST | --dtype f32|bf16] [M,N,K,TA,TB ...]\n"
             "  Times each library on each shape (stdin, one a line, without shape arguments)\n"
             "  and prints GFLOP/s as JSON. Libraries (--impl, comma-separated; default all):\n"
             "    sgemm        OpenBLAS cblas_sgemm, f32, at OpenBLAS's core\n"
             "    onednn_f32   oneDNN matmul, f32, brgemm kernels\n"
             "    onednn_jit   oneDNN matmul, f32, any JIT kernel (gemm:jit too)\n"
             "    onednn_bf16  oneDNN matmul, bf16 in and out, on bf16 instructions\n"
             "    widened      bf16 widened to f32 for the f32 rule, rounded to bf16\n"
             "    fsdprt_f32   fsdprt_sgemm's path here, by the runtime's rule\n"
             "    fsdprt_bf16  fsdprt_gemm_bf16's path here, by the runtime's rule\n"
             "  (default: the first five); --dtype f32|bf16 = fsdprt_f32|fsdprt_bf16. Defaults:\n"
             "  --reps 20 --warmup 3 --alpha 1\n"
             "  --beta 0, --threads OpenBLAS's default, for OpenBLAS and oneDNN alike.\n",
             stdout);
}

/// What the command line asks for.
struct BenchOptions {
  int reps = 20, warmup = 3, threads = 0;
  float alpha = 1.0f, beta = 0.0f;
  std::string dtype;
  std::vector<std::string> impls;
  std::vector<Shape> shapes;
};

/// Appends the libraries of --impl's comma-separated `list` to `impls`.
void parseImplList(const std::string &list, std::vector<std::string> &impls) {
  for (size_t start = 0; start <= list.size();) {
    size_t end = std::min(list.find(',', start), list.size());
    std::string name = list.substr(start, end - start);
    if (std::find(std::begin(kImpls), std::end(kImpls), name) == std::end(kImpls))
      fail("unknown library '" + name + "' in --impl (see --help)");
    impls.push_back(name);
    start = end + 1;
  }
}

/// Reads the flags and shape arguments into `options`; false (after printing
/// the usage) where one asks for --help.
bool parseBenchArguments(int argc, char **argv, BenchOptions &options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc)
        fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      usage();
      return false;
    } else if (arg == "--reps") {
      options.reps = static_cast<int>(parseNumber(arg, value(), 1));
    } else if (arg == "--warmup") {
      options.warmup = static_cast<int>(parseNumber(arg, value(), 0));
    } else if (arg == "--threads") {
      options.threads = static_cast<int>(parseNumber(arg, value(), 1));
    } else if (arg == "--alpha") {
      options.alpha = static_cast<float>(parseNumber(arg, value(), -1e30));
    } else if (arg == "--beta") {
      options.beta = static_cast<float>(parseNumber(arg, value(), -1e30));
    } else if (arg == "--dtype") {
      options.dtype = value();
      if (options.dtype != "f32" && options.dtype != "bf16")
        fail("--dtype expects f32 or bf16, got '" + options.dtype + "'");
    } else if (arg == "--impl") {
      parseImplList(value(), options.impls);
    } else if (arg.size() > 1 && arg[0] == '-') {
      fail("unknown flag '" + arg + "' (see --help)");
    } else {
      options.shapes.push_back(parseShape(arg));
    }
  }
  return true;
}

/// The shapes of stdin's lines, blank lines and '#' comments skipped.
void readShapesFromStdin(std::vector<Shape> &shapes) {
  std::string line;
  while (std::getline(std::cin, line)) {
    size_t start = line.find_first_not_of(" \t\r");
    if (start != std::string::npos && line[start] != '#')
      shapes.push_back(parseShape(line.substr(start)));
  }
}

/// Each shape's operands: shape i's from seeds 2i + 1 and 2i + 2.
std::vector<Problem> makeProblems(const std::vector<Shape> &shapes) {
  std::vector<Problem> problems(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    Problem &p = problems[i];
    p.s = shapes[i];
    p.a.resize(static_cast<size_t>(p.s.m * p.s.k));
    p.b.resize(static_cast<size_t>(p.s.k * p.s.n));
    p.c.assign(static_cast<size_t>(p.s.m * p.s.n), 0.0f);
    fill(p.a, 2 * i + 1);
    fill(p.b, 2 * i + 2);
    auto round = [](const std::vector<float> &from, std::vector<uint16_t> &to) {
      to.resize(from.size());
      std::transform(from.begin(), from.end(), to.begin(), fsdprt::floatToBF16);
    };
    round(p.a, p.a16);
    round(p.b, p.b16);
    round(p.c, p.c16);
  }
  return problems;
}

using ProductRun = std::function<void()>;

/// Appends oneDNN's run of one of its kernel sets (`impl`) on `p` and the
/// kernel it runs, or nothing and "unimplemented" where oneDNN has none.
void addOnednnRun(const std::string &impl, Problem &p, float alpha, float beta,
                  std::vector<ProductRun> &runs, std::vector<std::string> &kernels) {
  using fsdprt::OnednnKernels;
  // One of oneDNN's kernel sets. The first call creates the runtime's
  // cached primitive, or says that oneDNN has none for this shape.
  OnednnKernels set = impl == "onednn_f32"   ? OnednnKernels::F32Brgemm
                      : impl == "onednn_jit" ? OnednnKernels::F32Jit
                                             : OnednnKernels::Bf16Native;
  bool f32 = set != OnednnKernels::Bf16Native;
  std::optional<std::string> kernel = fsdprt::onednnKernel(set);
  const void *a = f32 ? static_cast<const void *>(p.a.data()) : p.a16.data();
  const void *b = f32 ? static_cast<const void *>(p.b.data()) : p.b16.data();
  void *c = f32 ? static_cast<void *>(p.c.data()) : p.c16.data();
  if (!kernel || !fsdprt::onednnGemm(set, p.batch(), alpha, a, b, beta, c)) {
    runs.push_back(nullptr);
    kernels.push_back("unimplemented");
    return;
  }
  runs.push_back([set, &p, alpha, a, b, beta, c] {
    fsdprt::onednnGemm(set, p.batch(), alpha, a, b, beta, c);
  });
  kernels.push_back(*kernel);
}

/// Appends the run of library `impl`'s product on `p` and the kernel it runs.
void addLibraryRun(const std::string &impl, Problem &p, float alpha, float beta,
                   std::vector<ProductRun> &runs, std::vector<std::string> &kernels) {
  if (impl == "sgemm") {
    runs.push_back([&p, alpha, beta] {
      fsdprt::openblasSgemm(p.batch(), alpha, p.a.data(), p.b.data(), beta, p.c.data());
    });
    kernels.push_back(std::string("openblas ") + openblas_get_corename());
  } else if (impl == "widened") {
    runs.push_back([&p, alpha, beta] {
      fsdprt::widenedGemmBf16(p.batch(), alpha, p.a16.data(), p.b16.data(), beta, p.c16.data());
    });
    kernels.push_back("widened, " + fsdprt::f32GemmLine());
  } else if (impl == "fsdprt_f32") {
    runs.push_back([&p, alpha, beta] {
      fsdprt::f32Gemm(p.batch(), alpha, p.a.data(), p.b.data(), beta, p.c.data());
    });
    kernels.push_back(fsdprt::f32GemmLine());
  } else if (impl == "fsdprt_bf16") {
    const fsdprt::GemmShape g = p.batch().gemm;
    runs.push_back([&p, g, alpha, beta] {
      fsdprt_gemm_bf16(g.transA, g.transB, g.m, g.n, g.k, alpha, p.a16.data(), g.lda, p.b16.data(),
                       g.ldb, beta, p.c16.data(), g.ldc);
    });
    kernels.push_back(fsdprt::bf16GemmLine());
  } else {
    addOnednnRun(impl, p, alpha, beta, runs, kernels);
  }
}

/// The seconds of each run's timed rounds: --warmup rounds, then --reps
/// timed ones, each round running every shape once.
std::vector<std::vector<double>> timeRounds(const std::vector<ProductRun> &runs,
                                            const BenchOptions &options) {
  using Clock = std::chrono::steady_clock;
  std::vector<std::vector<double>> seconds(runs.size());
  for (int r = 0; r < options.warmup + options.reps; ++r)
    for (size_t i = 0; i < runs.size(); ++i) {
      if (!runs[i])
        continue;
      Clock::time_point start = Clock::now();
      runs[i]();
      Clock::time_point end = Clock::now();
      if (r >= options.warmup)
        seconds[i].push_back(std::chrono::duration<double>(end - start).count());
    }
  return seconds;
}

/// Times library `impl` on every problem, appending a Timing per problem to
/// `timings`.
void timeLibrary(const std::string &impl, std::vector<Problem> &problems,
                 const BenchOptions &options, std::vector<Timing> &timings) {
  // Per library: a function per shape that runs its product once (nothing
  // where the library has none), and the kernel it runs.
  std::vector<ProductRun> runs;
  std::vector<std::string> kernels;
  for (Problem &p : problems)
    addLibraryRun(impl, p, options.alpha, options.beta, runs, kernels);
  std::vector<std::vector<double>> seconds = timeRounds(runs, options);
  for (size_t i = 0; i < problems.size(); ++i) {
    Timing t;
    t.kernel = kernels[i];
    if (!seconds[i].empty()) {
      t.medianS = std::max(median(seconds[i]), 1e-12);
      t.bestS = std::max(*std::min_element(seconds[i].begin(), seconds[i].end()), 1e-12);
    }
    timings.push_back(t);
  }
}

using LibraryTimings = std::map<std::string, std::vector<Timing>>;

/// The output's fields before the shapes: threads, libraries' setups, flags.
void printBenchHeader(const BenchOptions &options) {
  using fsdprt::OnednnKernels;
  std::printf("{\n  \"threads\": %d,\n  \"openblas_threads\": %d,\n  \"omp_threads\": %d,\n"
              "  \"openblas_config\": \"%s\",\n  \"onednn\": \"%s\",\n"
              "  \"onednn_f32_matmul\": %s,\n  \"onednn_bf16_matmul\": %s,\n"
              "  \"openblas_core\": \"%s\",\n"
              "  \"reps\": %d,\n  \"warmup\": %d,\n"
              "  \"alpha\": %g,\n  \"beta\": %g,\n  \"impls\": [",
              options.threads, openblas_get_num_threads(), omp_get_max_threads(),
              openblas_get_config(), fsdprt::onednnVersionAndIsa().c_str(),
              fsdprt::onednnKernel(OnednnKernels::F32Brgemm) ? "true" : "false",
              fsdprt::onednnKernel(OnednnKernels::Bf16Native) ? "true" : "false",
              fsdprt::openblasCoreDescription().c_str(), options.reps, options.warmup,
              static_cast<double>(options.alpha), static_cast<double>(options.beta));
  for (size_t j = 0; j < options.impls.size(); ++j)
    std::printf("%s\"%s\"", j ? ", " : "", options.impls[j].c_str());
  std::printf("],\n  \"shapes\": [\n");
}

/// Prints shape `i`'s entry and adds each library's median seconds on it to
/// `totalSeconds`; returns the shape's flops.
double printShapeResults(size_t i, const BenchOptions &options, LibraryTimings &timings,
                         std::map<std::string, double> &totalSeconds) {
  const std::vector<std::string> &impls = options.impls;
  const Shape &s = options.shapes[i];
  double flops =
      2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  const Timing &first = timings[impls[0]][i];
  auto rate = [&](double seconds) { return seconds > 0 ? flops / seconds * 1e-9 : 0.0; };
  std::printf("    {\"m\": %lld, \"n\": %lld, \"k\": %lld, \"trans_a\": %d, \"trans_b\": %d, "
              "\"flops\": %.0f, \"median_s\": %.9f, \"best_s\": %.9f, \"gflops\": %.3f, "
              "\"gflops_best\": %.3f,\n     \"impls\": {",
              static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k),
              s.transA ? 1 : 0, s.transB ? 1 : 0, flops, first.medianS, first.bestS,
              rate(first.medianS), rate(first.bestS));
  for (size_t j = 0; j < impls.size(); ++j) {
    const Timing &t = timings[impls[j]][i];
    totalSeconds[impls[j]] += t.medianS;
    std::printf("%s\n       \"%s\": {\"median_s\": %.9f, \"gflops\": %.3f, "
                "\"gflops_best\": %.3f, \"kernel\": \"%s\"}",
                j ? "," : "", impls[j].c_str(), t.medianS, rate(t.medianS), rate(t.bestS),
                t.kernel.c_str());
  }
  std::printf("}}%s\n", i + 1 == options.shapes.size() ? "" : ",");
  return flops;
}

/// The whole output: the header, each shape's entry, each library's GFLOP/s
/// over all the shapes.
void printBenchResults(const BenchOptions &options, LibraryTimings &timings) {
  printBenchHeader(options);
  std::map<std::string, double> totalSeconds;
  double totalFlops = 0;
  for (size_t i = 0; i < options.shapes.size(); ++i)
    totalFlops += printShapeResults(i, options, timings, totalSeconds);
  std::printf("  ],\n  \"gflops\": {");
  for (size_t j = 0; j < options.impls.size(); ++j) {
    double seconds = totalSeconds[options.impls[j]];
    std::printf("%s\"%s\": %.3f", j ? ", " : "", options.impls[j].c_str(),
                seconds > 0 ? totalFlops / seconds * 1e-9 : 0.0);
  }
  std::printf("}\n}\n");
}

} // namespace

int main(int argc, char **argv) {
  BenchOptions options;
  if (!parseBenchArguments(argc, argv, options))
    return 0;
  if (options.shapes.empty())
    readShapesFromStdin(options.shapes);
  if (options.shapes.empty())
    fail("no shapes given (arguments or stdin)");
  if (options.threads == 0)
    options.threads = openblas_get_num_threads();
  openblas_set_num_threads(options.threads);
  omp_set_num_threads(options.threads);

  std::vector<Problem> problems = makeProblems(options.shapes);
  if (options.impls.empty() && !options.dtype.empty())
    options.impls = {"fsdprt_" + options.dtype};
  else if (options.impls.empty())
    options.impls.assign(std::begin(kLibraries), std::end(kLibraries));

  LibraryTimings timings;
  for (const std::string &impl : options.impls)
    timeLibrary(impl, problems, options, timings[impl]);
  printBenchResults(options, timings);
  return 0;
}
