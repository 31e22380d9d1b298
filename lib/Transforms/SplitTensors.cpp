//===- SplitTensors.cpp - fsdp-split-tensors: Megatron's layout -----------===//
//
// Tensor parallelism on the model, before fsdp-partition: the tensor ranks
// beside each data-parallel rank each hold a block of the products' weights
// and compute their block of the activations between two products.
//
// The layout is derived from the dataflow, as Megatron-LM lays out a
// transformer block: a product of a whole activation and a parameter is
// column-parallel (its weight cut along its output features), what follows it
// stays cut along the same features (through elementwise ops, reshapes into
// heads, transposes, rotary embeddings, attention over the heads), and a
// product of such a cut activation along its contraction dimension and a
// parameter is row-parallel (its weight cut along its input features): its
// result is a partial sum, which fsdp.tensor_sum adds up over the tensor
// ranks. Every whole value read inside such a region (the column products'
// input, a parameter no product cuts) enters it through fsdp.tensor_copy, so
// its gradient is summed over the ranks. Key and value heads the ranks cannot
// divide (fewer of them than ranks: grouped-query and multi-query attention)
// are computed whole on every rank, which reads the ones its query heads use
// through fsdp.tensor_chunk. An output head's region (logits cut along the
// classes) closes at its cross-entropy, which the ranks compute from their
// blocks' statistics (fsdp.tensor_cross_entropy) without gathering the
// logits; an embedding's table is cut along its rows (the vocabulary), each
// rank looking up its block's (fsdp.tensor_embedding) and fsdp.tensor_sum
// adding the parts: a region of one op. The region between a column product
// and its row products (or loss) is the unit of the decision: one that
// reaches anything else (a norm, the model's result) stays whole on every
// rank, and so does one that cuts a parameter another read holds whole (a
// tied embedding); the search runs again without the ops that opened it,
// which may then read whole values themselves. So does one that would cut a parameter the user
// declares `tensor whole`; one declared `tensor cut` that stays whole is an error.
//
//===----------------------------------------------------------------------===//

#include "fsdp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#include <map>

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPSPLITTENSORSPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// A value cut into blocks along `dim`, one per tensor rank, in `region`.
struct Split {
  int64_t dim;
  unsigned region;
  /// The whole sizes of consecutive parts of `dim`, each cut into the ranks'
  /// blocks (a fused product's queries, keys and values), or none: one part.
  SmallVector<int64_t> parts;
};

/// A reason a region cannot be cut although the layout wants it cut: an error
/// once the region turns out to end at row-parallel products.
struct PendingError {
  Location loc;
  std::string message;
};

/// What the search knows of a region: why it cannot be cut as the layout
/// wants, what keeps it whole, whether a row-parallel product closes it.
struct RegionFacts {
  SmallVector<PendingError> errors;
  /// The op whose operand a region cannot reach through: it stays whole.
  Operation *blocker = nullptr;
  bool closed = false;
};

int64_t product(ArrayRef<int64_t> dims) {
  int64_t result = 1;
  for (int64_t dim : dims)
    result *= dim;
  return result;
}

/// The dimension of `to` that holds the tensor ranks' blocks of dimension
/// `dim` of `from` when a row-major reshape turns one into the other: the one
/// after as many elements of outer dimensions, cut evenly by the ranks.
std::optional<int64_t> reshapedSplit(ArrayRef<int64_t> from, int64_t dim, ArrayRef<int64_t> to,
                                     int64_t ranks) {
  int64_t outer = product(from.take_front(dim));
  for (int64_t candidate = 0; candidate < static_cast<int64_t>(to.size()); ++candidate)
    if (product(to.take_front(candidate)) == outer && to[candidate] % ranks == 0)
      return candidate;
  return std::nullopt;
}

RankedTensorType typeOf(Value value) { return llvm::cast<RankedTensorType>(value.getType()); }

/// The parameter a product reads as its weight, if it reads one directly.
UseOp weightOf(MatmulOp product) { return product.getRhs().getDefiningOp<UseOp>(); }

/// Ops whose result holds each element of their operands' cut dimension in
/// place: a fused product's parts pass through them.
bool keepsPlaces(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, ReluOp, GeluOp, SiluOp, TanhOp, ExpOp, ScaleOp, ConvertOp>(
      op);
}

