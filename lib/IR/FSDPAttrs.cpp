//===- FSDPAttrs.cpp - fsdp attributes: parsing helpers and verifiers -----===//

#include "fsdp/IR/FSDPAttrs.h"
#include "fsdp/IR/FSDPDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <limits>


using namespace mlir;
using namespace mlir::fsdp;

#include "fsdp/IR/FSDPAttrInterfaces.cpp.inc"
#include "fsdp/IR/FSDPEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "fsdp/IR/FSDPAttrs.cpp.inc"

//===----------------------------------------------------------------------===//
// Parameter parsers
//===----------------------------------------------------------------------===//

FailureOr<llvm::APFloat> mlir::fsdp::parseF64Parameter(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  // Hyper-parameters are often whole numbers: accept `1` as well as `1.0`, but
  // not `true` or hexadecimal bit patterns.
  bool negative = succeeded(parser.parseOptionalMinus());
  APInt integer;
  double value;
  OptionalParseResult isInteger = parser.parseOptionalDecimalInteger(integer);
  if (isInteger.has_value()) {
    if (failed(*isInteger))
      return failure();
    if (integer.isNegative())
      return parser.emitError(loc, "expected a number");
    if (integer.getSignificantBits() > 64)
      return parser.emitError(loc, "whole number too large; write it as a real "
                                   "number, e.g. 1.0e20");
    value = static_cast<double>(integer.getSExtValue());
  } else if (parser.parseFloat(value)) {
    return failure();
  }
  if (negative)
    value = -value;
  if (!std::isfinite(value))
    return parser.emitError(loc, "expected a finite number");
  return llvm::APFloat(value);
}

FailureOr<bool> mlir::fsdp::parseBoolParameter(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (succeeded(parser.parseOptionalKeyword(&keyword, {"true", "false"})))
    return keyword == "true";
  return parser.emitError(loc, "expected true or false");
}

void mlir::fsdp::printF64Parameter(AsmPrinter &printer, const llvm::APFloat &value) {
  double number = value.convertToDouble();
  char text[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, number);
    if (std::strtod(text, nullptr) == number)
      break;
  }
  // MLIR float literals need a '.' in the mantissa: `1.0`, `1.0e-06`.
  StringRef printed(text);
  if (printed.contains('.')) {
    printer << printed;
    return;
  }
  auto [mantissa, exponent] = printed.split('e');
  printer << mantissa << ".0";
  if (!exponent.empty())
    printer << 'e' << exponent;
}

FailureOr<SmallVector<int64_t>> mlir::fsdp::parseIntegerListParameter(AsmParser &parser) {
  SmallVector<int64_t> list;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        return parser.parseInteger(list.emplace_back());
      }))
    return failure();
  return list;
}

void mlir::fsdp::printIntegerListParameter(AsmPrinter &printer, ArrayRef<int64_t> list) {
  printer << '[';
  llvm::interleaveComma(list, printer);
  printer << ']';
}

//===----------------------------------------------------------------------===//
// Initializers
//===----------------------------------------------------------------------===//

using llvm::APFloat;

LogicalResult ConstantAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   APFloat value) {
  if (!value.isFinite())
    return emitError() << "constant initializer must be finite";
  return success();
}

LogicalResult NormalAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 APFloat mean, APFloat std) {
  if (!mean.isFinite())
    return emitError() << "normal initializer needs a finite mean";
  if (!std.isFinite() || !(std.convertToDouble() > 0.0))
    return emitError() << "normal initializer needs a positive std, got std = "
                       << std.convertToDouble();
  return success();
}

LogicalResult UniformAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  APFloat low, APFloat high) {
  if (!(low.convertToDouble() < high.convertToDouble()))
    return emitError() << "uniform initializer needs low < high, got ["
                       << low.convertToDouble() << ", " << high.convertToDouble() << ")";
  return success();
}

static LogicalResult verifyFanInScale(function_ref<InFlightDiagnostic()> emitError,
                                      APFloat scale) {
  if (!scale.isFinite() || !(scale.convertToDouble() > 0.0))
    return emitError() << "fan-in initializer needs a positive scale, got "
                       << scale.convertToDouble();
  return success();
}

LogicalResult FanInNormalAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                      APFloat scale) {
  return verifyFanInScale(emitError, scale);
}

LogicalResult FanInUniformAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                       APFloat scale) {
  return verifyFanInScale(emitError, scale);
}

/// Fan-in initializers scale by the size of every dimension but the last,
/// which only exists for matrices and higher.
static LogicalResult verifyHasFanIn(RankedTensorType type,
                                    function_ref<InFlightDiagnostic()> emitError) {
  if (type.getRank() < 2)
    return emitError() << "fan-in initializer needs a parameter of rank 2 or more, got "
                       << type;
  return success();
}

