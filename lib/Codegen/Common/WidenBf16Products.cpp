//===- WidenBf16Products.cpp - fsdp-widen-bf16-products -------------------===//
//
// On a CPU without bf16 instructions the runtime widens a bf16 product's
// operands to f32 in passes of their own and rounds C in another: memory
// traffic the f32 step does not have (the small Llama's bf16 step 1.015x and
// 1.05x its f32 step on an AVX-512 Xeon without BF16). Here the loops that
// compute and read those values do the conversions as they go, in registers.
//
//===----------------------------------------------------------------------===//

#include "fsdp/Codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPWIDENBF16PRODUCTSPASS
#include "fsdp/Codegen/Common/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;

namespace {

bool isReshape(Operation *op) {
  return isa_and_present<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op);
}

bool isStaticBf16Tensor(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape() && type.getElementType().isBF16();
}

/// `input` converted to `element`, elementwise, by one linalg.generic whose
/// body is `convert`.
Value convertElements(OpBuilder &b, Location loc, Value input, Type element,
                      function_ref<Value(OpBuilder &, Location, Value)> convert) {
  auto type = cast<RankedTensorType>(input.getType());
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(), element);
  SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(type.getRank()));
  SmallVector<utils::IteratorType> iterators(type.getRank(), utils::IteratorType::parallel);
  auto body = [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
    linalg::YieldOp::create(nested, nestedLoc, convert(nested, nestedLoc, args[0]));
  };
  return linalg::GenericOp::create(b, loc, TypeRange{init.getType()}, ValueRange{input},
                                   ValueRange{init}, maps, iterators, body)
      .getResult(0);
}

Value widenElements(OpBuilder &b, Location loc, Value input) {
  return convertElements(b, loc, input, b.getF32Type(), [](OpBuilder &nb, Location l, Value x) {
    return arith::ExtFOp::create(nb, l, nb.getF32Type(), x).getResult();
  });
}

Value roundElements(OpBuilder &b, Location loc, Value input) {
  return convertElements(b, loc, input, b.getBF16Type(), [](OpBuilder &nb, Location l, Value x) {
    return arith::TruncFOp::create(nb, l, nb.getBF16Type(), x).getResult();
  });
}

/// `reshape` applied to `wide`, the f32 twin of its bf16 operand, at the
/// builder's insertion point.
Value reshapeWide(OpBuilder &b, Operation *reshape, Value wide) {
  Operation *clone = b.clone(*reshape);
  clone->setOperand(0, wide);
  clone->getResult(0).setType(
      cast<RankedTensorType>(reshape->getResult(0).getType()).clone(b.getF32Type()));
  return clone->getResult(0);
}

/// The f32 twins of a function's bf16 product inputs: each source (the value
/// before the reshapes a product reads it through) widened once, right after
/// it is computed, where fusion will merge the widening into its loop. Every
/// product that reads the source reads the twin, backward's too: widening
/// again there would be a pass of its own, and measured, it saved no memory
/// (the MLP's bf16 arena on 2 ranks grew by 3% with it).
class Widener {
public:
  /// `operand` (bf16) as f32, built at the builder's insertion point.
  Value widen(OpBuilder &b, Value operand) {
    SmallVector<Operation *> reshapes;
    Value source = operand;
    while (isReshape(source.getDefiningOp())) {
      reshapes.push_back(source.getDefiningOp());
      source = source.getDefiningOp()->getOperand(0);
    }
    Value &wide = widened[source];
    if (!wide) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointAfterValue(source);
      wide = widenElements(b, source.getLoc(), source);
    }
    Value result = wide;
    for (Operation *reshape : llvm::reverse(reshapes))
      result = reshapeWide(b, reshape, result);
    return result;
  }

private:
  DenseMap<Value, Value> widened;
};

/// Replaces the bf16 value `narrow` by `wide`, its f32 twin, rounded where it
/// is read: the reshapes that follow `narrow` are applied to `wide` instead,
/// so that the rounding stands right before the ops that read the value,
/// which fusion merges it into.
void roundWhereRead(OpBuilder &b, Value narrow, Value wide) {
  Value rounded;
  for (OpOperand &use : llvm::make_early_inc_range(narrow.getUses())) {
    Operation *user = use.getOwner();
    if (isReshape(user)) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(user);
      roundWhereRead(b, user->getResult(0), reshapeWide(b, user, wide));
      user->erase();
      continue;
    }
    if (!rounded) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointAfterValue(wide);
      rounded = roundElements(b, wide.getLoc(), wide);
    }
    use.set(rounded);
  }
}

/// A product's f32 C: zero where the bf16 one is a filled empty tensor (a
/// product that does not accumulate), else the bf16 C widened.
Value wideInit(OpBuilder &b, Location loc, Value init, Widener &widener) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill || !fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>())
    return widener.widen(b, init);
  Value value = arith::ExtFOp::create(b, loc, b.getF32Type(), fill.getInputs()[0]);
  Value empty = tensor::EmptyOp::create(b, loc, cast<RankedTensorType>(init.getType()).getShape(),
                                        b.getF32Type());
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

template <typename ProductOp> void widenProduct(ProductOp product, Widener &widener) {
  if (!llvm::all_of(product->getOperands(), isStaticBf16Tensor))
    return;
  OpBuilder b(product);
  Location loc = product.getLoc();
  SmallVector<Value> inputs = llvm::map_to_vector(
      product.getInputs(), [&](Value input) { return widener.widen(b, input); });
  Value init = wideInit(b, loc, product.getOutputs()[0], widener);
  // The same product (indexing maps: transposes) on f32; the builder makes
  // the body for the operands' element type.
  SmallVector<NamedAttribute> attrs =
      llvm::filter_to_vector(product->getAttrs(), [](NamedAttribute attr) {
        return attr.getName() != "operandSegmentSizes";
      });
  auto wide = ProductOp::create(b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, attrs);
  roundWhereRead(b, product.getResult(0), wide.getResult(0));
  product.erase();
}

struct FSDPWidenBf16ProductsPass
    : public fsdp::impl::FSDPWidenBf16ProductsPassBase<FSDPWidenBf16ProductsPass> {
  void runOnOperation() override {
    Widener widener;
    SmallVector<Operation *> products;
    getOperation()->walk([&](Operation *op) {
      if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
        products.push_back(op);
    });
    for (Operation *op : products) {
      if (auto matmul = dyn_cast<linalg::MatmulOp>(op))
        widenProduct(matmul, widener);
      else
        widenProduct(cast<linalg::BatchMatmulOp>(op), widener);
    }
  }
};

} // namespace