/// The whole sizes of the parts a fused product's `result` is sliced into
/// along its last dimension (after ops that keep places: a bias added), when
/// the slices tile it in two or more parts; else none.
SmallVector<int64_t> fusedParts(Value result) {
  int64_t rank = typeOf(result).getRank(), size = typeOf(result).getShape().back();
  std::map<int64_t, int64_t> slices; // offset -> size
  SmallVector<Value> worklist = {result};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (auto slice = dyn_cast<SliceOp>(user);
          slice && static_cast<int64_t>(slice.getDim()) == rank - 1) {
        auto [at, added] = slices.try_emplace(slice.getOffset(), slice.getSize());
        if (!added && at->second != static_cast<int64_t>(slice.getSize()))
          return {};
      } else if (keepsPlaces(user) && typeOf(user->getResult(0)).getRank() == rank) {
        worklist.push_back(user->getResult(0));
      }
    }
  }
  SmallVector<int64_t> parts;
  int64_t next = 0;
  for (auto [offset, length] : slices) {
    if (offset != next)
      return {};
    parts.push_back(length);
    next += length;
  }
  if (next != size || parts.size() < 2)
    return {};
  return parts;
}

/// Where part `[offset, offset + size)` of `parts` (whole sizes) starts in a
/// rank's block, when it is one of them.
std::optional<int64_t> blockOffsetOfPart(ArrayRef<int64_t> parts, int64_t offset, int64_t size,
                                         int64_t ranks) {
  int64_t start = 0;
  for (int64_t part : parts) {
    if (start == offset && part == size)
      return start / ranks;
    start += part;
  }
  return std::nullopt;
}

/// Megatron's regions of one loss function with `ranks` tensor ranks: which
/// values are cut, and along which dimension.
class RegionSearch {
public:
  RegionSearch(int64_t ranks, const llvm::DenseSet<Operation *> &wholeOpeners,
               const llvm::StringSet<> &wholeParams)
      : ranks(ranks), wholeOpeners(wholeOpeners), wholeParams(wholeParams) {}

  void run(Block &body);
  /// The column products and embeddings of regions that stay whole (the
  /// next search's `wholeOpeners`).
  SmallVector<Operation *> openedWholeRegions();
  bool succeeded(unsigned region) { return facts(region).closed && !facts(region).blocker; }

  int64_t ranks;
  /// The ops that open no region: those whose regions stayed whole before.
  const llvm::DenseSet<Operation *> &wholeOpeners;
  /// The parameters declared `tensor whole`.
  const llvm::StringSet<> &wholeParams;
  llvm::DenseMap<Value, Split> splits;
  /// Each region's column products (opening it) and row products (closing it).
  SmallVector<std::pair<MatmulOp, unsigned>> columnProducts, rowProducts;
  /// The cross-entropies that close a region (an output head's), and the
  /// embeddings that are one.
  SmallVector<std::pair<CrossEntropyOp, unsigned>> losses;
  SmallVector<std::pair<EmbeddingOp, unsigned>> embeddings;
  llvm::EquivalenceClasses<unsigned> regions;

  RegionFacts &facts(unsigned region) { return regionFacts[regions.getLeaderValue(region)]; }

private:
  void visit(Operation &op);
  void visitProduct(MatmulOp product);
  void visitAttention(AttentionOp attention);
  void visitLoss(CrossEntropyOp loss);
  void visitEmbedding(EmbeddingOp embedding);
  /// Keeps whole the regions that cut a parameter some other read of which
  /// is whole: every rank holds a parameter cut or whole, not both.
  void keepMixedParametersWhole(Block &body);
  /// Where the ranks do not divide the `count` `items` of a vocabulary at
  /// `op`, the one reason worth giving for its region, with the ways out.
  void checkVocabulary(unsigned region, Operation *op, int64_t count, StringRef items,
                       StringRef what, StringRef parameter);
  /// Whether the key or value `operand` of attention whose query is cut
  /// along its heads enters it whole, each rank reading its heads' chunk.
  bool readsWholeHeads(Value operand, unsigned queryRegion);
  unsigned newRegion() {
    unsigned id = regionFacts.size();
    regionFacts.emplace_back();
    regions.insert(id);
    return id;
  }
  unsigned merge(ArrayRef<unsigned> ids);
  /// Records that `value` is cut along `dim`; a block that is not a whole
  /// number of elements of that dimension is a pending error at `op`.
  void cut(Value value, int64_t dim, unsigned region, Operation *op, ArrayRef<int64_t> parts = {});
  /// The parts of the cut dimension of `op`'s result, from its operands'.
  SmallVector<int64_t> resultParts(Operation &op, unsigned region);
  void block(unsigned region, Operation *op) {
    if (!facts(region).blocker)
      facts(region).blocker = op;
  }
  /// The first reason on a path: what follows from it would only repeat it.
  void pending(unsigned region, Operation *op, const Twine &message) {
    if (facts(region).errors.empty())
      facts(region).errors.push_back({op->getLoc(), message.str()});
  }
  std::optional<int64_t> resultSplit(Operation &op, unsigned region);
  std::optional<int64_t> elementwiseSplit(Operation &op, unsigned region);