LogicalResult
FanInNormalAttr::verifyForType(RankedTensorType type,
                               function_ref<InFlightDiagnostic()> emitError) const {
  return verifyHasFanIn(type, emitError);
}

LogicalResult
FanInUniformAttr::verifyForType(RankedTensorType type,
                                function_ref<InFlightDiagnostic()> emitError) const {
  return verifyHasFanIn(type, emitError);
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

static LogicalResult verifyLearningRate(function_ref<InFlightDiagnostic()> emitError,
                                        APFloat lr) {
  if (!lr.isFinite() || !(lr.convertToDouble() > 0.0))
    return emitError() << "learning rate must be positive, got " << lr.convertToDouble();
  return success();
}

static LogicalResult verifyUnitInterval(function_ref<InFlightDiagnostic()> emitError,
                                        StringRef name, APFloat value) {
  double v = value.convertToDouble();
  if (!(v >= 0.0 && v < 1.0))
    return emitError() << name << " must be in [0, 1), got " << v;
  return success();
}

static LogicalResult verifyWeightDecay(function_ref<InFlightDiagnostic()> emitError,
                                       APFloat weightDecay) {
  if (!(weightDecay.convertToDouble() >= 0.0))
    return emitError() << "weight_decay must be non-negative, got "
                       << weightDecay.convertToDouble();
  return success();
}

LogicalResult SGDAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              APFloat lr, APFloat momentum, APFloat weightDecay) {
  if (failed(verifyLearningRate(emitError, lr)) ||
      failed(verifyUnitInterval(emitError, "momentum", momentum)))
    return failure();
  return verifyWeightDecay(emitError, weightDecay);
}

double SGDAttr::getLearningRate() const { return getLr().convertToDouble(); }

SmallVector<StringRef> SGDAttr::getStateSlots() const {
  if (getMomentum().isZero())
    return {};
  return {"momentum"};
}

LogicalResult AdamWAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                APFloat lr, APFloat beta1, APFloat beta2, APFloat eps,
                                APFloat weightDecay) {
  if (failed(verifyLearningRate(emitError, lr)) ||
      failed(verifyUnitInterval(emitError, "beta1", beta1)) ||
      failed(verifyUnitInterval(emitError, "beta2", beta2)))
    return failure();
  if (!(eps.convertToDouble() > 0.0))
    return emitError() << "eps must be positive, got " << eps.convertToDouble();
  return verifyWeightDecay(emitError, weightDecay);
}

double AdamWAttr::getLearningRate() const { return getLr().convertToDouble(); }

SmallVector<StringRef> AdamWAttr::getStateSlots() const {
  return {"exp_avg", "exp_avg_sq"};
}

//===----------------------------------------------------------------------===//
// Plan
//===----------------------------------------------------------------------===//

