//===- Partition.cpp - fsdp-partition: flat sharded units, per-rank batch -===//
//
// The two layout decisions of data parallelism, made once on the model:
// where each parameter lives in its unit's flat sharded buffer (from
// ShardingLayout, which fsdp-report reads too), and which rows of the batch a
// rank computes (every rank a contiguous block of batch / ranks rows). With
// micro-batches the step is typed for one micro-batch of a rank, batch /
// (ranks x micro_batches) rows: fsdp-accumulate-micro-batches runs it once
// per micro-batch.
//
//===----------------------------------------------------------------------===//

#include "Analysis/ShardingLayout.h"
#include "fsdp/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPPARTITIONPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// Re-derives the types of a function's ops after its inputs lost all but
/// 1/parts of their rows (parts: ranks x micro-batches). A value derived from
/// an input keeps the batch in dimension 0, which is what lets reshapes and
/// broadcasts be re-typed.
class BatchSplitter {
public:
  BatchSplitter(int64_t ranks, int64_t microBatches)
      : parts(ranks * microBatches),
        across(std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks") +
               (microBatches > 1 ? " x " + std::to_string(microBatches) + " micro-batches"
                                 : std::string())) {}

  LogicalResult split(func::FuncOp function);

private:
  /// The type with dimension 0 divided by the parts, or an error at `loc`.
  FailureOr<RankedTensorType> splitType(Location loc, Type type, StringRef what);
  LogicalResult retype(Operation &op);
  void setType(Value value, Type type) {
    originalTypes.try_emplace(value, value.getType());
    value.setType(type);
  }
  Type originalType(Value value) { return originalTypes.lookup(value) ?: value.getType(); }
  /// A value holds a part of the batch when it got smaller with the inputs
  /// (a reduction over the batch gives per-rank partial values instead).
  bool isBatched(Value value) { return originalType(value) != value.getType(); }

  int64_t parts;
  /// What the batch is split across, for diagnostics: "4 ranks" or "4 ranks
  /// x 2 micro-batches".
  std::string across;
  llvm::DenseMap<Value, Type> originalTypes;
};

FailureOr<RankedTensorType> BatchSplitter::splitType(Location loc, Type type,
                                                     StringRef what) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() == 0)
    return emitError(loc) << what << " has no batch dimension to split across " << across
                          << ": " << type;
  int64_t rows = tensor.getDimSize(0);
  if (rows % parts != 0)
    return emitError(loc) << what << " " << type << ": the batch of " << rows
                          << " does not split evenly across " << across;
  SmallVector<int64_t> shape(tensor.getShape());
  shape[0] = rows / parts;
  return tensor.clone(shape);
}

