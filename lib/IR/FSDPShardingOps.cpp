//===- FSDPShardingOps.cpp - units and collectives: verifiers -------------===//

#include "fsdp/IR/FSDPOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::fsdp;

//===----------------------------------------------------------------------===//
// UnitOp
//===----------------------------------------------------------------------===//

RankedTensorType UnitOp::getFlatType() {
  return RankedTensorType::get({int64_t(getShard() * getRanks())}, getElementType());
}

RankedTensorType UnitOp::getShardType() {
  return RankedTensorType::get({int64_t(getShard())}, getElementType());
}

SmallVector<ParamOp> UnitOp::getMembers() {
  SmallVector<ParamOp> members;
  auto module = (*this)->getParentOfType<ModuleOp>();
  for (ParamOp param : module.getOps<ParamOp>())
    if (param.getUnit() == getSymName())
      members.push_back(param);
  return members;
}

LogicalResult UnitOp::verify() {
  if (int64_t(getNumel()) < 1 || int64_t(getShard()) < 1 || int64_t(getRanks()) < 1)
    return emitOpError("numel, shard and ranks must be at least 1");
  int64_t flat = 0;
  if (llvm::MulOverflow<int64_t>(getShard(), getRanks(), flat) || flat < int64_t(getNumel()))
    return emitOpError("the ") << getRanks() << " shards of " << getShard()
                               << " elements do not hold the unit's " << getNumel()
                               << " elements";
  // The members tile [0, numel) in declaration order, as fsdp-partition lays
  // them out; anything else is a layout the runtime would misread.
  int64_t next = 0;
  SmallVector<ParamOp> members = getMembers();
  for (ParamOp param : members) {
    RankedTensorType type = param.getTensorType();
    // A unit's shards are summed over the tensor ranks (cut members) or
    // counted once per tensor rank (whole ones): one unit cannot be both.
    if (param.getSplitDim().has_value() != members.front().getSplitDim().has_value())
      return emitOpError("parameter '")
             << param.getSymName() << "' is "
             << (param.getSplitDim() ? "cut over the tensor ranks" : "whole") << ", but '"
             << members.front().getSymName() << "' of the same unit is "
             << (members.front().getSplitDim() ? "cut" : "whole")
             << "; a unit's members are all cut or all whole";
    if (type.getElementType() != getElementType())
      return emitOpError("parameter '")
             << param.getSymName() << "' has element type " << type.getElementType()
             << ", but the unit holds " << getElementType();
    if (param.getOffset() != next)
      return emitOpError("parameter '")
             << param.getSymName() << "' must be at offset " << next
             << " (right after the previous member), got "
             << (param.getOffset() ? std::to_string(*param.getOffset()) : "none");
    next += type.getNumElements();
  }
  if (next != int64_t(getNumel()))
    return emitOpError("the parameters of the unit hold ")
           << next << " elements, but numel is " << getNumel();
  return success();
}

/// The unit `name` refers to, or an error at `op`.
static FailureOr<UnitOp> lookupUnit(Operation *op, FlatSymbolRefAttr name,
                                    SymbolTableCollection &symbolTable) {
  auto unit = symbolTable.lookupNearestSymbolFrom<UnitOp>(op, name);
  if (!unit)
    return op->emitOpError("'") << name.getValue() << "' does not name an fsdp.unit";
  return unit;
}

//===----------------------------------------------------------------------===//
// AllGatherOp / ParamViewOp / FreeOp
//===----------------------------------------------------------------------===//

/// Whether `narrow`'s values are all exactly values of `wide` (bf16 in f32).
static bool isExactIn(Type narrow, Type wide) {
  return narrow == wide || (narrow.isBF16() && wide.isF32());
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<UnitOp> unit = lookupUnit(*this, getUnitAttr(), symbolTable);
  if (failed(unit))
    return failure();
  // The shard may be rounded to a narrower type before it travels (mixed
  // precision), never widened: that would move more bytes for nothing.
  RankedTensorType flat = unit->getFlatType();
  if (getType().getShape() != flat.getShape() ||
      !isExactIn(getType().getElementType(), flat.getElementType()))
    return emitOpError("result type ")
           << getType() << " is not the flat type " << flat << " of unit '" << getUnit()
           << "', or its shape in a narrower float type";
  return success();
}