LogicalResult PlanAttr::verify(function_ref<InFlightDiagnostic()> emitError, ArrayRef<int64_t> grid,
                               int64_t tensorParallel, bool sequenceParallel, Strategy strategy,
                               OptimizerAttrInterface optimizer, DType, DType, APFloat clipGradNorm,
                               int64_t prefetch, int64_t maxInflightGathers, RematPolicy remat,
                               int64_t rematEvery, ArrayAttr rematUnits, int64_t microBatches,
                               Accumulation accumulate, UnitPolicy units, int64_t minUnitParams,
                               StringRef deviceMemory, Offload, bool, bool, bool) {
  // The grid's rules, which the runtime's reader applies too.
  namespace schema = fsdprt::manifest;
  if (grid.empty() || grid.size() > schema::kMaxGridDims)
    return emitError() << "grid must be [shard] or [replicate, shard], got " << grid.size()
                       << " dimensions";
  if (tensorParallel < 1)
    return emitError() << "tensor_parallel must be at least 1, got " << tensorParallel;
  if (sequenceParallel && tensorParallel == 1)
    return emitError() << "sequence_parallel splits the sequence over the tensor ranks: it "
                          "needs tensor_parallel above 1";
  int64_t worldSize = tensorParallel;
  for (int64_t size : grid) {
    if (size < 1)
      return emitError() << "grid sizes must be positive, got " << size;
    if (llvm::MulOverflow(worldSize, size, worldSize) || worldSize > schema::kMaxRanks)
      return emitError() << "grid and tensor_parallel hold more than 2^31 - 1 ranks";
  }
  const schema::StrategySpec *spec = strategySpec(strategy);
  if (!spec)
    return emitError() << "strategy " << stringifyStrategy(strategy)
                       << " is none the runtime knows (fsdprt/ManifestSchema.def)";
  if (!schema::gridDimsFit(*spec, grid.size()))
    return grid.size() == 1 ? emitError() << spec->name << " needs a 2-D grid [replicate, shard]"
                            : emitError()
                                  << "a 2-D grid needs strategy = "
                                  << schema::strategy::kHybridShard.name << ", got " << spec->name;
  if (!optimizer)
    return emitError() << "plan needs an optimizer";
  if (!(clipGradNorm.convertToDouble() >= 0.0))
    return emitError() << "clip_grad_norm must be non-negative (0 disables clipping), got "
                       << clipGradNorm.convertToDouble();
  if (prefetch < 0)
    return emitError() << "prefetch must be non-negative, got " << prefetch;
  if (maxInflightGathers < 1)
    return emitError() << "max_inflight_gathers must be at least 1, got "
                       << maxInflightGathers;
  if (rematEvery < 1)
    return emitError() << "remat_every must be at least 1, got " << rematEvery;
  if (remat == RematPolicy::None && (rematEvery != 1 || rematUnits))
    return emitError() << (rematUnits ? "remat_units" : "remat_every")
                       << " needs remat = unit or selective";
  if (rematUnits && rematEvery != 1)
    return emitError() << "remat_units and remat_every both choose the units to recompute: "
                          "give one";
  if (rematUnits) {
    if (rematUnits.empty())
      return emitError() << "remat_units must name at least one unit";
    llvm::StringSet<> seen;
    for (Attribute name : rematUnits) {
      auto text = llvm::dyn_cast<StringAttr>(name);
      if (!text || text.getValue().empty())
        return emitError() << "remat_units must be unit names (non-empty strings), got " << name;
      if (!seen.insert(text.getValue()).second)
        return emitError() << "remat_units names unit \"" << text.getValue() << "\" twice";
    }
  }
  if (microBatches < 1)
    return emitError() << "micro_batches must be at least 1, got " << microBatches;
  if (accumulate == Accumulation::NoSync && microBatches == 1)
    return emitError() << "accumulate = no_sync needs micro_batches > 1 (one micro-batch has "
                          "nothing to accumulate)";
  if (units == UnitPolicy::AutoWrap && minUnitParams < 1)
    return emitError() << "units = auto_wrap needs min_unit_params >= 1";
  if (units == UnitPolicy::Explicit && minUnitParams != 0)
    return emitError() << "min_unit_params applies only with units = auto_wrap";
  if (!deviceMemory.empty() && !parseByteSize(deviceMemory))
    return emitError() << "device_memory must be a positive size such as \"80GB\" or "
                          "\"79.5GiB\", got \""
                       << deviceMemory << "\"";
  return success();
}