  /// Indexed by region id; read through facts(), the leader's.
  std::vector<RegionFacts> regionFacts;
};

unsigned RegionSearch::merge(ArrayRef<unsigned> ids) {
  unsigned leader = ids.front();
  for (unsigned id : ids.drop_front()) {
    RegionFacts &from = facts(id), &into = facts(leader);
    if (regions.isEquivalent(id, leader))
      continue;
    RegionFacts merged = into;
    merged.errors.append(from.errors);
    merged.blocker = merged.blocker ? merged.blocker : from.blocker;
    merged.closed = into.closed || from.closed;
    regions.unionSets(id, leader);
    facts(leader) = std::move(merged);
  }
  return regions.getLeaderValue(leader);
}

void RegionSearch::cut(Value value, int64_t dim, unsigned region, Operation *op,
                       ArrayRef<int64_t> parts) {
  if (auto use = value.getDefiningOp<UseOp>(); use && wholeParams.contains(use.getParam()))
    return block(region, op);
  int64_t size = typeOf(value).getDimSize(dim);
  if (size % ranks != 0)
    pending(region, op,
            "tensor_parallel = " + Twine(ranks) + " does not divide dimension " + Twine(dim) +
                " (" + Twine(size) + ") of " +
                (isa<UseOp>(value.getDefiningOp()) ? "the parameter's " : "its ") +
                "tensor, which the tensor ranks cut");
  for (int64_t part : parts)
    if (part % ranks != 0)
      pending(region, op,
              "tensor_parallel = " + Twine(ranks) + " does not divide a part (" + Twine(part) +
                  ") of its fused product's features, which the tensor ranks cut part by part");
  splits[value] = {dim, region, SmallVector<int64_t>(parts)};
}

void RegionSearch::visitProduct(MatmulOp product) {
  UseOp weight = weightOf(product);
  auto lhs = splits.find(product.getLhs());
  int64_t lhsRank = typeOf(product.getLhs()).getRank();
  bool transposeRhs = product.getTransposeRhs();
  if (lhs == splits.end()) {
    if (wholeOpeners.contains(product) || product.getTransposeLhs())
      return;
    // Column-parallel: each rank computes its block of the output features,
    // of each part of a fused product's.
    unsigned region = newRegion();
    columnProducts.push_back({product, region});
    SmallVector<int64_t> parts = fusedParts(product.getResult());
    cut(weight.getResult(), transposeRhs ? 0 : 1, region, product, parts);
    cut(product.getResult(), lhsRank - 1, region, product, parts);
    return;
  }
  unsigned region = lhs->second.region;
  if (!product.getTransposeLhs() && lhs->second.dim == lhsRank - 1) {
    // Row-parallel: each rank sums over its block of the input features.
    rowProducts.push_back({product, region});
    cut(weight.getResult(), transposeRhs ? 1 : 0, region, product);
    facts(region).closed = true;
    return;
  }
  if (!product.getTransposeLhs() && lhs->second.dim < lhsRank - 2) {
    // A dimension of the rows: the whole weight reads each block.
    cut(product.getResult(), lhs->second.dim, region, product);
    return;
  }
  block(region, product);
}

std::optional<int64_t> RegionSearch::elementwiseSplit(Operation &op, unsigned region) {
  int64_t rank = typeOf(op.getResult(0)).getRank();
  std::optional<int64_t> dim;
  for (Value operand : op.getOperands()) {
    auto split = splits.find(operand);
    if (split == splits.end())
      continue;
    int64_t aligned = split->second.dim + rank - typeOf(operand).getRank();
    if (dim && *dim != aligned) {
      block(region, &op);
      return std::nullopt;
    }
    dim = aligned;
  }
  // A whole operand that broadcasts along the cut dimension is read whole; one
  // that spans it must be cut too, which only a parameter (a bias) can be.
  for (Value operand : op.getOperands()) {
    if (splits.contains(operand))
      continue;
    RankedTensorType type = typeOf(operand);
    int64_t own = *dim - (rank - type.getRank());
    if (own < 0 || type.getDimSize(own) == 1)
      continue;
    if (!operand.getDefiningOp<UseOp>()) {
      block(region, &op);
      return std::nullopt;
    }
    // A fused product's bias: cut part by part, as the product's features.
    cut(operand, own, region, &op, resultParts(op, region));
  }
  return dim;
}

