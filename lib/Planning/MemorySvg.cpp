//===- MemorySvg.cpp - one rank's memory over the step, as an SVG ---------===//
//
// The accordion of FSDP drawn from the plan: the persistent arena at the
// bottom, the transient buffers stacked on it by kind as step functions of
// the predicted clock, the planned arena (the peak with fragmentation) and the
// budget as lines, each unit's all-gathers marked along the top. With a
// trainer's measurements (fsdpc --measured-trace), the planned arena's
// high-water mark as a dashed step line (the top of the buffers placed so
// far) and the trainer's measured marks as points where it took them: after
// each all-gather's wait, at the predicted time compute gets past it, and at
// the step's end. The figures are also attributes (`data-*`) so that tests
// read them back.
//
//===----------------------------------------------------------------------===//

#include "Planning/Pictures.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cassert>
#include <cmath>
#include <tuple>
#include <utility>

using namespace mlir;
using namespace mlir::fsdp;

namespace {

constexpr double kWidth = 1200, kHeight = 700;
constexpr double kLeft = 100, kRight = 1180, kTop = 110, kBottom = 580;

struct Layer {
  const char *name, *color;
};
constexpr Layer kRuntime{"runtime (context, NCCL, workspaces)", "#d9d9d9"};
constexpr Layer kPersistent{"sharded state and inputs (persistent)", "#9aa5b1"};
/// Labels and colours of kMemoryKinds, in its order.
constexpr Layer kLayers[kNumMemoryKinds] = {{"gradient shards", "#e07b39"},
                                            {"flat gradients", "#f2c14e"},
                                            {"gathered parameters", "#4e79a7"},
                                            {"collective buffers", "#b07aa1"},
                                            {"activations, temporaries", "#59a14f"}};
constexpr const char *kPlannedHighWaterColor = "#7b3294";
constexpr const char *kMeasuredHighWaterColor = "#111111";

/// 1, 2 or 5 times a power of ten, the step of about `ticks` ticks over `span`.
double niceStep(double span, int ticks) {
  double raw = span / ticks, power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0})
    if (raw <= factor * power)
      return factor * power;
  return 10 * power;
}

std::string escape(StringRef text) {
  std::string out;
  for (char c : text)
    out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : c == '"' ? "&quot;"
                                                                             : std::string(1, c);
  return out;
}

/// One picture being written: the plan's figures, and the scales from
/// seconds and bytes to the picture's coordinates.
struct MemorySvgPicture {
  llvm::raw_ostream &os;
  const PlanEvaluation &plan;
  const MemoryTimeline &memory;
  int64_t runtimeBytes, budgetBytes;
  const MeasuredHighWater *measured;
  double step, runtime, top;
  double unit = 1;
  const char *unitName = "B";
  /// The legend's entries placed so far.
  int legendEntries = 0;

  MemorySvgPicture(llvm::raw_ostream &os, const PlanEvaluation &plan, int64_t runtimeBytes,
                   int64_t budgetBytes, const MeasuredHighWater *measured)
      : os(os), plan(plan), memory(plan.memory), runtimeBytes(runtimeBytes),
        budgetBytes(budgetBytes), measured(measured), step(std::max(plan.cost.stepSeconds, 1e-12)),
        runtime(static_cast<double>(runtimeBytes)),
        top(std::max(runtime + static_cast<double>(plan.arena.arenaBytes),
                     static_cast<double>(budgetBytes)) *
            1.08) {
    // Binary units for bytes, whichever keeps the axis readable.
    for (auto [scale, name] : {std::pair<double, const char *>{1024.0 * 1024 * 1024, "GiB"},
                               {1024.0 * 1024, "MiB"},
                               {1024.0, "KiB"}})
      if (top >= 4 * scale) {
        unit = scale;
        unitName = name;
        break;
      }
  }

  double x(double seconds) const { return kLeft + (kRight - kLeft) * seconds / step; }
  double y(double bytes) const { return kBottom - (kBottom - kTop) * bytes / top; }