std::optional<int64_t> mlir::fsdp::parseByteSize(StringRef text) {
  StringRef number = text.trim().take_while([](char c) { return llvm::isDigit(c) || c == '.'; });
  StringRef unit = text.trim().drop_front(number.size()).trim();
  static constexpr std::pair<StringLiteral, double> kUnits[] = {
      {"", 1},      {"B", 1},          {"KB", 1e3},        {"MB", 1e6},
      {"GB", 1e9},  {"TB", 1e12},      {"KiB", 1024.0},    {"MiB", 1048576.0},
      {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  double value;
  if (number.empty() || number.getAsDouble(value))
    return std::nullopt;
  for (const auto &[name, scale] : kUnits) {
    if (unit != name)
      continue;
    double bytes = value * scale;
    // Below 2^62: room for the sums the budget check makes.
    if (bytes < 1 || bytes >= 4.6e18)
      return std::nullopt;
    return static_cast<int64_t>(bytes);
  }
  return std::nullopt;
}

std::optional<int64_t> PlanAttr::getDeviceMemoryBytes() const {
  if (getDeviceMemory().empty())
    return std::nullopt;
  return parseByteSize(getDeviceMemory());
}

PlanFields PlanAttr::getFields() const {
  return PlanFields{llvm::to_vector(getGrid()),
                    getTensorParallel(),
                    getSequenceParallel(),
                    getStrategy(),
                    getOptimizer(),
                    getParamDtype(),
                    getReduceDtype(),
                    getClipGradNorm().convertToDouble(),
                    getPrefetch(),
                    getMaxInflightGathers(),
                    getRemat(),
                    getRematEvery(),
                    getRematUnits(),
                    getMicroBatches(),
                    getAccumulate(),
                    getUnits(),
                    getMinUnitParams(),
                    getDeviceMemory().str(),
                    getOffload(),
                    getAllowTf32(),
                    getApproximateMath(),
                    getDeterministic()};
}

PlanAttr PlanAttr::get(MLIRContext *context, const PlanFields &fields,
                       function_ref<InFlightDiagnostic()> emitError) {
  return PlanAttr::getChecked(
      emitError, context, fields.grid, fields.tensorParallel, fields.sequenceParallel,
      fields.strategy, llvm::cast<OptimizerAttrInterface>(fields.optimizer), fields.paramDtype,
      fields.reduceDtype, APFloat(fields.clipGradNorm), fields.prefetch, fields.maxInflightGathers,
      fields.remat, fields.rematEvery, fields.rematUnits, fields.microBatches, fields.accumulate,
      fields.units, fields.minUnitParams, fields.deviceMemory, fields.offload, fields.allowTf32,
      fields.approximateMath, fields.deterministic);
}

PlanAttr PlanAttr::withGrid(ArrayRef<int64_t> grid,
                           function_ref<InFlightDiagnostic()> emitError) const {
  PlanFields fields = getFields();
  fields.grid.assign(grid.begin(), grid.end());
  return get(getContext(), fields, emitError);
}

const fsdprt::manifest::StrategySpec *mlir::fsdp::strategySpec(Strategy strategy) {
  return fsdprt::manifest::findByName(fsdprt::manifest::kStrategies, stringifyStrategy(strategy));
}

int64_t mlir::fsdp::dtypeBytes(DType dtype) {
  return fsdprt::manifest::findByName(fsdprt::manifest::kDTypes, stringifyDType(dtype))->bytes;
}

int64_t PlanAttr::getDataRanks() const {
  int64_t size = 1;
  for (int64_t dim : getGrid())
    size *= dim;
  return size;
}

int64_t PlanAttr::getWorldSize() const { return getDataRanks() * getTensorParallel(); }

//===----------------------------------------------------------------------===//
// Rotary embeddings
//===----------------------------------------------------------------------===//

LogicalResult Llama3RopeScalingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                            APFloat factor, APFloat lowFreqFactor,
                                            APFloat highFreqFactor,
                                            int64_t originalMaxPositions) {
  double f = factor.convertToDouble(), low = lowFreqFactor.convertToDouble(),
         high = highFreqFactor.convertToDouble();
  if (!std::isfinite(f) || !(f >= 1.0))
    return emitError() << "llama3_rope factor must be at least 1, got " << f;
  if (!std::isfinite(low) || !std::isfinite(high) || !(low > 0.0) || !(high > low))
    return emitError() << "llama3_rope needs 0 < low_freq_factor < high_freq_factor, got "
                       << low << " and " << high;
  if (originalMaxPositions < 1)
    return emitError() << "llama3_rope original_max_positions must be positive, got "
                       << originalMaxPositions;
  return success();
}

LogicalResult YarnRopeScalingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                          APFloat factor, APFloat betaFast, APFloat betaSlow,
                                          int64_t originalMaxPositions, APFloat attentionFactor,
                                          bool) {
  double f = factor.convertToDouble(), fast = betaFast.convertToDouble(),
         slow = betaSlow.convertToDouble(), m = attentionFactor.convertToDouble();
  if (!std::isfinite(f) || !(f >= 1.0))
    return emitError() << "yarn_rope factor must be at least 1, got " << f;
  if (!std::isfinite(fast) || !std::isfinite(slow) || !(slow > 0.0) || !(fast > slow))
    return emitError() << "yarn_rope needs 0 < beta_slow < beta_fast, got " << slow << " and "
                       << fast;
  if (originalMaxPositions < 1)
    return emitError() << "yarn_rope original_max_positions must be positive, got "
                       << originalMaxPositions;
  if (!std::isfinite(m) || !(m > 0.0))
    return emitError() << "yarn_rope attention_factor must be positive and finite, got " << m;
  return success();
}

std::pair<double, double> YarnRopeScalingAttr::rampRange(int64_t rotary, double theta) const {
  double r = static_cast<double>(rotary);
  double context = static_cast<double>(getOriginalMaxPositions());
  // The feature pair that turns `rotations` times over the original context.
  auto feature = [&](double rotations) {
    return r * std::log(context / (rotations * 2 * llvm::numbers::pi)) / (2 * std::log(theta));
  };
  double low = feature(getBetaFast().convertToDouble());
  double high = feature(getBetaSlow().convertToDouble());
  if (getTruncate()) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, r - 1);
  if (low == high)
    high += 0.001; // as Hugging Face does, against a division by zero
  return {low, high};
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void FSDPDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "fsdp/IR/FSDPAttrs.cpp.inc"
      >();
}