SmallVector<int64_t> RegionSearch::resultParts(Operation &op, unsigned region) {
  const Split *cutParts = nullptr;
  bool plain = false;
  for (Value operand : op.getOperands()) {
    auto split = splits.find(operand);
    if (split == splits.end())
      continue;
    if (split->second.parts.empty())
      plain = true;
    else if (!cutParts || cutParts->parts == split->second.parts)
      cutParts = &split->second;
    else
      plain = true; // parts of two kinds: as wrong as parts and none
  }
  if (!cutParts)
    return {};
  // The ranks' blocks of values cut part by part and of values cut whole hold
  // different features: no elementwise op may combine them.
  if (plain) {
    pending(region, &op,
            "combines a fused product's parts, which the tensor ranks cut part by part, with "
            "a value they cut otherwise");
    return {};
  }
  // A slice of the cut dimension takes one part (resultSplit); one of another
  // dimension, a transpose and the ops that keep places keep them all.
  auto slice = dyn_cast<SliceOp>(op);
  if (slice && static_cast<int64_t>(slice.getDim()) == cutParts->dim)
    return {};
  if (slice || isa<TransposeOp>(op) || keepsPlaces(&op))
    return cutParts->parts;
  pending(region, &op,
          "reads a fused product's parts, which the tensor ranks cut part by part, but does "
          "not keep them in place: tensor parallelism needs the parts sliced apart first");
  return {};
}

std::optional<int64_t> RegionSearch::resultSplit(Operation &op, unsigned region) {
  Value input = op.getOperand(0);
  auto inputSplit = splits.find(input);
  int64_t dim = inputSplit != splits.end() ? inputSplit->second.dim : -1;
  int64_t rank = typeOf(input).getRank();
  if (isa<AddOp, SubOp, MulOp, DivOp>(op))
    return elementwiseSplit(op, region);
  if (isa<ReluOp, GeluOp, SiluOp, TanhOp, ExpOp, ScaleOp, ConvertOp>(op))
    return dim;
  if (auto rope = dyn_cast<RopeOp>(op))
    return dim != rank - 1 && dim != static_cast<int64_t>(rope.getPositions())
               ? std::optional<int64_t>(dim)
               : std::nullopt;
  // A norm over each head's features (Qwen 3's query and key norms) reads its
  // whole gains in every block; one over the cut features would need them all.
  if (isa<RMSNormOp, LayerNormOp>(op))
    return dim >= 0 && dim != rank - 1 ? std::optional<int64_t>(dim) : std::nullopt;
  if (auto softmax = dyn_cast<SoftmaxOp>(op))
    return dim != static_cast<int64_t>(softmax.getDim()) ? std::optional<int64_t>(dim)
                                                         : std::nullopt;
  if (isa<CausalMaskOp>(op))
    return dim < rank - 2 ? std::optional<int64_t>(dim) : std::nullopt;
  if (auto transpose = dyn_cast<TransposeOp>(op))
    return llvm::find(transpose.getPermutation(), dim) - transpose.getPermutation().begin();
  if (auto slice = dyn_cast<SliceOp>(op)) {
    if (static_cast<int64_t>(slice.getDim()) == dim &&
        !blockOffsetOfPart(inputSplit->second.parts, slice.getOffset(), slice.getSize(), ranks))
      pending(region, &op,
              "slices the dimension the tensor ranks cut, but not into the parts of a fused "
              "product (slices tiling its features after its bias); tensor parallelism needs "
              "each part a product of its own, or the product's result sliced into its parts");
    return dim;
  }
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    RankedTensorType to = typeOf(reshape.getResult());
    std::optional<int64_t> mapped =
        reshapedSplit(typeOf(input).getShape(), dim, to.getShape(), ranks);
    if (!mapped)
      pending(region, &op,
              "the tensor ranks' blocks of dimension " + Twine(dim) +
                  " of its operand are no whole slices of any dimension of the result: "
                  "tensor_parallel = " +
                  Twine(ranks) + " must divide the result's dimension that holds them " +
                  "(the heads, when features become heads)");
    return mapped.value_or(dim);
  }
  if (isa<BatchMatmulOp>(op)) {
    auto other = splits.find(op.getOperand(1));
    if (other == splits.end() || other->second.dim != dim || dim >= rank - 2)
      return std::nullopt;
    return dim;
  }
  return std::nullopt;
}