  void writeHeader(StringRef title) {
    os << llvm::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                       "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\" ",
                       kWidth, kHeight, kWidth, kHeight)
       << "data-arena-bytes=\"" << plan.arena.arenaBytes << "\" data-persistent-bytes=\""
       << memory.persistentBytes << "\" data-peak-live-bytes=\"" << memory.peakLiveBytes
       << "\" data-runtime-bytes=\"" << runtimeBytes << "\" data-budget-bytes=\"" << budgetBytes
       << "\" data-step-seconds=\"" << llvm::format("%.9g", plan.cost.stepSeconds)
       << "\" data-y-bottom=\"" << kBottom << "\" data-y-top=\"" << kTop << "\" data-top-bytes=\""
       << llvm::format("%.17g", top) << "\">\n";
    os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    os << "<text x=\"" << kLeft << "\" y=\"24\" font-size=\"16\" font-weight=\"bold\">"
       << escape(title) << "</text>\n";
  }

  void writeBand(StringRef kind, double from, int64_t bytes, const char *color) {
    os << llvm::format("<rect class=\"layer\" data-kind=\"%s\" data-peak-bytes=\"%lld\" "
                       "x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n",
                       kind.str().c_str(), static_cast<long long>(bytes), kLeft,
                       y(from + static_cast<double>(bytes)), kRight - kLeft,
                       y(from) - y(from + static_cast<double>(bytes)), color);
  }

  /// The bytes of `sample` under the kind `through`: the runtime's, the
  /// persistent arena's and the kinds' before it.
  double bytesBelowKind(const MemorySample &sample, size_t through) const {
    double bytes = runtime + static_cast<double>(memory.persistentBytes);
    for (size_t i = 0; i < through; ++i)
      bytes += static_cast<double>(sample.bytes[i]);
    return bytes;
  }

  void writeKindLayer(size_t k) {
    // Upper edge left to right, lower edge back: a step function each.
    int64_t peak = 0;
    std::string upper, lower;
    llvm::raw_string_ostream up(upper), down(lower);
    const std::vector<MemorySample> &samples = memory.samples;
    for (size_t i = 0; i < samples.size(); ++i) {
      peak = std::max(peak, samples[i].bytes[k]);
      double from = x(samples[i].time),
             to = x(i + 1 < samples.size() ? samples[i + 1].time : step);
      up << llvm::format(" L%.2f,%.2f L%.2f,%.2f", from, y(bytesBelowKind(samples[i], k + 1)), to,
                         y(bytesBelowKind(samples[i], k + 1)));
    }
    for (size_t i = samples.size(); i-- > 0;) {
      double from = x(samples[i].time),
             to = x(i + 1 < samples.size() ? samples[i + 1].time : step);
      down << llvm::format(" L%.2f,%.2f L%.2f,%.2f", to, y(bytesBelowKind(samples[i], k)), from,
                           y(bytesBelowKind(samples[i], k)));
    }
    if (samples.empty())
      return;
    os << "<path class=\"layer\" data-kind=\"" << kMemoryKinds[k] << "\" data-peak-bytes=\"" << peak
       << "\" fill=\"" << kLayers[k].color << "\" stroke=\"none\" d=\"M"
       << llvm::format("%.2f,%.2f", x(samples.front().time), y(bytesBelowKind(samples.front(), k)))
       << upper << lower << " Z\"/>\n";
  }

  void writeLayers() {
    // The runtime's memory, the persistent arena, then each kind on the ones
    // below it.
    if (runtimeBytes > 0)
      writeBand("runtime", 0, runtimeBytes, kRuntime.color);
    writeBand("persistent", runtime, memory.persistentBytes, kPersistent.color);
    for (size_t k = 0; k < kNumMemoryKinds; ++k)
      writeKindLayer(k);
  }

  void writeLevel(const char *cls, int64_t bytes, const char *color, const char *dash,
                  const std::string &label) {
    os << llvm::format("<line class=\"%s\" data-bytes=\"%lld\" x1=\"%.2f\" x2=\"%.2f\" "
                       "y1=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" stroke-width=\"1.5\" "
                       "stroke-dasharray=\"%s\"/>\n",
                       cls, static_cast<long long>(bytes), kLeft, kRight,
                       y(static_cast<double>(bytes)), y(static_cast<double>(bytes)), color, dash)
       << llvm::format("<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\" fill=\"%s\">", kRight - 4,
                       y(static_cast<double>(bytes)) - 4, color)
       << escape(label) << "</text>\n";
  }

  /// The planned arena and the budget.
  void writeArenaAndBudget() {
    writeLevel("arena", runtimeBytes + plan.arena.arenaBytes, "#333333", "6,3",
               llvm::formatv("planned arena{0} {1:F2} {2}", runtimeBytes ? " + runtime" : "",
                             (runtime + plan.arena.arenaBytes) / unit, unitName)
                   .str());
    if (budgetBytes > 0)
      writeLevel("budget", budgetBytes, "#d62728", "none",
                 llvm::formatv("budget {0:F2} {1}", budgetBytes / unit, unitName).str());
  }

  double highWaterY(int64_t bytes) const { return y(runtime + static_cast<double>(bytes)); }

  void writePlannedHighWater() {
    os << "<path class=\"planned-high-water\" data-final-bytes=\"" << memory.plannedHighWater
       << "\" fill=\"none\" stroke=\"" << kPlannedHighWaterColor
       << "\" stroke-width=\"1.5\" stroke-dasharray=\"5,3\" d=\""
       << llvm::format("M%.2f,%.2f", x(0), highWaterY(memory.persistentBytes));
    const std::vector<MemorySample> &samples = memory.samples;
    for (size_t i = 0; i < samples.size(); ++i)
      os << llvm::format(" L%.2f,%.2f L%.2f,%.2f", x(samples[i].time),
                         highWaterY(samples[i].plannedHighWater),
                         x(i + 1 < samples.size() ? samples[i + 1].time : step),
                         highWaterY(samples[i].plannedHighWater));
    os << "\"/>\n";
  }

  void writeMeasuredPoint(StringRef at, double seconds, int64_t bytes, int64_t planned,
                          const std::string &attributes, const std::string &label) {
    os << llvm::format("<circle class=\"measured-high-water\" data-at=\"%s\" "
                       "data-time-seconds=\"%.9g\" data-measured-bytes=\"%lld\" "
                       "data-planned-bytes=\"%lld\"%s cx=\"%.2f\" cy=\"%.2f\" r=\"3\" "
                       "fill=\"%s\" stroke=\"white\" stroke-width=\"0.8\">",
                       at.str().c_str(), seconds, static_cast<long long>(bytes),
                       static_cast<long long>(planned), attributes.c_str(), x(seconds),
                       highWaterY(bytes), kMeasuredHighWaterColor)
       << "<title>" << escape(label)
       << llvm::formatv(": measured {0} B, planned {1} B", bytes, planned).str()
       << "</title></circle>\n";
  }

  /// The planned high-water mark, persistent_bytes until the first buffer is
  /// placed, and the trainer's marks on it: each scan sees the highest byte
  /// the step has written so far.
  void writeHighWaterMarks() {
    assert(measured->afterGatherWaits.size() == memory.gatherWaits.size() &&
           "the marks of another step (readMeasuredHighWater checks)");
    writePlannedHighWater();
    for (auto [k, wait] : llvm::enumerate(memory.gatherWaits))
      writeMeasuredPoint("gather-wait", wait.time, measured->afterGatherWaits[k],
                         wait.plannedHighWater,
                         llvm::formatv(" data-index=\"{0}\" data-op=\"{1}\" data-unit=\"{2}\"", k,
                                       wait.op, escape(wait.unit))
                             .str(),
                         "after the wait for " + wait.unit);
    writeMeasuredPoint("end-of-step", plan.cost.stepSeconds, measured->endOfStep,
                       memory.plannedHighWater, "", "end of the step");
  }

  /// Axes with ticks.
  void writeAxes() {
    os << llvm::format("<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n",
                       kLeft, kBottom, kRight, kBottom)
       << llvm::format("<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n",
                       kLeft, kTop, kLeft, kBottom);
    double byteStep = niceStep(top / unit, 6) * unit;
    for (double bytes = 0; bytes <= top; bytes += byteStep)
      os << llvm::format("<text x=\"%.0f\" y=\"%.2f\" text-anchor=\"end\">%g</text>\n", kLeft - 6,
                         y(bytes) + 4, bytes / unit);
    os << llvm::format("<text x=\"20\" y=\"%.0f\" transform=\"rotate(-90 20 %.0f)\" "
                       "text-anchor=\"middle\">bytes per rank (%s)</text>\n",
                       (kTop + kBottom) / 2, (kTop + kBottom) / 2, unitName);
    bool milli = step < 1;
    double timeScale = milli ? 1e3 : 1, timeStep = niceStep(step * timeScale, 8) / timeScale;
    for (double t = 0; t <= step * (1 + 1e-9); t += timeStep)
      os << llvm::format("<text x=\"%.2f\" y=\"%.0f\" text-anchor=\"middle\">%g</text>\n", x(t),
                         kBottom + 18, t * timeScale);
    os << llvm::format("<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">predicted time into "
                       "the step (%s)</text>\n",
                       (kLeft + kRight) / 2, kBottom + 38, milli ? "ms" : "s");
  }

  /// Each unit's all-gathers, where compute gets the parameters: a tick, and
  /// the unit's name where there is room.
  void writeGatherMarks() {
    std::vector<const TimedOp *> gathers;
    for (const TimedOp &op : plan.cost.ops)
      if (op.name == "all_gather_start" && !op.unit.empty())
        gathers.push_back(&op);
    size_t every = std::max<size_t>(1, (gathers.size() + 39) / 40);
    for (size_t i = 0; i < gathers.size(); ++i) {
      double at = x(gathers[i]->waited);
      os << llvm::format("<line class=\"gather\" x1=\"%.2f\" x2=\"%.2f\" y1=\"%.0f\" y2=\"%.0f\" "
                         "stroke=\"#4e79a7\" stroke-width=\"0.8\"/>\n",
                         at, at, kTop - 6, kTop);
      if (i % every == 0)
        os << llvm::format("<text x=\"%.2f\" y=\"%.0f\" font-size=\"9\" transform=\"rotate(-60 "
                           "%.2f %.0f)\">",
                           at, kTop - 8, at, kTop - 8)
           << escape(gathers[i]->unit) << "</text>\n";
    }
  }

  /// Where the next legend entry goes: three to a row.
  std::pair<double, double> nextLegendSlot() {
    double left = kLeft + (kRight - kLeft) / 3 * (legendEntries % 3),
           baseline = kBottom + 66 + 18 * (legendEntries / 3);
    ++legendEntries;
    return std::pair(left, baseline);
  }

  void writeLegendLabel(double left, double baseline, StringRef name, int64_t bytes) {
    os << llvm::format("<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\">", left + 14, baseline)
       << escape(name) << llvm::format(" (at most %.2f %s)", bytes / unit, unitName)
       << "</text>\n";
  }

  void writeLegendEntry(const Layer &layer, int64_t bytes) {
    auto [left, baseline] = nextLegendSlot();
    os << llvm::format("<rect x=\"%.0f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"%s\"/>",
                       left, baseline - 9, layer.color);
    writeLegendLabel(left, baseline, layer.name, bytes);
  }

  void writeHighWaterLegend() {
    auto [left, baseline] = nextLegendSlot();
    os << llvm::format("<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" "
                       "stroke-width=\"1.5\" stroke-dasharray=\"5,3\"/>",
                       left, left + 10, baseline - 4, baseline - 4, kPlannedHighWaterColor);
    writeLegendLabel(left, baseline, "planned high-water mark", memory.plannedHighWater);
    std::tie(left, baseline) = nextLegendSlot();
    os << llvm::format("<circle cx=\"%.0f\" cy=\"%.0f\" r=\"3\" fill=\"%s\"/>", left + 5,
                       baseline - 4, kMeasuredHighWaterColor);
    int64_t most = measured->endOfStep;
    for (int64_t mark : measured->afterGatherWaits)
      most = std::max(most, mark);
    writeLegendLabel(left, baseline,
                     llvm::formatv("measured high-water mark, step {0}", measured->step).str(),
                     most);
  }

  /// The legend, three to a row, with each kind's most bytes.
  void writeLegend() {
    if (runtimeBytes > 0)
      writeLegendEntry(kRuntime, runtimeBytes);
    writeLegendEntry(kPersistent, memory.persistentBytes);
    for (size_t k = 0; k < kNumMemoryKinds; ++k) {
      int64_t peak = 0;
      for (const MemorySample &sample : memory.samples)
        peak = std::max(peak, sample.bytes[k]);
      writeLegendEntry(kLayers[k], peak);
    }
    if (measured)
      writeHighWaterLegend();
  }
};

} // namespace

void mlir::fsdp::writeMemorySvg(llvm::raw_ostream &os, const PlanEvaluation &plan,
                                int64_t runtimeBytes, int64_t budgetBytes, StringRef title,
                                const MeasuredHighWater *measured) {
  MemorySvgPicture picture(os, plan, runtimeBytes, budgetBytes, measured);
  picture.writeHeader(title);
  picture.writeLayers();
  picture.writeArenaAndBudget();
  if (measured)
    picture.writeHighWaterMarks();
  picture.writeAxes();
  picture.writeGatherMarks();
  picture.writeLegend();
  os << "</svg>\n";
}