LogicalResult ParamViewOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto param = symbolTable.lookupNearestSymbolFrom<ParamOp>(*this, getParamAttr());
  if (!param)
    return emitOpError("'") << getParam() << "' does not name an fsdp.param";
  RankedTensorType declared = param.getTensorType();
  if (getType().getShape() != declared.getShape() ||
      getType().getElementType() != getGathered().getType().getElementType())
    return emitOpError("type ") << getType() << " is not the shape of '" << getParam()
                                << "' (" << declared << ") in the element type of the "
                                << "gathered buffer";
  if (!param.getUnit() || !param.getOffset())
    return emitOpError("'") << getParam() << "' has no place in a unit; run fsdp-partition";
  auto unit = symbolTable.lookupNearestSymbolFrom<UnitOp>(
      *this, StringAttr::get(getContext(), *param.getUnit()));
  if (!unit)
    return emitOpError("the unit '") << *param.getUnit() << "' of '" << getParam()
                                     << "' has no fsdp.unit";
  auto gather = getGathered().getDefiningOp<AllGatherOp>();
  if (!gather || gather.getUnit() != unit.getSymName())
    return emitOpError("reads '") << getParam() << "' from a value that is not an "
                                  << "fsdp.all_gather of its unit '" << unit.getSymName()
                                  << "'";
  return success();
}

LogicalResult FreeOp::verify() {
  if (!getGathered().getDefiningOp<AllGatherOp>())
    return emitOpError("frees a value that no fsdp.all_gather produced");
  for (Operation *user : getGathered().getUsers())
    if (user != getOperation() &&
        (user->getBlock() != (*this)->getBlock() || !user->isBeforeInBlock(*this)))
      return emitOpError("the freed buffer is still used afterwards")
                 .attachNote(user->getLoc())
             << "used here";
  return success();
}

//===----------------------------------------------------------------------===//
// FlattenOp / ReduceScatterOp
//===----------------------------------------------------------------------===//

LogicalResult FlattenOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<UnitOp> unit = lookupUnit(*this, getUnitAttr(), symbolTable);
  if (failed(unit))
    return failure();
  SmallVector<ParamOp> members = unit->getMembers();
  if (members.size() != getGrads().size())
    return emitOpError("unit '") << getUnit() << "' has " << members.size()
                                 << " parameters, but " << getGrads().size()
                                 << " gradients are given";
  for (auto [index, pair] : llvm::enumerate(llvm::zip_equal(members, getGrads()))) {
    auto [param, grad] = pair;
    auto gradType = llvm::cast<RankedTensorType>(grad.getType());
    if (param.getTensorType().getShape() != gradType.getShape() ||
        !isExactIn(gradType.getElementType(), getType().getElementType()))
      return emitOpError("gradient #")
             << index << " has type " << grad.getType() << ", but '" << param.getSymName()
             << "' is " << param.getType() << " and the flat gradient holds "
             << getType().getElementType();
  }
  // The flat gradient is in the type it is reduced in: the unit's, or bf16
  // (mixed precision with reduce_dtype = bf16).
  RankedTensorType flat = unit->getFlatType();
  if (getType().getShape() != flat.getShape() || !getType().getElementType().isFloat())
    return emitOpError("result type ") << getType() << " is not the flat type " << flat
                                       << " of unit '" << getUnit()
                                       << "' in a float type";
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  RankedTensorType input = getInput().getType(), result = getType();
  if (input.getRank() != 1 || result.getRank() != 1 ||
      input.getElementType() != result.getElementType())
    return emitOpError("input and result must be 1-D tensors of one element type");
  if (input.getDimSize(0) % result.getDimSize(0) != 0)
    return emitOpError("the input's ")
           << input.getDimSize(0) << " elements do not split into shards of "
           << result.getDimSize(0);
  return success();
}