bool RegionSearch::readsWholeHeads(Value operand, unsigned queryRegion) {
  int64_t heads = typeOf(operand).getDimSize(1);
  auto split = splits.find(operand);
  if (split != splits.end() && split->second.dim == 1 && heads % ranks == 0)
    return false; // cut like the query heads
  if (ranks % heads != 0 && heads % ranks != 0)
    return false;
  // Heads of the query's own region (a fused product's parts) cannot stay
  // whole without it.
  return split == splits.end() || !regions.isEquivalent(split->second.region, queryRegion);
}

void RegionSearch::visitAttention(AttentionOp attention) {
  auto query = splits.find(attention.getQuery());
  bool queryCut = query != splits.end() && query->second.dim == 1;
  SmallVector<unsigned> touched;
  SmallVector<Value> wholeHeads;
  if (query != splits.end())
    touched.push_back(query->second.region);
  for (Value operand : {attention.getKey(), attention.getValue()}) {
    auto split = splits.find(operand);
    if (queryCut && readsWholeHeads(operand, query->second.region)) {
      // Every rank computes these heads whole: what would cut them cannot.
      if (split != splits.end())
        block(split->second.region, attention);
      wholeHeads.push_back(operand);
      continue;
    }
    if (split != splits.end())
      touched.push_back(split->second.region);
  }
  if (touched.empty())
    return;
  unsigned region = merge(touched);
  // The heads: each rank's query heads read its key and value heads.
  for (Value operand : attention->getOperands()) {
    auto split = splits.find(operand);
    if (!llvm::is_contained(wholeHeads, operand) &&
        (split == splits.end() || split->second.dim != 1))
      pending(region, attention,
              "the tensor ranks must cut the query heads, and the key and value heads alike "
              "or keep them whole (dimension 1), but some stay whole here: where the ranks "
              "do not divide the query heads, or what computes them cannot be cut (a norm "
              "over all heads' features, say), or key and value heads that neither divide "
              "nor are divided by the ranks");
  }
  for (Value result : attention->getResults())
    cut(result, 1, region, attention);
}

void RegionSearch::visitLoss(CrossEntropyOp loss) {
  auto logits = splits.find(loss.getLogits());
  if (logits == splits.end())
    return;
  unsigned region = logits->second.region;
  if (logits->second.dim != typeOf(loss.getLogits()).getRank() - 1)
    return block(region, loss);
  // Vocabulary-parallel: each rank's block of the classes, the loss combined
  // from the blocks' statistics.
  checkVocabulary(region, loss, typeOf(loss.getLogits()).getShape().back(), "classes",
                  "this loss, whose logits the tensor ranks would hold in blocks (a "
                  "vocabulary-parallel head)",
                  "the head's weight");
  losses.push_back({loss, region});
  facts(region).closed = true;
}

void RegionSearch::visitEmbedding(EmbeddingOp embedding) {
  auto table = embedding.getTable().getDefiningOp<UseOp>();
  if (!table || wholeOpeners.contains(embedding))
    return;
  // Vocabulary-parallel: each rank looks up its block of rows, the parts
  // summed over the ranks.
  unsigned region = newRegion();
  embeddings.push_back({embedding, region});
  cut(table.getResult(), 0, region, embedding);
  facts(region).closed = true;
  checkVocabulary(region, embedding, typeOf(table.getResult()).getDimSize(0), "rows",
                  "this embedding's table, which the tensor ranks would hold in blocks (a "
                  "vocabulary-parallel embedding)",
                  "the table");
}

void RegionSearch::checkVocabulary(unsigned region, Operation *op, int64_t count, StringRef items,
                                   StringRef what, StringRef parameter) {
  if (count % ranks == 0)
    return;
  // Said better than the product's or the table's dimension would say it.
  facts(region).errors.assign({PendingError{
      op->getLoc(), ("tensor_parallel = " + Twine(ranks) + " does not divide the " + Twine(count) +
                     " " + items + " of " + what + ": pad the vocabulary to a multiple of " +
                     Twine(ranks) + ", or declare " + parameter + " 'tensor whole'")
                        .str()}});
}

