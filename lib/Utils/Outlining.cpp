//===- Outlining.cpp - the step's code in small, shared functions ---------===//

#include "Utils/Outlining.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::fsdp;

void mlir::fsdp::keepOutlined(func::FuncOp function) {
  Builder b(function.getContext());
  function.setPrivate();
  function->setAttr("llvm.linkage",
                    LLVM::LinkageAttr::get(b.getContext(), LLVM::Linkage::Internal));
  function->setAttr("passthrough", b.getArrayAttr({b.getStringAttr("noinline")}));
}

void OutlinedInterface::add(Value value) {
  if (llvm::is_contained(arguments, value))
    return;
  Operation *def = value.getDefiningOp();
  if (!def || !clone(def)) {
    arguments.push_back(value);
    return;
  }
  if (llvm::is_contained(prelude, def))
    return;
  for (Value operand : def->getOperands())
    add(operand);
  prelude.push_back(def);
}

IRMapping OutlinedInterface::startBody(func::FuncOp function, OpBuilder &b) const {
  Block *body = function.addEntryBlock();
  b.setInsertionPointToStart(body);
  IRMapping mapping;
  mapping.map(arguments, body->getArguments());
  for (Operation *op : prelude)
    b.clone(*op, mapping);
  return mapping;
}

/// The attributes of `function` that say what it computes: all but its name.
static SmallVector<NamedAttribute> attributesBesidesName(FunctionOpInterface function) {
  SmallVector<NamedAttribute> attributes;
  for (NamedAttribute attribute : function->getAttrs())
    if (attribute.getName() != SymbolTable::getSymbolAttrName())
      attributes.push_back(attribute);
  return attributes;
}

/// Equal for identical functions (and, rarely, for others: `find` compares).
static llvm::hash_code hashOf(FunctionOpInterface function) {
  llvm::hash_code hash = hash_value(function.getFunctionType());
  function.getFunctionBody().walk([&](Operation *op) {
    hash = llvm::hash_combine(
        hash, OperationEquivalence::computeHash(op, OperationEquivalence::ignoreHashValue,
                                                OperationEquivalence::ignoreHashValue,
                                                OperationEquivalence::IgnoreLocations));
  });
  return hash;
}

FunctionOpInterface IdenticalFunctions::find(FunctionOpInterface function) const {
  auto bucket = buckets.find(hashOf(function));
  if (bucket == buckets.end())
    return {};
  for (FunctionOpInterface known : bucket->second)
    if (known.getFunctionType() == function.getFunctionType() &&
        attributesBesidesName(known) == attributesBesidesName(function) &&
        OperationEquivalence::isRegionEquivalentTo(&known.getFunctionBody(),
                                                   &function.getFunctionBody(),
                                                   OperationEquivalence::IgnoreLocations))
      return known;
  return {};
}

void IdenticalFunctions::add(FunctionOpInterface function) {
  buckets[hashOf(function)].push_back(function);
  ++count;
}
