//===- SerializeManifest.cpp - fsdp-serialize-manifest --------------------===//
//
// The step's facts stay typed (#fsdp.manifest) through the pipeline; here,
// at its end, they become the JSON document the trainer reads. Every key is
// the schema's (fsdprt/ManifestSchema.h), which the runtime's reader shares.
//
//===----------------------------------------------------------------------===//

#include "Utils/RuntimeABI.h"
#include "Utils/RuntimeCalls.h"
#include "fsdp/Codegen/Common/Passes.h"
#include "fsdp/IR/FSDPDialect.h"
#include "fsdprt/ManifestSchema.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/JSON.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPSERIALIZEMANIFESTPASS
#include "fsdp/Codegen/Common/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;
namespace json = llvm::json;
namespace schema = fsdprt::manifest;

namespace {

/// The manifest's name of an element type.
StringRef manifestDType(Type type) {
  if (type.isF32())
    return schema::dtype::kF32.name;
  if (type.isBF16())
    return schema::dtype::kBF16.name;
  if (type.isInteger(32))
    return schema::dtype::kI32.name;
  return schema::dtype::kI64.name;
}

json::Array integerList(ArrayRef<int64_t> values) { return json::Array(values); }

double real(const llvm::APFloat &value) { return value.convertToDouble(); }

json::Object initializerJson(InitializerAttrInterface init) {
  using namespace schema::init;
  return llvm::TypeSwitch<Attribute, json::Object>(init)
      .Case([](ZerosAttr) {
        return json::Object{{kKind.key, "zeros"}};
      })
      .Case([](OnesAttr) {
        return json::Object{{kKind.key, "ones"}};
      })
      .Case([](ConstantAttr a) {
        return json::Object{{kKind.key, "constant"}, {kValue.key, real(a.getValue())}};
      })
      .Case([](NormalAttr a) {
        return json::Object{
            {kKind.key, "normal"}, {kMean.key, real(a.getMean())}, {kStd.key, real(a.getStd())}};
      })
      .Case([](UniformAttr a) {
        return json::Object{
            {kKind.key, "uniform"}, {kLow.key, real(a.getLow())}, {kHigh.key, real(a.getHigh())}};
      })
      .Case([](FanInNormalAttr a) {
        return json::Object{{kKind.key, "fan_in_normal"}, {kScale.key, real(a.getScale())}};
      })
      .Case([](FanInUniformAttr a) {
        return json::Object{{kKind.key, "fan_in_uniform"}, {kScale.key, real(a.getScale())}};
      });
}

json::Object optimizerJson(OptimizerAttrInterface optimizer) {
  using namespace schema::optimizer;
  return llvm::TypeSwitch<Attribute, json::Object>(optimizer)
      .Case([](SGDAttr a) {
        return json::Object{{kKind.key, "sgd"},
                            {kLr.key, real(a.getLr())},
                            {kMomentum.key, real(a.getMomentum())},
                            {kWeightDecay.key, real(a.getWeightDecay())}};
      })
      .Case([](AdamWAttr a) {
        return json::Object{{kKind.key, "adamw"},
                            {kLr.key, real(a.getLr())},
                            {kBeta1.key, real(a.getBeta1())},
                            {kBeta2.key, real(a.getBeta2())},
                            {kEps.key, real(a.getEps())},
                            {kWeightDecay.key, real(a.getWeightDecay())}};
      });
}

json::Object unitJson(ManifestUnitAttr unit) {
  using namespace schema::unit;
  json::Object entry{{kName.key, unit.getName()},
                     {kDtype.key, manifestDType(unit.getDtype())},
                     {kTrainable.key, unit.getTrainable()},
                     {kNumel.key, unit.getNumel()},
                     {kShardNumel.key, unit.getShardNumel()},
                     {kParamOffset.key, unit.getParamOffset()}};
  if (std::optional<int64_t> gradOffset = unit.getGradOffset())
    entry[kGradOffset.key] = *gradOffset;
  if (unit.getTrainable()) {
    json::Array state;
    for (StateSlotAttr slot : unit.getState())
      state.push_back(json::Object{{schema::state_slot::kSlot.key, slot.getName()},
                                   {schema::state_slot::kOffset.key, slot.getOffset()}});
    entry[kState.key] = std::move(state);
  }
  if (UnitHostAttr host = unit.getHost()) {
    entry[kParamDtype.key] = manifestDType(unit.getParamDtype());
    entry[kHost.key] =
        json::Object{{schema::unit_host::kMasterOffset.key, host.getMasterOffset()},
                     {schema::unit_host::kGradOffset.key, host.getGradOffset()},
                     {schema::unit_host::kGradDtype.key, manifestDType(host.getGradDtype())}};
  }
  return entry;
}

json::Object paramJson(ManifestParamAttr param) {
  using namespace schema::param;
  json::Object entry{{kName.key, param.getName()},
                     {kShape.key, integerList(param.getShape())},
                     {kDtype.key, manifestDType(param.getDtype())},
                     {kUnit.key, param.getUnit()},
                     {kTrainable.key, param.getTrainable()},
                     {kInit.key, initializerJson(param.getInit())},
                     {kUnitOffset.key, param.getUnitOffset()}};
  if (std::optional<int64_t> dim = param.getSplitDim())
    entry[kSplitDim.key] = *dim;
  if (!param.getSplitParts().empty())
    entry[kSplitParts.key] = integerList(param.getSplitParts());
  return entry;
}

json::Object inputJson(int64_t index, ManifestInputAttr input) {
  using namespace schema::input;
  json::Object entry{{kIndex.key, index},
                     {kShape.key, integerList(input.getShape())},
                     {kDtype.key, manifestDType(input.getDtype())},
                     {kRole.key, input.getRole()},
                     {kOffset.key, input.getOffset()},
                     {kBytes.key, input.getBytes()}};
  if (input.getBound() > 0)
    entry[kBound.key] = input.getBound();
  return entry;
}

/// The units, parameters, inputs and collectives of the manifest.
void addMembers(ManifestAttr manifest, json::Object &root) {
  json::Array units, params, inputs, collectives;
  for (ManifestUnitAttr unit : manifest.getUnits())
    units.push_back(unitJson(unit));
  for (ManifestParamAttr param : manifest.getParams())
    params.push_back(paramJson(param));
  for (auto [index, input] : llvm::enumerate(manifest.getInputs()))
    inputs.push_back(inputJson(static_cast<int64_t>(index), input));
  for (ManifestCollectiveAttr collective : manifest.getCollectives())
    collectives.push_back(json::Object{{schema::collective::kKind.key, collective.getKind()},
                                       {schema::collective::kUnit.key, collective.getUnit()}});
  root[schema::root::kUnits.key] = std::move(units);
  root[schema::root::kParams.key] = std::move(params);
  root[schema::root::kInputs.key] = std::move(inputs);
  root[schema::root::kCollectives.key] = std::move(collectives);
}

json::Object recomputeJson(RecomputeAttr recompute) {
  using namespace schema::recompute;
  return json::Object{{kOps.key, recompute.getOps()},
                      {kProducts.key, recompute.getProducts()},
                      {kProductFlops.key, recompute.getProductFlops()},
                      {kOtherElements.key, recompute.getOtherElements()},
                      {kStepProductFlops.key, recompute.getStepProductFlops()},
                      {kAttentionFlops.key, recompute.getAttentionFlops()},
                      {kFusedAttentionFlops.key, recompute.getFusedAttentionFlops()}};
}

json::Object transientJson(TransientPlanAttr plan) {
  using namespace schema::transient;
  json::Object dtypeBytes;
  for (NamedAttribute entry : plan.getDtypeBytes())
    dtypeBytes[entry.getName().getValue()] = llvm::cast<IntegerAttr>(entry.getValue()).getInt();
  return json::Object{{kPeakBytes.key, plan.getPeakBytes()},
                      {kLiveBytes.key, plan.getLiveBytes()},
                      {kBuffers.key, plan.getBuffers()},
                      {kLiveBuffers.key, plan.getLiveBuffers()},
                      {kGatheredBytes.key, plan.getGatheredBytes()},
                      {kGradientBytes.key, plan.getGradientBytes()},
                      {kCollectiveBytes.key, plan.getCollectiveBytes()},
                      {kGradientShardBytes.key, plan.getGradientShardBytes()},
                      {kActivationBytes.key, plan.getActivationBytes()},
                      {kDtypeBytes.key, std::move(dtypeBytes)}};
}

json::Object stepFlopsJson(StepFlopsAttr flops) {
  using namespace schema::step_flops;
  return json::Object{{kProducts.key, flops.getProducts()},
                      {kBf16Products.key, flops.getBf16Products()},
                      {kAttention.key, flops.getAttention()},
                      {kRecomputed.key, flops.getRecomputed()},
                      {kOther.key, flops.getOther()}};
}

json::Object deviceProfileJson(DeviceProfileAttr profile) {
  using namespace schema::device_profile;
  return json::Object{
      {kName.key, profile.getName()},
      {kMatmulFlops.key,
       json::Object{{schema::matmul_flops::kF32.key, real(profile.getMatmulF32())},
                    {schema::matmul_flops::kBf16.key, real(profile.getMatmulBf16())}}}};
}

/// What later passes added, when they ran.
void addRecords(ManifestAttr manifest, json::Object &root) {
  using namespace schema::root;
  if (std::optional<int64_t> tokens = manifest.getTokensPerStep())
    root[kTokensPerStep.key] = *tokens;
  if (std::optional<int64_t> offset = manifest.getDeviceScalars())
    root[kDeviceScalars.key] = json::Object{{schema::device_scalars::kOffset.key, *offset}};
  if (RecomputeAttr recompute = manifest.getRecompute())
    root[kRecompute.key] = recomputeJson(recompute);
  if (TransientPlanAttr transient = manifest.getTransient())
    root[kTransient.key] = transientJson(transient);
  if (StepFlopsAttr flops = manifest.getStepFlops())
    root[kStepFlops.key] = stepFlopsJson(flops);
  if (DeviceProfileAttr profile = manifest.getDeviceProfile())
    root[kDeviceProfile.key] = deviceProfileJson(profile);
}

/// The manifest as docs/Runtime.md, section 2, writes it.
std::string manifestJson(ManifestAttr manifest) {
  using namespace schema::root;
  PlanAttr plan = manifest.getPlan();
  json::Object root{{kVersion.key, schema::kFormatVersion},
                    {kArenaBytes.key, manifest.getArenaBytes()},
                    {kPersistentBytes.key, manifest.getPersistentBytes()},
                    {kHostArenaBytes.key, manifest.getHostArenaBytes()},
                    {kBatch.key, manifest.getBatch()},
                    {kLocalBatch.key, manifest.getLocalBatch()},
                    {kGrid.key, integerList(plan.getGrid())},
                    {kStrategy.key, stringifyStrategy(plan.getStrategy())},
                    {kShardRanks.key, manifest.getShardRanks()},
                    {kReplicas.key, manifest.getReplicas()},
                    {kOptimizer.key, optimizerJson(plan.getOptimizer())},
                    {kClipGradNorm.key, real(plan.getClipGradNorm())},
                    {kAllowTf32.key, plan.getAllowTf32()}};
  if (plan.getTensorParallel() > 1)
    root[kTensorRanks.key] = plan.getTensorParallel();
  addMembers(manifest, root);
  addRecords(manifest, root);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << json::Value(std::move(root));
  return text;
}

struct FSDPSerializeManifestPass
    : public fsdp::impl::FSDPSerializeManifestPassBase<FSDPSerializeManifestPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto manifest = module->getAttrOfType<ManifestAttr>(FSDPDialect::getManifestAttrName());
    if (!manifest) {
      module.emitError("fsdp-serialize-manifest needs the manifest of convert-fsdp-to-runtime "
                       "(fsdp.manifest); the module has none");
      return signalPassFailure();
    }
    if (Operation *global = module.lookupSymbol(kManifestGlobal)) {
      global->emitError("fsdp-serialize-manifest writes @")
          << kManifestGlobal << ", which the module already has";
      return signalPassFailure();
    }
    defineCString(module, kManifestGlobal, manifestJson(manifest));
    module->removeAttr(FSDPDialect::getManifestAttrName());
  }
};

} // namespace