void RegionSearch::keepMixedParametersWhole(Block &body) {
  llvm::StringMap<SmallVector<UseOp>> reads;
  for (auto use : body.getOps<UseOp>())
    reads[use.getParam()].push_back(use);
  for (auto &[name, uses] : reads) {
    auto whole = llvm::find_if(uses, [&](UseOp use) { return !splits.contains(use); });
    if (whole == uses.end())
      continue;
    for (UseOp use : uses)
      if (auto split = splits.find(use); split != splits.end())
        block(split->second.region, *whole);
  }
}

void RegionSearch::visit(Operation &op) {
  if (auto product = dyn_cast<MatmulOp>(op); product && weightOf(product))
    return visitProduct(product);
  if (auto attention = dyn_cast<AttentionOp>(op))
    return visitAttention(attention);
  if (auto loss = dyn_cast<CrossEntropyOp>(op))
    return visitLoss(loss);
  if (auto embedding = dyn_cast<EmbeddingOp>(op);
      embedding && !splits.contains(embedding.getIndices()))
    return visitEmbedding(embedding);
  SmallVector<unsigned> touched;
  for (Value operand : op.getOperands())
    if (auto split = splits.find(operand); split != splits.end())
      touched.push_back(split->second.region);
  if (touched.empty())
    return;
  unsigned region = merge(touched);
  std::optional<int64_t> dim =
      op.getNumResults() == 1 ? resultSplit(op, region) : std::optional<int64_t>();
  if (!dim)
    return block(region, &op);
  cut(op.getResult(0), *dim, region, &op, resultParts(op, region));
}

void RegionSearch::run(Block &body) {
  for (Operation &op : body)
    visit(op);
  keepMixedParametersWhole(body);
}

SmallVector<Operation *> RegionSearch::openedWholeRegions() {
  SmallVector<Operation *> whole;
  for (auto [product, region] : columnProducts)
    if (!succeeded(region))
      whole.push_back(product);
  for (auto [embedding, region] : embeddings)
    if (!succeeded(region))
      whole.push_back(embedding);
  return whole;
}

/// Cuts what the search found: the parameters' declarations and reads, the
/// values' types, and the region's entries and exits.
class RegionRewriter {
public:
  RegionRewriter(RegionSearch &search, ModuleOp module) : search(search), module(module) {}

  LogicalResult checkParameters();
  void rewrite(Block &body);

private:
  bool isCut(Value value) {
    auto split = search.splits.find(value);
    return split != search.splits.end() && search.succeeded(split->second.region);
  }
  RankedTensorType blockType(Value value) {
    RankedTensorType type = typeOf(value);
    SmallVector<int64_t> shape(type.getShape());
    shape[search.splits.lookup(value).dim] /= search.ranks;
    return type.clone(shape);
  }
  Value copyOf(Value whole, OpBuilder &b);
  /// The key or value heads of `whole` that this rank's query heads read.
  Value headsOf(Value whole, OpBuilder &b);

  RegionSearch &search;
  ModuleOp module;
  llvm::DenseMap<Value, Value> copies, heads;
};

LogicalResult RegionRewriter::checkParameters() {
  // Every read of a parameter must agree on how it is cut.
  llvm::MapVector<StringRef, SmallVector<UseOp>> reads;
  module.walk([&](UseOp use) { reads[use.getParam()].push_back(use); });
  for (auto &[name, uses] : reads) {
    auto param = SymbolTable::lookupNearestSymbolFrom<ParamOp>(
        module, FlatSymbolRefAttr::get(module.getContext(), name));
    std::optional<int64_t> first;
    SmallVector<int64_t> firstParts;
    UseOp firstUse;
    for (UseOp use : uses) {
      std::optional<int64_t> dim;
      SmallVector<int64_t> parts;
      if (isCut(use.getResult())) {
        const Split &split = search.splits.find(use.getResult())->second;
        dim = split.dim, parts = split.parts;
      }
      if (use == uses.front()) {
        first = dim, firstParts = parts, firstUse = use;
        continue;
      }
      if (dim != first || parts != firstParts) {
        InFlightDiagnostic diag = param.emitError("the tensor ranks would read this "
                                                  "parameter both cut and whole, or cut "
                                                  "along two dimensions or in two ways");
        diag.attachNote(firstUse.getLoc()) << "read here";
        diag.attachNote(use.getLoc()) << "and here";
        return failure();
      }
    }
    if (first) {
      param.setSplitDim(*first);
      if (!firstParts.empty())
        param.setSplitParts(firstParts);
      param.setType(blockType(firstUse.getResult()));
    }
  }
  return success();
}