LogicalResult BatchSplitter::retype(Operation &op) {
  if (auto transpose = dyn_cast<TransposeOp>(op); transpose &&
                                                   transpose.getPermutation()[0] != 0)
    return op.emitError("moves the batch dimension away from dimension 0; the batch "
                        "cannot be split across ")
           << across;
  if (auto slice = dyn_cast<SliceOp>(op); slice && slice.getDim() == 0)
    return op.emitError("slices the batch dimension; the batch cannot be split across ")
           << across;
  if (auto infer = llvm::dyn_cast<InferTypeOpInterface>(op)) {
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(op.getContext(), op.getLoc(), op.getOperands(),
                                      op.getRawDictionaryAttrs(), op.getPropertiesStorage(),
                                      op.getRegions(), types)))
      return op.emitError("cannot compute this op on a part of the batch (split across ")
             << across << ")";
    for (auto [result, type] : llvm::zip_equal(op.getResults(), types))
      setType(result, type);
    // NumPy broadcasting would silently stretch a part of the batch against
    // an operand of the global batch size.
    if (isa<AddOp, SubOp, MulOp, DivOp>(op)) {
      auto result = llvm::cast<RankedTensorType>(op.getResult(0).getType());
      for (Value operand : op.getOperands()) {
        auto type = llvm::cast<RankedTensorType>(operand.getType());
        if (isBatched(operand) && type.getRank() == result.getRank() &&
            type.getDimSize(0) != result.getDimSize(0))
          return op.emitError("combines a part of the batch (")
                 << type << ") with a value of the global batch size; the batch "
                 << "cannot be split across " << across;
      }
    }
    return success();
  }
  if (isa<ReshapeOp, BroadcastOp>(op)) {
    // Rows stay whole: a rank's contiguous block of the input is a contiguous
    // block of the result's leading dimension.
    Value input = op.getOperand(0);
    auto inputType = llvm::cast<RankedTensorType>(originalType(input));
    auto resultType = llvm::cast<RankedTensorType>(op.getResult(0).getType());
    if (isa<BroadcastOp>(op) && inputType.getRank() != resultType.getRank())
      return op.emitError("broadcasting adds leading dimensions in front of the batch "
                          "dimension; the batch cannot be split across ")
             << across;
    FailureOr<RankedTensorType> type = splitType(op.getLoc(), resultType, "the result");
    if (failed(type))
      return failure();
    setType(op.getResult(0), *type);
    return success();
  }
  if (auto chunk = dyn_cast<TensorChunkOp>(op); chunk && chunk.getDim() != 0) {
    // The key and value heads a tensor rank reads (fsdp-split-tensors): its
    // part of the batch, as many rows as its input.
    auto resultType = llvm::cast<RankedTensorType>(chunk.getType());
    SmallVector<int64_t> shape(resultType.getShape());
    shape[0] = chunk.getInput().getType().getDimSize(0);
    setType(chunk.getResult(), resultType.clone(shape));
    return success();
  }
  // Ops whose results repeat their first operand's type.
  Type before = originalType(op.getOperand(0));
  if (llvm::all_of(op.getResultTypes(), [&](Type type) { return type == before; })) {
    for (Value result : op.getResults())
      setType(result, op.getOperand(0).getType());
    return success();
  }
  return op.emitError("cannot tell how this op's result depends on the batch, which "
                      "is split across ")
         << across;
}

LogicalResult BatchSplitter::split(func::FuncOp function) {
  Block &body = function.getBody().front();
  for (BlockArgument input : body.getArguments()) {
    FailureOr<RankedTensorType> type =
        splitType(function.getLoc(), input.getType(),
                  ("input #" + std::to_string(input.getArgNumber())));
    if (failed(type))
      return failure();
    setType(input, *type);
  }
  for (Operation &op : body.without_terminator())
    if (llvm::any_of(op.getOperands(), [&](Value v) { return isBatched(v); }) &&
        failed(retype(op)))
      return failure();
  function.setFunctionType(FunctionType::get(function.getContext(), body.getArgumentTypes(),
                                             body.getTerminator()->getOperandTypes()));
  return success();
}

struct FSDPPartitionPass : public fsdp::impl::FSDPPartitionPassBase<FSDPPartitionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<ShardingLayout> layout = ShardingLayout::build(module);
    if (failed(layout))
      return signalPassFailure();
    if (!module.getOps<UnitOp>().empty()) {
      module.emitError("the module is partitioned already");
      return signalPassFailure();
    }

    OpBuilder b(&getContext());
    SymbolTable symbols(module);
    for (const UnitLayout &unit : layout->units) {
      if (Operation *clash = symbols.lookup(unit.name)) {
        clash->emitError("'") << unit.name
                              << "' names both this symbol and a unit; rename one of them";
        return signalPassFailure();
      }
      for (const ParamSlice &slice : unit.params)
        ParamOp(slice.param).setOffset(slice.offset);
      b.setInsertionPointAfter(ParamOp(unit.params.back().param));
      UnitOp::create(b, ParamOp(unit.params.back().param).getLoc(), unit.name, unit.numel,
                     unit.shardNumel, layout->shardRanks,
                     llvm::cast<FloatType>(unit.elementType));
    }

    auto functions = llvm::to_vector(module.getOps<func::FuncOp>());
    if (functions.size() != 1 || !functions.front().getBody().hasOneBlock()) {
      module.emitError("fsdp-partition expects one single-block function, the model's "
                       "loss");
      return signalPassFailure();
    }
    int64_t ranks = layout->plan.getDataRanks(), microBatches = layout->plan.getMicroBatches();
    if (ranks * microBatches > 1 &&
        failed(BatchSplitter(ranks, microBatches).split(functions.front())))
      signalPassFailure();
  }
};

} // namespace
