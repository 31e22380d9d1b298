//===- RuntimeCalls.cpp - calling the runtime from the step ---------------===//

#include "Utils/RuntimeCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

func::FuncOp mlir::fsdp::declareRuntimeFunction(ModuleOp module, StringRef name,
                                                FunctionType type) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto decl = func::FuncOp::create(b, module.getLoc(), name, type);
  decl.setPrivate();
  return decl;
}

Value mlir::fsdp::bufferAddress(OpBuilder &b, Location loc, Value buffer) {
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
  // The aligned pointer is the first element's address only at offset 0: add
  // the offset of a strided view.
  auto type = llvm::cast<MemRefType>(buffer.getType());
  int64_t offset;
  SmallVector<int64_t> strides;
  if (failed(type.getStridesAndOffset(strides, offset)) || offset != 0) {
    auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, buffer);
    Value elementBytes =
        arith::ConstantIndexOp::create(b, loc, type.getElementTypeBitWidth() / 8);
    Value byteOffset = arith::MulIOp::create(b, loc, metadata.getOffset(), elementBytes);
    address = arith::AddIOp::create(b, loc, address, byteOffset);
  }
  Value address64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()),
                                  address64);
}

Value mlir::fsdp::bufferOfAddress(Value pointer) {
  Value address = pointer;
  if (auto toPointer = address.getDefiningOp<LLVM::IntToPtrOp>())
    address = toPointer.getArg();
  if (auto cast = address.getDefiningOp<arith::IndexCastOp>())
    address = cast.getIn();
  // A strided view's offset added to its aligned pointer.
  if (auto add = address.getDefiningOp<arith::AddIOp>())
    address = add.getLhs();
  auto extract = address.getDefiningOp<memref::ExtractAlignedPointerAsIndexOp>();
  return extract ? extract.getSource() : Value();
}

Value mlir::fsdp::i32Constant(OpBuilder &b, Location loc, int32_t value) {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(value));
}

Value mlir::fsdp::i64Constant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(value));
}

LLVM::GlobalOp mlir::fsdp::defineCString(ModuleOp module, StringRef name, StringRef text) {
  std::string bytes = text.str();
  bytes.push_back('\0');
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
  return LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/true,
                                LLVM::Linkage::External, name, b.getStringAttr(bytes));
}