Value RegionRewriter::copyOf(Value whole, OpBuilder &b) {
  Value &copy = copies[whole];
  if (!copy) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(whole);
    copy = TensorCopyOp::create(b, whole.getLoc(), whole);
  }
  return copy;
}

Value RegionRewriter::headsOf(Value whole, OpBuilder &b) {
  Value &chunk = heads[whole];
  if (!chunk) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(whole);
    RankedTensorType type = typeOf(whole);
    SmallVector<int64_t> shape(type.getShape());
    shape[1] = std::max<int64_t>(1, shape[1] / search.ranks);
    chunk = TensorChunkOp::create(b, whole.getLoc(), type.clone(shape), whole, /*dim=*/1);
  }
  return chunk;
}

void RegionRewriter::rewrite(Block &body) {
  OpBuilder b(module.getContext());
  for (Operation &op : llvm::make_early_inc_range(body)) {
    bool inRegion = llvm::any_of(op.getOperands(), [&](Value v) { return isCut(v); }) ||
                    llvm::any_of(op.getResults(), [&](Value v) { return isCut(v); });
    // A loss over cut logits reads its targets whole, an embedding of a cut
    // table its indices; each becomes the ranks' op.
    if (!inRegion || isa<UseOp, CrossEntropyOp, EmbeddingOp>(op))
      continue;
    // Whole values read inside a region enter it through a copy, so their
    // gradients are summed over the ranks; whole key and value heads through
    // a chunk of the heads each rank reads (visitAttention).
    for (OpOperand &operand : op.getOpOperands())
      if (!isCut(operand.get()))
        operand.set(isa<AttentionOp>(op) && operand.getOperandNumber() > 0
                        ? headsOf(operand.get(), b)
                        : copyOf(operand.get(), b));
  }
  for (auto &[value, split] : search.splits)
    if (isCut(value))
      value.setType(blockType(value));
  // A fused product's parts sliced apart: each slice takes its part's block.
  for (auto slice : body.getOps<SliceOp>()) {
    auto split = search.splits.find(slice.getInput());
    if (!isCut(slice.getInput()) || split->second.parts.empty() ||
        split->second.dim != static_cast<int64_t>(slice.getDim()))
      continue;
    slice.setOffset(
        *blockOffsetOfPart(split->second.parts, slice.getOffset(), slice.getSize(), search.ranks));
    slice.setSize(slice.getSize() / search.ranks);
  }
  for (auto [product, region] : search.rowProducts) {
    if (!search.succeeded(region))
      continue;
    b.setInsertionPointAfter(product);
    auto sum = TensorSumOp::create(b, product.getLoc(), product.getResult());
    product.getResult().replaceAllUsesExcept(sum, sum);
  }
  for (auto [loss, region] : search.losses) {
    if (!search.succeeded(region))
      continue;
    b.setInsertionPoint(loss);
    int64_t classes = typeOf(loss.getLogits()).getShape().back() * search.ranks;
    auto blocks = TensorCrossEntropyOp::create(b, loss.getLoc(), loss.getLogits(),
                                               loss.getTargets(), classes);
    loss.replaceAllUsesWith(blocks.getResult());
    loss.erase();
  }
  for (auto [embedding, region] : search.embeddings) {
    if (!search.succeeded(region))
      continue;
    b.setInsertionPoint(embedding);
    Value table = embedding.getTable();
    int64_t rows = typeOf(table).getDimSize(0) * search.ranks;
    auto part =
        TensorEmbeddingOp::create(b, embedding.getLoc(), table, embedding.getIndices(), rows);
    auto sum = TensorSumOp::create(b, embedding.getLoc(), part.getResult());
    embedding.replaceAllUsesWith(sum.getResult());
    embedding.erase();
  }
}

/// A unit holds cut parameters or whole ones, never both: the gradient norm
/// sums a cut unit's squares over the tensor ranks and a whole one's once, and
/// a shard's elements belong to parameters only its rank's shard index tells.
/// The whole members of a mixed unit `u` move to a unit `u.whole` of their own.
void separateWholeParameters(ModuleOp module) {
  llvm::StringSet<> cutUnits;
  for (ParamOp param : module.getOps<ParamOp>())
    if (param.getSplitDim())
      cutUnits.insert(*param.getUnit());
  for (ParamOp param : module.getOps<ParamOp>())
    if (!param.getSplitDim() && cutUnits.contains(*param.getUnit()))
      param.setUnit((*param.getUnit() + ".whole").str());
}

