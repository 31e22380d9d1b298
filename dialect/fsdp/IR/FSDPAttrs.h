//===- FSDPAttrs.h - fsdp attributes and enums ------------------*- C++ -*-===//

#ifndef FSDP_IR_FSDPATTRS_H
#define FSDP_IR_FSDPATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectImplementation.h"

#include "fsdprt/ManifestSchema.h"

#include "fsdp/IR/FSDPEnums.h.inc"
#include "fsdp/IR/FSDPAttrInterfaces.h.inc"

namespace mlir::fsdp {
/// Parses a real number parameter of an fsdp attribute (`0.02`, `-1`, `3e-4`).
FailureOr<llvm::APFloat> parseF64Parameter(AsmParser &parser);
/// Prints the shortest decimal form that parses back to the same double.
void printF64Parameter(AsmPrinter &printer, const llvm::APFloat &value);
/// `true` or `false`.
FailureOr<bool> parseBoolParameter(AsmParser &parser);
/// `[2, 4]`: a device grid (`[N]` or `[R, S]`) or a tensor's dimensions.
FailureOr<SmallVector<int64_t>> parseIntegerListParameter(AsmParser &parser);
void printIntegerListParameter(AsmPrinter &printer, ArrayRef<int64_t> list);

/// `[#fsdp.x<...>, ...]`: a list of attributes of one kind.
template <typename AttrT> FailureOr<SmallVector<AttrT>> parseAttrListParameter(AsmParser &parser) {
  SmallVector<AttrT> list;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                     [&] { return parser.parseAttribute(list.emplace_back()); }))
    return failure();
  return list;
}
template <typename AttrT> void printAttrListParameter(AsmPrinter &printer, ArrayRef<AttrT> list) {
  printer << '[';
  llvm::interleaveComma(list, printer, [&](AttrT attr) { printer.printAttribute(attr); });
  printer << ']';
}

/// Parses the keyword of an enum of the plan, listing the valid keywords when
/// it is not one of them.
template <typename EnumT>
FailureOr<EnumT> parseEnumParameter(AsmParser &parser, uint64_t maxValue) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (failed(parser.parseOptionalKeyword(&keyword)))
    keyword = "";
  if (std::optional<EnumT> value = symbolizeEnum<EnumT>(keyword))
    return *value;
  InFlightDiagnostic diag = parser.emitError(loc, "expected one of: ");
  for (uint64_t i = 0; i <= maxValue; ++i)
    diag << (i ? ", " : "") << stringifyEnum(static_cast<EnumT>(i));
  return diag;
}

/// The manifest schema's entry of `strategy` (the enum's keyword is its
/// name): which ranks share one copy of the model, by the grid's rules the
/// compiler and the runtime both apply. Null for a strategy the runtime does
/// not know.
const fsdprt::manifest::StrategySpec *strategySpec(Strategy strategy);
/// The bytes of one element of a plan's dtype (the manifest's table).
int64_t dtypeBytes(DType dtype);

/// A byte count written for people: `80GB`, `79.5GiB`, `512MiB`, `1000000`
/// (SI units are powers of 1000, binary ones of 1024); none unless positive.
std::optional<int64_t> parseByteSize(llvm::StringRef text);

/// The fields of a PlanAttr (FSDPAttrs.td), to build a changed copy.
struct PlanFields {
  SmallVector<int64_t> grid;
  int64_t tensorParallel;
  bool sequenceParallel;
  Strategy strategy;
  Attribute optimizer;
  DType paramDtype, reduceDtype;
  double clipGradNorm;
  int64_t prefetch, maxInflightGathers;
  RematPolicy remat;
  int64_t rematEvery;
  ArrayAttr rematUnits;
  int64_t microBatches;
  Accumulation accumulate;
  UnitPolicy units;
  int64_t minUnitParams;
  std::string deviceMemory;
  Offload offload;
  bool allowTf32, approximateMath, deterministic;
};
} // namespace mlir::fsdp

#define GET_ATTRDEF_CLASSES
#include "fsdp/IR/FSDPAttrs.h.inc"

#endif // FSDP_IR_FSDPATTRS_H