struct FSDPSplitTensorsPass : public fsdp::impl::FSDPSplitTensorsPassBase<FSDPSplitTensorsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto plan = module->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName());
    if (!plan) {
      module.emitError("fsdp-split-tensors needs the module's 'fsdp.plan'");
      return signalPassFailure();
    }
    if (plan.getTensorParallel() == 1)
      return;
    auto functions = llvm::to_vector(module.getOps<func::FuncOp>());
    if (functions.size() != 1 || !functions.front().getBody().hasOneBlock()) {
      module.emitError("fsdp-split-tensors expects one single-block function, the model's "
                       "loss");
      return signalPassFailure();
    }
    for (ParamOp param : module.getOps<ParamOp>())
      if (!param.getUnit()) {
        param.emitError("parameter has no unit; run fsdp-form-units first");
        return signalPassFailure();
      }
    Block &body = functions.front().getBody().front();
    if (failed(split(body, plan.getTensorParallel(), module)))
      return signalPassFailure();
    func::FuncOp function = functions.front();
    function.setFunctionType(FunctionType::get(&getContext(), body.getArgumentTypes(),
                                               body.getTerminator()->getOperandTypes()));
  }

  LogicalResult split(Block &body, int64_t ranks, ModuleOp module) {
    llvm::StringSet<> wholeParams;
    for (ParamOp param : module.getOps<ParamOp>())
      if (param.getTensorLayout() == TensorLayout::Whole)
        wholeParams.insert(param.getSymName());
    // Regions that stay whole free the products that opened them; each round
    // drops at least one, so this ends. What kept a parameter's region whole
    // explains a `tensor cut` the layout cannot honour.
    llvm::DenseSet<Operation *> wholeOpeners;
    llvm::StringMap<Operation *> keptWhole;
    while (true) {
      RegionSearch search(ranks, wholeOpeners, wholeParams);
      search.run(body);
      SmallVector<Operation *> whole = search.openedWholeRegions();
      if (!whole.empty()) {
        wholeOpeners.insert(whole.begin(), whole.end());
        recordWholeRegions(search, keptWhole);
        continue;
      }
      // Each region's reasons once, as it is cut.
      llvm::SmallSetVector<unsigned, 8> cutRegions;
      for (auto [embedding, region] : search.embeddings)
        cutRegions.insert(search.regions.getLeaderValue(region));
      for (auto [product, region] : search.columnProducts)
        cutRegions.insert(search.regions.getLeaderValue(region));
      bool ok = true;
      for (unsigned region : cutRegions)
        for (const PendingError &error : search.facts(region).errors)
          ok = false, (void)emitError(error.loc, error.message);
      if (!ok)
        return failure();
      RegionRewriter rewriter(search, module);
      if (failed(rewriter.checkParameters()))
        return failure();
      rewriter.rewrite(body);
      separateWholeParameters(module);
      return checkCutAnnotations(module, keptWhole);
    }
  }

  /// Each parameter a region that stays whole would have cut, and what keeps
  /// that region whole (null: no row-parallel product closes it).
  static void recordWholeRegions(RegionSearch &search, llvm::StringMap<Operation *> &keptWhole) {
    for (auto &[value, split] : search.splits)
      if (auto use = value.getDefiningOp<UseOp>(); use && !search.succeeded(split.region))
        keptWhole.try_emplace(use.getParam(), search.facts(split.region).blocker);
  }

  /// Every parameter declared `tensor cut` is cut.
  static LogicalResult checkCutAnnotations(ModuleOp module,
                                           const llvm::StringMap<Operation *> &keptWhole) {
    bool ok = true;
    for (ParamOp param : module.getOps<ParamOp>()) {
      if (param.getTensorLayout() != TensorLayout::Cut || param.getSplitDim())
        continue;
      ok = false;
      InFlightDiagnostic diag =
          param.emitError() << "parameter @" << param.getSymName()
                            << " is declared 'tensor cut', but the tensor ranks hold it whole: ";
      auto reason = keptWhole.find(param.getSymName());
      if (reason == keptWhole.end()) {
        diag << "no tensor-parallel region reads it";
        continue;
      }
      diag << "the region that would cut it stays whole";
      if (Operation *blocker = reason->second)
        diag.attachNote(blocker->getLoc())
            << (isa<UseOp>(blocker) ? "the region cuts a parameter this read holds whole"
                                    : "the region reaches this op, which it cannot cut through");
      else
        diag << " (no row-parallel product closes it)";
    }
    return success(ok);
  }
};

} // namespace
