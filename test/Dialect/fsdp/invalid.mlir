// RUN: fsdp-opt %s -split-input-file -verify-diagnostics

// Every diagnostic of the fsdp dialect, one case each.

//===----------------------------------------------------------------------===//
// fsdp.param
//===----------------------------------------------------------------------===//

// A parameter must have a static shape.
// expected-error@+1 {{'fsdp.param' op parameter type must be a statically shaped tensor without encoding, got 'tensor<?x8xf32>'}}
fsdp.param @w : tensor<?x8xf32> = #fsdp.zeros

// -----

// An unranked parameter type is rejected by the ODS constraint.
// expected-error@+1 {{'fsdp.param' op attribute 'type' failed to satisfy constraint: type attribute of ranked tensor of any type values}}
fsdp.param @w : tensor<*xf32> = #fsdp.zeros

// -----

// A parameter type must be a tensor.
// expected-error@+1 {{'fsdp.param' op attribute 'type' failed to satisfy constraint: type attribute of ranked tensor of any type values}}
fsdp.param @w : vector<4xf32> = #fsdp.zeros

// -----

// Parameters are f32 or bf16.
// expected-error@+1 {{'fsdp.param' op parameter element type must be f32 or bf16, got 'i32'}}
fsdp.param @w : tensor<4xi32> = #fsdp.zeros

// -----

// A parameter must hold at least one element.
// expected-error@+1 {{'fsdp.param' op parameter dimensions must be at least 1 and hold fewer than 2^63 elements, got 'tensor<0x4xf32>'}}
fsdp.param @w : tensor<0x4xf32> = #fsdp.zeros

// -----

// An explicit unit name must not be empty.
// expected-error@+1 {{'fsdp.param' op unit name must not be empty}}
fsdp.param @w unit "" : tensor<4xf32> = #fsdp.zeros

// -----

// fan_in_normal needs an input dimension (rank 2 or more).
// expected-error@+1 {{'fsdp.param' op fan-in initializer needs a parameter of rank 2 or more, got 'tensor<8xf32>'}}
fsdp.param @b : tensor<8xf32> = #fsdp.fan_in_normal

// -----

// fan_in_uniform on a rank-0 parameter.
// expected-error@+1 {{'fsdp.param' op fan-in initializer needs a parameter of rank 2 or more, got 'tensor<f32>'}}
fsdp.param @s : tensor<f32> = #fsdp.fan_in_uniform<scale = 2.0>

// -----

// The initializer must be an initializer attribute, not an optimizer.
// expected-error@+1 {{custom op 'fsdp.param' invalid kind of attribute specified}}
fsdp.param @w : tensor<4xf32> = #fsdp.sgd<lr = 0.1>

// -----

// Generic form: the initializer must implement the initializer interface.
// expected-error@+1 {{'fsdp.param' op attribute 'init' failed to satisfy constraint: parameter initializer}}
"fsdp.param"() {sym_name = "w", type = tensor<4xf32>, init = 1 : i32} : () -> ()

// -----

// Generic form: the type attribute is required.
// expected-error@+1 {{'fsdp.param' op requires attribute 'type'}}
"fsdp.param"() {sym_name = "w", init = #fsdp.zeros} : () -> ()

// -----

// A parameter lives directly in a module.
func.func @f() {
  // expected-error@+1 {{'fsdp.param' op expects parent op 'builtin.module'}}
  fsdp.param @w : tensor<4xf32> = #fsdp.zeros
  return
}

// -----

// Two parameters cannot share a name.
// expected-note@+1 {{see existing symbol definition here}}
fsdp.param @w : tensor<4xf32> = #fsdp.zeros
// expected-error@+1 {{redefinition of symbol named 'w'}}
fsdp.param @w : tensor<4xf32> = #fsdp.ones

//===----------------------------------------------------------------------===//
// fsdp.use
//===----------------------------------------------------------------------===//

// -----

// fsdp.use of an undefined symbol.
func.func @f() {
  // expected-error@+1 {{'fsdp.use' op 'nope' does not name an fsdp.param}}
  %0 = fsdp.use @nope : tensor<4xf32>
  return
}

// -----

// fsdp.use of a symbol that is a function, not a parameter.
func.func @g() {
  return
}
func.func @f() {
  // expected-error@+1 {{'fsdp.use' op 'g' does not name an fsdp.param}}
  %0 = fsdp.use @g : tensor<4xf32>
  return
}

// -----

// fsdp.use must have the declared shape.
fsdp.param @w : tensor<4x8xf32> = #fsdp.zeros
func.func @f() {
  // expected-error@+1 {{'fsdp.use' op type 'tensor<8x4xf32>' does not match the declaration of 'w' as 'tensor<4x8xf32>'}}
  %0 = fsdp.use @w : tensor<8x4xf32>
  return
}

// -----

// fsdp.use must have the declared element type.
fsdp.param @w : tensor<4x8xf32> = #fsdp.zeros
func.func @f() {
  // expected-error@+1 {{'fsdp.use' op type 'tensor<4x8xbf16>' does not match the declaration of 'w' as 'tensor<4x8xf32>'}}
  %0 = fsdp.use @w : tensor<4x8xbf16>
  return
}

// -----

// Generic form: fsdp.use takes a flat symbol reference.
func.func @f() {
  // expected-error@+1 {{'fsdp.use' op attribute 'param' failed to satisfy constraint: flat symbol reference attribute}}
  %0 = "fsdp.use"() {param = @a::@b} : () -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// fsdp.matmul / fsdp.batch_matmul
//===----------------------------------------------------------------------===//

// -----

// matmul: lhs must have rank 2 or more.
func.func @f(%a: tensor<8xf32>, %b: tensor<8x16xf32>) {
  // expected-error@+2 {{lhs must have rank 2 or more, got 'tensor<8xf32>'}}
  // expected-error@+1 {{'fsdp.matmul' op failed to infer returned types}}
  %0 = fsdp.matmul %a, %b : tensor<8xf32>, tensor<8x16xf32> -> tensor<16xf32>
  return
}

// -----

// matmul: rhs must be a matrix.
func.func @f(%a: tensor<4x8xf32>, %b: tensor<1x8x16xf32>) {
  // expected-error@+2 {{rhs must be a matrix (rank 2), got 'tensor<1x8x16xf32>'; use fsdp.batch_matmul for batched operands}}
  // expected-error@+1 {{'fsdp.matmul' op failed to infer returned types}}
  %0 = fsdp.matmul %a, %b : tensor<4x8xf32>, tensor<1x8x16xf32> -> tensor<4x16xf32>
  return
}

// -----

// matmul: both operands have one element type.
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x16xbf16>) {
  // expected-error@+2 {{operand element types differ: 'f32' and 'bf16'}}
  // expected-error@+1 {{'fsdp.matmul' op failed to infer returned types}}
  %0 = fsdp.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xbf16> -> tensor<4x16xf32>
  return
}

// -----

// matmul: contraction sizes must agree.
func.func @f(%a: tensor<4x8xf32>, %b: tensor<16x8xf32>) {
  // expected-error@+2 {{contraction sizes differ: lhs has 8 columns but rhs has 16 rows}}
  // expected-error@+1 {{'fsdp.matmul' op failed to infer returned types}}
  %0 = fsdp.matmul %a, %b : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// matmul: transpose_lhs is taken into account for the contraction.
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) {
  // expected-error@+2 {{contraction sizes differ: lhs has 4 columns but rhs has 8 rows}}
  // expected-error@+1 {{'fsdp.matmul' op failed to infer returned types}}
  %0 = fsdp.matmul %a, %b transpose_lhs : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

// matmul: the declared result must be the inferred one.
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) {
  // expected-error@+2 {{'fsdp.matmul' op inferred type(s) 'tensor<4x16xf32>' are incompatible with return type(s) of operation 'tensor<16x4xf32>'}}
  // expected-error@+1 {{'fsdp.matmul' op failed to infer returned types}}
  %0 = fsdp.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<16x4xf32>
  return
}

// -----

// batch_matmul: operands must have rank 3 or more.
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) {
  // expected-error@+2 {{operands must have the same rank, 3 or more, got 'tensor<4x8xf32>' and 'tensor<8x16xf32>'}}
  // expected-error@+1 {{'fsdp.batch_matmul' op failed to infer returned types}}
  %0 = fsdp.batch_matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  return
}

// -----

// batch_matmul: operands must have the same rank.
func.func @f(%a: tensor<2x4x8xf32>, %b: tensor<1x2x8x16xf32>) {
  // expected-error@+2 {{operands must have the same rank, 3 or more, got 'tensor<2x4x8xf32>' and 'tensor<1x2x8x16xf32>'}}
  // expected-error@+1 {{'fsdp.batch_matmul' op failed to infer returned types}}
  %0 = fsdp.batch_matmul %a, %b : tensor<2x4x8xf32>, tensor<1x2x8x16xf32> -> tensor<2x4x16xf32>
  return
}

// -----

// batch_matmul: both operands have one element type.
func.func @f(%a: tensor<2x4x8xf32>, %b: tensor<2x8x16xbf16>) {
  // expected-error@+2 {{operand element types differ: 'f32' and 'bf16'}}
  // expected-error@+1 {{'fsdp.batch_matmul' op failed to infer returned types}}
  %0 = fsdp.batch_matmul %a, %b : tensor<2x4x8xf32>, tensor<2x8x16xbf16> -> tensor<2x4x16xf32>
  return
}

// -----

// batch_matmul: batch dimensions do not broadcast, they must be equal.
func.func @f(%a: tensor<2x4x8xf32>, %b: tensor<3x8x16xf32>) {
  // expected-error@+2 {{batch dimensions differ: 2 and 3}}
  // expected-error@+1 {{'fsdp.batch_matmul' op failed to infer returned types}}
  %0 = fsdp.batch_matmul %a, %b : tensor<2x4x8xf32>, tensor<3x8x16xf32> -> tensor<2x4x16xf32>
  return
}

// -----

// batch_matmul: contraction sizes must agree.
func.func @f(%a: tensor<2x4x8xf32>, %b: tensor<2x4x8xf32>) {
  // expected-error@+2 {{contraction sizes differ: lhs has 8 columns but rhs has 4 rows}}
  // expected-error@+1 {{'fsdp.batch_matmul' op failed to infer returned types}}
  %0 = fsdp.batch_matmul %a, %b : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Elementwise binary ops
//===----------------------------------------------------------------------===//

// -----

// add: shapes must broadcast.
func.func @f(%a: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // expected-error@+2 {{shapes 4x8 and 4 do not broadcast}}
  // expected-error@+1 {{'fsdp.add' op failed to infer returned types}}
  %0 = fsdp.add %a, %b : tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return
}

// -----

// sub: shapes must broadcast.
func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error@+2 {{shapes 2x3 and 3x3 do not broadcast}}
  // expected-error@+1 {{'fsdp.sub' op failed to infer returned types}}
  %0 = fsdp.sub %a, %b : tensor<2x3xf32>, tensor<3x3xf32> -> tensor<2x3xf32>
  return
}

// -----

// mul: shapes must broadcast.
func.func @f(%a: tensor<8x16xf32>, %b: tensor<8xf32>) {
  // expected-error@+2 {{shapes 8x16 and 8 do not broadcast}}
  // expected-error@+1 {{'fsdp.mul' op failed to infer returned types}}
  %0 = fsdp.mul %a, %b : tensor<8x16xf32>, tensor<8xf32> -> tensor<8x16xf32>
  return
}

// -----

// div: shapes must broadcast.
func.func @f(%a: tensor<5xf32>, %b: tensor<2x3xf32>) {
  // expected-error@+2 {{shapes 5 and 2x3 do not broadcast}}
  // expected-error@+1 {{'fsdp.div' op failed to infer returned types}}
  %0 = fsdp.div %a, %b : tensor<5xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

// add: both operands have one element type.
func.func @f(%a: tensor<4x8xf32>, %b: tensor<4x8xbf16>) {
  // expected-error@+2 {{operand element types differ: 'f32' and 'bf16'}}
  // expected-error@+1 {{'fsdp.add' op failed to infer returned types}}
  %0 = fsdp.add %a, %b : tensor<4x8xf32>, tensor<4x8xbf16> -> tensor<4x8xf32>
  return
}

// -----

// add: the declared result shape must be the broadcast shape.
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error@+2 {{'fsdp.add' op inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<8xf32>'}}
  // expected-error@+1 {{'fsdp.add' op failed to infer returned types}}
  %0 = fsdp.add %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

// add: integer tensors are not model values.
func.func @f(%a: tensor<4xi32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{'fsdp.add' op operand #0 must be non-empty statically shaped tensor of f32 or bf16, but got 'tensor<4xi32>'}}
  %0 = fsdp.add %a, %b : tensor<4xi32>, tensor<4xf32> -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Elementwise unary ops and fsdp.scale
//===----------------------------------------------------------------------===//

// -----

// relu: an i32 tensor is rejected by the operand constraint.
func.func @f(%x: tensor<4xi32>) {
  // expected-error@+1 {{'fsdp.relu' op operand #0 must be non-empty statically shaped tensor of f32 or bf16, but got 'tensor<4xi32>'}}
  %0 = fsdp.relu %x : tensor<4xi32>
  return
}

// -----

// gelu: a dynamically shaped tensor is rejected by the operand constraint.
func.func @f(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{'fsdp.gelu' op operand #0 must be non-empty statically shaped tensor of f32 or bf16, but got 'tensor<?x4xf32>'}}
  %0 = fsdp.gelu %x : tensor<?x4xf32>
  return
}

// -----

// tanh: the custom syntax only takes tensors.
func.func @f(%x: vector<4xf32>) {
  // expected-error@+1 {{custom op 'fsdp.tanh' invalid kind of type specified: expected builtin.tensor, but found 'vector<4xf32>'}}
  %0 = fsdp.tanh %x : vector<4xf32>
  return
}

// -----

// Generic form: a unary op keeps its operand type.
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{'fsdp.silu' op requires the same type for all operands and results}}
  %0 = "fsdp.silu"(%x) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

// scale: the custom syntax only reads finite factors (1.0e400 overflows).
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{custom op 'fsdp.scale' expected a finite number}}
  %0 = fsdp.scale %x by 1.0e400 : tensor<4xf32>
  return
}

// -----

// scale: the verifier rejects a non-finite factor (+inf, generic form).
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{'fsdp.scale' op factor must be finite}}
  %0 = "fsdp.scale"(%x) {factor = 0x7FF0000000000000 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// scale: the verifier rejects a non-finite factor (NaN, generic form).
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{'fsdp.scale' op factor must be finite}}
  %0 = "fsdp.scale"(%x) {factor = 0x7FF8000000000000 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Generic form: scale requires its factor.
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{'fsdp.scale' op requires attribute 'factor'}}
  %0 = "fsdp.scale"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// fsdp.softmax, normalisations, fsdp.causal_mask
//===----------------------------------------------------------------------===//

// -----

// softmax: dim must be below the rank.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fsdp.softmax' op dim 2 is out of range for rank 2}}
  %0 = fsdp.softmax %x dim 2 : tensor<4x8xf32>
  return
}

// -----

// softmax: a negative dim is rejected by the attribute constraint.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fsdp.softmax' op attribute 'dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %0 = fsdp.softmax %x dim -1 : tensor<4x8xf32>
  return
}

// -----

// layer_norm: the input needs a last dimension.
func.func @f(%x: tensor<f32>, %g: tensor<1xf32>, %b: tensor<1xf32>) {
  // expected-error@+1 {{'fsdp.layer_norm' op input must have rank 1 or more}}
  %0 = fsdp.layer_norm %x, %g, %b : tensor<f32>, tensor<1xf32>, tensor<1xf32>
  return
}

// -----

// layer_norm: gamma must be [C]. (Matched loosely: the message currently quotes the
// element type inside the expected type, `tensor<8x'f32'>`.)
func.func @f(%x: tensor<4x8xf32>, %g: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{'fsdp.layer_norm' op gamma must be 'tensor<8xf32>' (the last dimension of the input), got 'tensor<4xf32>'}}
  %0 = fsdp.layer_norm %x, %g, %b : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>
  return
}

// -----

// layer_norm: beta must be [C].
func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<1x8xf32>) {
  // expected-error@+1 {{'fsdp.layer_norm' op beta must be 'tensor<8xf32>' (the last dimension of the input), got 'tensor<1x8xf32>'}}
  %0 = fsdp.layer_norm %x, %g, %b : tensor<4x8xf32>, tensor<8xf32>, tensor<1x8xf32>
  return
}

// -----

// layer_norm: eps must be positive.
func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{'fsdp.layer_norm' op eps must be positive and finite}}
  %0 = fsdp.layer_norm %x, %g, %b eps 0.0 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

// layer_norm: gamma and beta have the element type of the input.
func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xbf16>, %b: tensor<8xf32>) {
  // expected-error@+1 {{'fsdp.layer_norm' op failed to verify that all of {input, gamma, beta} have same element type}}
  %0 = fsdp.layer_norm %x, %g, %b : tensor<4x8xf32>, tensor<8xbf16>, tensor<8xf32>
  return
}

// -----

// Generic form: layer_norm keeps the input type.
func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{'fsdp.layer_norm' op failed to verify that all of {input, result} have same type}}
  %0 = "fsdp.layer_norm"(%x, %g, %b) : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8x4xf32>
  return
}

// -----

// rms_norm: gamma must be [C].
func.func @f(%x: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error@+1 {{'fsdp.rms_norm' op gamma must be 'tensor<8xf32>' (the last dimension of the input), got 'tensor<4xf32>'}}
  %0 = fsdp.rms_norm %x, %g : tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

// rms_norm: eps must be positive.
func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error@+1 {{'fsdp.rms_norm' op eps must be positive and finite}}
  %0 = fsdp.rms_norm %x, %g eps -1.0e-5 : tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

// rms_norm: eps must be finite (NaN, generic form; the custom syntax only reads finite numbers).
func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error@+1 {{'fsdp.rms_norm' op eps must be positive and finite}}
  %0 = "fsdp.rms_norm"(%x, %g) {eps = 0x7FF8000000000000 : f64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// layer_norm: eps is read as a finite number.
func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{custom op 'fsdp.layer_norm' expected a finite number}}
  %0 = fsdp.layer_norm %x, %g, %b eps -1.0e999 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

// Generic form: eps is an f64 attribute.
func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error@+1 {{'fsdp.rms_norm' op attribute 'eps' failed to satisfy constraint: 64-bit float attribute}}
  %0 = "fsdp.rms_norm"(%x, %g) {eps = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// attention: query, key and value are [batch, heads, positions, head_dim].
func.func @f(%q: tensor<2x8x4xf32>, %k: tensor<2x1x8x4xf32>) {
  // expected-error@+2 {{'fsdp.attention' op query, key and value must be [batch, heads, positions, head_dim], got 'tensor<2x8x4xf32>', 'tensor<2x1x8x4xf32>' and 'tensor<2x1x8x4xf32>'}}
  // expected-error@+1 {{'fsdp.attention' op failed to infer returned types}}
  %o, %l = fsdp.attention %q, %k, %k : tensor<2x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32> -> tensor<2x8x4xf32>, tensor<2x8xf32>
  return
}

// -----

// attention: the query heads are a multiple of the key heads.
func.func @f(%q: tensor<2x3x8x4xf32>, %k: tensor<2x2x8x4xf32>) {
  // expected-error@+2 {{'fsdp.attention' op the query's 3 heads must be a multiple of the key's 2 (grouped-query attention)}}
  // expected-error@+1 {{'fsdp.attention' op failed to infer returned types}}
  %o, %l = fsdp.attention %q, %k, %k : tensor<2x3x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x3x8x4xf32>, tensor<2x3x8xf32>
  return
}

// -----

// attention: a sliding window bounds how far back a causal query looks.
func.func @f(%q: tensor<2x2x8x4xf32>) {
  // expected-error@+2 {{'fsdp.attention' op a sliding window needs causal attention (it bounds how far back a query looks)}}
  // expected-error@+1 {{'fsdp.attention' op failed to infer returned types}}
  %o, %l = fsdp.attention %q, %q, %q window 4 : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>, tensor<2x2x8xf32>
  return
}

// -----

// attention: a soft cap is positive.
func.func @f(%q: tensor<2x2x8x4xf32>) {
  // expected-error@+2 {{'fsdp.attention' op softcap must be positive and finite, got 0}}
  // expected-error@+1 {{failed to infer returned types}}
  %o, %l = fsdp.attention %q, %q, %q causal softcap 0.0 : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>, tensor<2x2x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x2x8x4xf32>, %l: tensor<2x2x8xf32>) {
  // expected-error@+1 {{'fsdp.attention_grad' op softcap must be positive and finite, got -1}}
  %dq, %dk, %dv = fsdp.attention_grad %q, %q, %q, %q, %l, %q, %l causal softcap -1.0 : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8xf32>
  return
}

// -----

// attention: a window of at least one position.
func.func @f(%q: tensor<2x2x8x4xf32>) {
  // expected-error@+1 {{attribute 'window' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %o, %l = fsdp.attention %q, %q, %q causal window 0 : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>, tensor<2x2x8xf32>
  return
}

// -----

// attention_grad: the same rule.
func.func @f(%q: tensor<2x2x8x4xf32>, %l: tensor<2x2x8xf32>) {
  // expected-error@+1 {{'fsdp.attention_grad' op a sliding window needs causal attention (it bounds how far back a query looks)}}
  %dq, %dk, %dv = fsdp.attention_grad %q, %q, %q, %q, %l, %q, %l window 4 : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8xf32>
  return
}

// -----

// attention: causal needs as many queries as keys.
func.func @f(%q: tensor<2x2x8x4xf32>, %k: tensor<2x2x6x4xf32>) {
  // expected-error@+2 {{'fsdp.attention' op causal attention needs as many query as key positions, got 8 and 6}}
  // expected-error@+1 {{'fsdp.attention' op failed to infer returned types}}
  %o, %l = fsdp.attention %q, %k, %k causal : tensor<2x2x8x4xf32>, tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32> -> tensor<2x2x8x4xf32>, tensor<2x2x8xf32>
  return
}

// -----

// attention: key and value have one shape, and head_dim and batch match the query's.
func.func @f(%q: tensor<2x2x8x4xf32>, %k: tensor<2x2x8x4xf32>, %v: tensor<2x2x8x3xf32>) {
  // expected-error@+2 {{'fsdp.attention' op key and value must have the same shape, got 'tensor<2x2x8x4xf32>' and 'tensor<2x2x8x3xf32>'}}
  // expected-error@+1 {{'fsdp.attention' op failed to infer returned types}}
  %o, %l = fsdp.attention %q, %k, %v : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x3xf32> -> tensor<2x2x8x4xf32>, tensor<2x2x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x2x8x4xf32>, %k: tensor<2x2x8x5xf32>) {
  // expected-error@+2 {{'fsdp.attention' op query and key must have the same batch and head_dim, got 'tensor<2x2x8x4xf32>' and 'tensor<2x2x8x5xf32>'}}
  // expected-error@+1 {{'fsdp.attention' op failed to infer returned types}}
  %o, %l = fsdp.attention %q, %k, %k : tensor<2x2x8x4xf32>, tensor<2x2x8x5xf32>, tensor<2x2x8x5xf32> -> tensor<2x2x8x4xf32>, tensor<2x2x8xf32>
  return
}

// -----

// attention: a positive, finite scale; positive key blocks.
func.func @f(%q: tensor<2x2x8x4xf32>) {
  // expected-error@+2 {{'fsdp.attention' op scale must be positive and finite, got -1}}
  // expected-error@+1 {{'fsdp.attention' op failed to infer returned types}}
  %o, %l = fsdp.attention %q, %q, %q scale -1.0 : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>, tensor<2x2x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x2x8x4xf32>) {
  // expected-error@+1 {{'fsdp.attention' op attribute 'key_block' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %o, %l = fsdp.attention %q, %q, %q key_block 0 : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>, tensor<2x2x8xf32>
  return
}

// -----

// attention: the log-sum-exp is f32 [batch, heads, positions], whatever the query's type.
func.func @f(%q: tensor<2x2x8x4xbf16>) {
  // expected-error@+2 {{'fsdp.attention' op inferred type(s) 'tensor<2x2x8x4xbf16>', 'tensor<2x2x8xf32>' are incompatible with return type(s) of operation 'tensor<2x2x8x4xbf16>', 'tensor<2x2x8xbf16>'}}
  // expected-error@+1 {{'fsdp.attention' op failed to infer returned types}}
  %o, %l = fsdp.attention %q, %q, %q : tensor<2x2x8x4xbf16>, tensor<2x2x8x4xbf16>, tensor<2x2x8x4xbf16> -> tensor<2x2x8x4xbf16>, tensor<2x2x8xbf16>
  return
}

// -----

// attention_grad: the same shape rule, and the log-sum-exp's type.
func.func @f(%q: tensor<2x2x8x4xf32>, %l: tensor<2x2x7xf32>) {
  // expected-error@+1 {{'fsdp.attention_grad' op lse must be 'tensor<2x2x8xf32>', got 'tensor<2x2x7xf32>'}}
  %a, %b, %c = fsdp.attention_grad %q, %q, %q, %q, %l, %q, %l : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x7xf32>
  return
}

// -----

// causal_mask: the trailing matrix must be square.
func.func @f(%x: tensor<2x4x8xf32>) {
  // expected-error@+1 {{'fsdp.causal_mask' op needs a square (query x key) trailing matrix, got 2x4x8}}
  %0 = fsdp.causal_mask %x : tensor<2x4x8xf32>
  return
}

// -----

// causal_mask: a rank-1 input has no trailing matrix.
func.func @f(%x: tensor<8xf32>) {
  // expected-error@+1 {{'fsdp.causal_mask' op needs a square (query x key) trailing matrix, got 8}}
  %0 = fsdp.causal_mask %x : tensor<8xf32>
  return
}

// -----

// rope: a rank-1 input has no positions.
func.func @f(%x: tensor<8xf32>) {
  // expected-error@+1 {{'fsdp.rope' op needs positions and features: rank 2 or more, got 1}}
  %0 = fsdp.rope %x positions 0 theta 10000.0 : tensor<8xf32>
  return
}

// -----

// rope: the positions cannot be the features.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fsdp.rope' op positions must be a dimension before the last (the features), got 1 of rank 2}}
  %0 = fsdp.rope %x positions 1 theta 10000.0 : tensor<4x8xf32>
  return
}

// -----

// rope: theta above 1.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fsdp.rope' op theta must be finite and above 1, got 1}}
  %0 = fsdp.rope %x positions 0 theta 1.0 : tensor<4x8xf32>
  return
}

// -----

// rope: an odd number of features cannot pair.
func.func @f(%x: tensor<4x7xf32>) {
  // expected-error@+1 {{'fsdp.rope' op rotates an even number of features, at most the 7 of the last dimension; got 7}}
  %0 = fsdp.rope %x positions 0 theta 10000.0 : tensor<4x7xf32>
  return
}

// -----

// rope: rotary_dim within the features.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fsdp.rope' op rotates an even number of features, at most the 8 of the last dimension; got 10}}
  %0 = fsdp.rope %x positions 0 theta 10000.0 rotary_dim 10 : tensor<4x8xf32>
  return
}

// -----

// rope: llama3 scaling never raises a frequency.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{llama3_rope factor must be at least 1, got 5.000000e-01}}
  %0 = fsdp.rope %x positions 0 theta 10000.0 llama3_scaling <factor = 0.5, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_positions = 8192> : tensor<4x8xf32>
  return
}

// -----

// rope: llama3 bounds in order.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{llama3_rope needs 0 < low_freq_factor < high_freq_factor, got 4.000000e+00 and 1.000000e+00}}
  %0 = fsdp.rope %x positions 0 theta 10000.0 llama3_scaling <factor = 8.0, low_freq_factor = 4.0, high_freq_factor = 1.0, original_max_positions = 8192> : tensor<4x8xf32>
  return
}

// -----

// rope: one frequency scaling at a time.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fsdp.rope' op takes one frequency scaling, linear, Llama 3's or YaRN's, not two}}
  %0 = fsdp.rope %x positions 0 theta 10000.0 llama3_scaling <factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_positions = 8192> yarn_scaling <factor = 4.0, beta_fast = 32.0, beta_slow = 1.0, original_max_positions = 16, attention_factor = 1.0, truncate = true> : tensor<4x8xf32>
  return
}

// -----

// rope: a linear scaling beside another.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fsdp.rope' op takes one frequency scaling, linear, Llama 3's or YaRN's, not two}}
  %0 = fsdp.rope %x positions 0 theta 10000.0 linear_scaling 2.0 yarn_scaling <factor = 4.0, beta_fast = 32.0, beta_slow = 1.0, original_max_positions = 16, attention_factor = 1.0, truncate = true> : tensor<4x8xf32>
  return
}

// -----

// rope: a linear scaling divides by a positive factor.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fsdp.rope' op linear_scaling must be positive and finite, got -2}}
  %0 = fsdp.rope %x positions 0 theta 10000.0 linear_scaling -2.0 : tensor<4x8xf32>
  return
}

// -----

// rope: yarn's betas in order.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{yarn_rope needs 0 < beta_slow < beta_fast, got 3.200000e+01 and 1.000000e+00}}
  %0 = fsdp.rope %x positions 0 theta 10000.0 yarn_scaling <factor = 4.0, beta_fast = 1.0, beta_slow = 32.0, original_max_positions = 16, attention_factor = 1.0, truncate = true> : tensor<4x8xf32>
  return
}

// -----

// rope: yarn's attention factor is positive.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{yarn_rope attention_factor must be positive and finite, got 0.000000e+00}}
  %0 = fsdp.rope %x positions 0 theta 10000.0 yarn_scaling <factor = 4.0, beta_fast = 32.0, beta_slow = 1.0, original_max_positions = 16, attention_factor = 0.0, truncate = true> : tensor<4x8xf32>
  return
}

// -----

// rope: positions are f32 in the angle, exact up to 2^24.
func.func @f(%x: tensor<16777217x2xf32>) {
  // expected-error@+1 {{'fsdp.rope' op positions must be at most 2^24, got 16777217}}
  %0 = fsdp.rope %x positions 0 theta 10000.0 : tensor<16777217x2xf32>
  return
}

// -----

// rope: llama3 needs the original context.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{llama3_rope original_max_positions must be positive, got 0}}
  %0 = fsdp.rope %x positions 0 theta 10000.0 llama3_scaling <factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_positions = 0> : tensor<4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// fsdp.embedding, fsdp.reshape, fsdp.transpose
//===----------------------------------------------------------------------===//

// -----

// embedding: the table must be a matrix.
func.func @f(%t: tensor<4x8x2xf32>, %i: tensor<3xi32>) {
  // expected-error@+2 {{table must be [rows, features], got 'tensor<4x8x2xf32>'}}
  // expected-error@+1 {{'fsdp.embedding' op failed to infer returned types}}
  %0 = fsdp.embedding %t[%i] : tensor<4x8x2xf32>, tensor<3xi32> -> tensor<3x8xf32>
  return
}

// -----

// embedding: indices are integers.
func.func @f(%t: tensor<4x8xf32>, %i: tensor<3xf32>) {
  // expected-error@+1 {{'fsdp.embedding' op operand #1 must be non-empty statically shaped tensor of i32 or i64, but got 'tensor<3xf32>'}}
  %0 = fsdp.embedding %t[%i] : tensor<4x8xf32>, tensor<3xf32> -> tensor<3x8xf32>
  return
}

// -----

// reshape: the element count is kept.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fsdp.reshape' op cannot reshape 4x8 (32 elements) to 4x4 (16 elements)}}
  %0 = fsdp.reshape %x : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

// reshape: the element type is kept.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fsdp.reshape' op failed to verify that all of {input, result} have same element type}}
  %0 = fsdp.reshape %x : tensor<4x8xf32> -> tensor<32xbf16>
  return
}

// -----

// transpose: one permutation entry per dimension.
func.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error@+2 {{permutation has 2 entries but the input has rank 3}}
  // expected-error@+1 {{'fsdp.transpose' op failed to infer returned types}}
  %0 = fsdp.transpose %x [1, 0] : tensor<2x3x4xf32> -> tensor<3x2xf32>
  return
}

// -----

// transpose: no duplicate entries.
func.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error@+2 {{permutation must hold each of 0..2 exactly once}}
  // expected-error@+1 {{'fsdp.transpose' op failed to infer returned types}}
  %0 = fsdp.transpose %x [0, 1, 1] : tensor<2x3x4xf32> -> tensor<2x3x3xf32>
  return
}

// -----

// transpose: an entry past the rank.
func.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error@+2 {{permutation must hold each of 0..2 exactly once}}
  // expected-error@+1 {{'fsdp.transpose' op failed to infer returned types}}
  %0 = fsdp.transpose %x [0, 1, 3] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return
}

// -----

// transpose: a negative entry.
func.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error@+2 {{permutation must hold each of 0..2 exactly once}}
  // expected-error@+1 {{'fsdp.transpose' op failed to infer returned types}}
  %0 = fsdp.transpose %x [0, -1, 2] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return
}

// -----

// Generic form: transpose requires its permutation.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fsdp.transpose' op requires attribute 'permutation'}}
  %0 = "fsdp.transpose"(%x) : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// fsdp.reduce_sum / fsdp.reduce_mean
//===----------------------------------------------------------------------===//

// -----

// reduce_sum: dims must not be empty.
func.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error@+2 {{dims must name at least one dimension}}
  // expected-error@+1 {{'fsdp.reduce_sum' op failed to infer returned types}}
  %0 = fsdp.reduce_sum %x dims [] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return
}

// -----

// reduce_mean: dims must not be empty.
func.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error@+2 {{dims must name at least one dimension}}
  // expected-error@+1 {{'fsdp.reduce_mean' op failed to infer returned types}}
  %0 = fsdp.reduce_mean %x dims [] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return
}

// -----

// reduce_mean: a dim past the rank.
func.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error@+2 {{dim 3 is out of range for rank 3}}
  // expected-error@+1 {{'fsdp.reduce_mean' op failed to infer returned types}}
  %0 = fsdp.reduce_mean %x dims [3] : tensor<2x3x4xf32> -> tensor<2x3xf32>
  return
}

// -----

// reduce_sum: a negative dim.
func.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error@+2 {{dim -1 is out of range for rank 3}}
  // expected-error@+1 {{'fsdp.reduce_sum' op failed to infer returned types}}
  %0 = fsdp.reduce_sum %x dims [-1] : tensor<2x3x4xf32> -> tensor<2x3xf32>
  return
}

// -----

// reduce_mean: dims must be increasing.
func.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error@+2 {{dims must be strictly increasing}}
  // expected-error@+1 {{'fsdp.reduce_mean' op failed to infer returned types}}
  %0 = fsdp.reduce_mean %x dims [2, 0] : tensor<2x3x4xf32> -> tensor<3xf32>
  return
}

// -----

// reduce_sum: dims must be distinct.
func.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error@+2 {{dims must be strictly increasing}}
  // expected-error@+1 {{'fsdp.reduce_sum' op failed to infer returned types}}
  %0 = fsdp.reduce_sum %x dims [1, 1] : tensor<2x3x4xf32> -> tensor<2x4xf32>
  return
}

// -----

// reduce_sum: the declared result must drop the reduced dimensions.
func.func @f(%x: tensor<2x3x4xf32>) {
  // expected-error@+2 {{'fsdp.reduce_sum' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<2x1x4xf32>'}}
  // expected-error@+1 {{'fsdp.reduce_sum' op failed to infer returned types}}
  %0 = fsdp.reduce_sum %x dims [1] : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// -----

// cross_entropy: logits need a class dimension and a leading one.
func.func @f(%l: tensor<10xf32>, %t: tensor<i32>) {
  // expected-error@+2 {{logits must be [..., classes] with rank 2 or more, got 'tensor<10xf32>'}}
  // expected-error@+1 {{'fsdp.cross_entropy' op failed to infer returned types}}
  %0 = fsdp.cross_entropy %l, %t : tensor<10xf32>, tensor<i32> -> tensor<f32>
  return
}

// -----

// cross_entropy: targets have the logits shape without the class dimension.
func.func @f(%l: tensor<8x10xf32>, %t: tensor<10xi32>) {
  // expected-error@+2 {{targets shape 10 must be the logits shape without its last dimension (8)}}
  // expected-error@+1 {{'fsdp.cross_entropy' op failed to infer returned types}}
  %0 = fsdp.cross_entropy %l, %t : tensor<8x10xf32>, tensor<10xi32> -> tensor<f32>
  return
}

// -----

// cross_entropy: the loss is a scalar.
func.func @f(%l: tensor<8x10xf32>, %t: tensor<8xi32>) {
  // expected-error@+1 {{'fsdp.cross_entropy' op result #0 must be rank-0 tensor of f32, but got 'tensor<1xf32>'}}
  %0 = fsdp.cross_entropy %l, %t : tensor<8x10xf32>, tensor<8xi32> -> tensor<1xf32>
  return
}

// -----

// cross_entropy: the loss is f32, even of bf16 logits.
func.func @f(%l: tensor<8x10xbf16>, %t: tensor<8xi32>) {
  // expected-error@+1 {{'fsdp.cross_entropy' op result #0 must be rank-0 tensor of f32, but got 'tensor<bf16>'}}
  %0 = fsdp.cross_entropy %l, %t : tensor<8x10xbf16>, tensor<8xi32> -> tensor<bf16>
  return
}

// -----

// mse: prediction and target have the same shape.
func.func @f(%p: tensor<8x1xf32>, %t: tensor<8xf32>) {
  // expected-error@+2 {{prediction 'tensor<8x1xf32>' and target 'tensor<8xf32>' must have the same type}}
  // expected-error@+1 {{'fsdp.mse' op failed to infer returned types}}
  %0 = fsdp.mse %p, %t : tensor<8x1xf32>, tensor<8xf32> -> tensor<f32>
  return
}

// -----

// mse: prediction and target have the same element type.
func.func @f(%p: tensor<8xf32>, %t: tensor<8xbf16>) {
  // expected-error@+2 {{prediction 'tensor<8xf32>' and target 'tensor<8xbf16>' must have the same type}}
  // expected-error@+1 {{'fsdp.mse' op failed to infer returned types}}
  %0 = fsdp.mse %p, %t : tensor<8xf32>, tensor<8xbf16> -> tensor<f32>
  return
}

//===----------------------------------------------------------------------===//
// Initializer attributes (reported at the attribute)
//===----------------------------------------------------------------------===//

// -----

// constant: the value must be finite; the parser rejects 1.0e400 (+inf) first.
// expected-error@+2 {{expected a finite number}}
// expected-error@+1 {{failed to parse FSDP_ConstantAttr parameter 'value' which is to be a `::llvm::APFloat`}}
fsdp.param @w : tensor<4xf32> = #fsdp.constant<1.0e400>

// -----

// constant: a doubled minus sign is not a number.
// expected-error@+2 {{expected a number}}
// expected-error@+1 {{failed to parse FSDP_ConstantAttr parameter 'value'}}
fsdp.param @w : tensor<4xf32> = #fsdp.constant<- -1>

// -----

// normal: std must be positive (zero).
// expected-error@+1 {{normal initializer needs a positive std, got std = 0.000000e+00}}
fsdp.param @w : tensor<4x8xf32> = #fsdp.normal<std = 0.0>

// -----

// normal: std must be positive (negative).
// expected-error@+1 {{normal initializer needs a positive std, got std = -1.000000e+00}}
fsdp.param @w : tensor<4x8xf32> = #fsdp.normal<mean = 1.0, std = -1.0>

// -----

// normal: std is required.
// expected-error@+1 {{struct is missing required parameter: std}}
fsdp.param @w : tensor<4x8xf32> = #fsdp.normal<mean = 1.0>

// -----

// uniform: low must be below high.
// expected-error@+1 {{uniform initializer needs low < high, got [1.000000e+00, 5.000000e-01)}}
fsdp.param @w : tensor<4x8xf32> = #fsdp.uniform<low = 1.0, high = 0.5>

// -----

// uniform: an empty interval.
// expected-error@+1 {{uniform initializer needs low < high, got [1.000000e+00, 1.000000e+00)}}
fsdp.param @w : tensor<4x8xf32> = #fsdp.uniform<low = 1.0, high = 1.0>

// -----

// fan_in_normal: the scale must be positive.
// expected-error@+1 {{fan-in initializer needs a positive scale, got 0.000000e+00}}
fsdp.param @w : tensor<4x8xf32> = #fsdp.fan_in_normal<scale = 0.0>

// -----

// fan_in_uniform: the scale must be positive.
// expected-error@+1 {{fan-in initializer needs a positive scale, got -1.000000e+00}}
fsdp.param @w : tensor<4x8xf32> = #fsdp.fan_in_uniform<scale = -1.0>

// -----

// An unknown attribute mnemonic.
// expected-error@+1 {{unknown attribute `glorot` in dialect `fsdp`}}
fsdp.param @w : tensor<4x8xf32> = #fsdp.glorot

//===----------------------------------------------------------------------===//
// Optimizer attributes (a bad optimizer also fails the enclosing plan)
//===----------------------------------------------------------------------===//

// -----

// sgd: lr must be positive.
// expected-error@+2 {{learning rate must be positive, got 0.000000e+00}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'optimizer' which is to be a `::mlir::fsdp::OptimizerAttrInterface`}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.0>>} {}

// -----

// sgd: momentum must be below 1.
// expected-error@+2 {{momentum must be in [0, 1), got 1.000000e+00}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'optimizer'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1, momentum = 1.0>>} {}

// -----

// sgd: momentum must not be negative.
// expected-error@+2 {{momentum must be in [0, 1), got -5.000000e-01}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'optimizer'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1, momentum = -0.5>>} {}

// -----

// sgd: weight_decay must not be negative.
// expected-error@+2 {{weight_decay must be non-negative, got -5.000000e-01}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'optimizer'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1, weight_decay = -0.5>>} {}

// -----

// adamw: lr must be positive.
// expected-error@+2 {{learning rate must be positive, got -1.000000e+00}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'optimizer'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.adamw<lr = -1.0>>} {}

// -----

// adamw: beta1 must be in [0, 1).
// expected-error@+2 {{beta1 must be in [0, 1), got 1.000000e+00}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'optimizer'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.adamw<lr = 1.0e-3, beta1 = 1.0>>} {}

// -----

// adamw: beta2 must be in [0, 1).
// expected-error@+2 {{beta2 must be in [0, 1), got 1.500000e+00}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'optimizer'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.adamw<lr = 1.0e-3, beta2 = 1.5>>} {}

// -----

// adamw: eps must be positive.
// expected-error@+2 {{eps must be positive, got 0.000000e+00}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'optimizer'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.adamw<lr = 1.0e-3, eps = 0.0>>} {}

// -----

// adamw: weight_decay must not be negative.
// expected-error@+2 {{weight_decay must be non-negative, got -1.000000e-01}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'optimizer'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.adamw<lr = 1.0e-3, weight_decay = -0.1>>} {}

// -----

// A non-finite number (1.0e309 overflows to +inf) is rejected by the parser.
// expected-error@+3 {{expected a finite number}}
// expected-error@+2 {{failed to parse FSDP_SGDAttr parameter 'lr' which is to be a `::llvm::APFloat`}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'optimizer'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 1.0e309>>} {}

// -----

// A non-finite plan field (-1.0e999 is -inf) is rejected by the parser.
// expected-error@+2 {{expected a finite number}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'clip_grad_norm'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, clip_grad_norm = -1.0e999>} {}

//===----------------------------------------------------------------------===//
// Plan attribute
//===----------------------------------------------------------------------===//

// -----

// plan: the grid needs at least one dimension.
// expected-error@+1 {{grid must be [shard] or [replicate, shard], got 0 dimensions}}
module attributes {fsdp.plan = #fsdp.plan<grid = [], optimizer = #fsdp.sgd<lr = 0.1>>} {}

// -----

// plan: the grid has at most two dimensions.
// expected-error@+1 {{grid must be [shard] or [replicate, shard], got 3 dimensions}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2, 2, 2], strategy = hybrid_shard, optimizer = #fsdp.sgd<lr = 0.1>>} {}

// -----

// plan: grid sizes must be positive (zero).
// expected-error@+1 {{grid sizes must be positive, got 0}}
module attributes {fsdp.plan = #fsdp.plan<grid = [0], optimizer = #fsdp.sgd<lr = 0.1>>} {}

// -----

// plan: grid sizes must be positive (negative, in a 2-D grid).
// expected-error@+1 {{grid sizes must be positive, got -2}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2, -2], strategy = hybrid_shard, optimizer = #fsdp.sgd<lr = 0.1>>} {}

// -----

// plan: grid sizes are integers.
// expected-error@+2 {{expected integer value}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'grid'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2.5], optimizer = #fsdp.sgd<lr = 0.1>>} {}

// -----

// plan: hybrid_shard needs a 2-D grid.
// expected-error@+1 {{hybrid_shard needs a 2-D grid [replicate, shard]}}
module attributes {fsdp.plan = #fsdp.plan<grid = [4], strategy = hybrid_shard, optimizer = #fsdp.sgd<lr = 0.1>>} {}

// -----

// plan: a 2-D grid needs hybrid_shard (default strategy).
// expected-error@+1 {{a 2-D grid needs strategy = hybrid_shard, got full_shard}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2, 4], optimizer = #fsdp.sgd<lr = 0.1>>} {}

// -----

// plan: a 2-D grid needs hybrid_shard (explicit strategy).
// expected-error@+1 {{a 2-D grid needs strategy = hybrid_shard, got no_shard}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2, 4], strategy = no_shard, optimizer = #fsdp.sgd<lr = 0.1>>} {}

// -----

// plan: clip_grad_norm must not be negative.
// expected-error@+1 {{clip_grad_norm must be non-negative (0 disables clipping), got -1.000000e+00}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, clip_grad_norm = -1.0>} {}

// -----

// plan: prefetch must not be negative.
// expected-error@+1 {{prefetch must be non-negative, got -1}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, prefetch = -1>} {}

// -----

// plan: at least one gather must be allowed in flight.
// expected-error@+1 {{max_inflight_gathers must be at least 1, got 0}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, max_inflight_gathers = 0>} {}

// -----

// plan: auto_wrap needs a threshold.
// expected-error@+1 {{units = auto_wrap needs min_unit_params >= 1}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, units = auto_wrap>} {}

// -----

// plan: a negative auto_wrap threshold.
// expected-error@+1 {{units = auto_wrap needs min_unit_params >= 1}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, units = auto_wrap, min_unit_params = -5>} {}

// -----

// plan: min_unit_params is meaningless with explicit units.
// expected-error@+1 {{min_unit_params applies only with units = auto_wrap}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, min_unit_params = 100>} {}

// -----

// plan: the optimizer is required.
// expected-error@+1 {{struct is missing required parameter: optimizer}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2]>} {}

// -----

// plan: the grid is required.
// expected-error@+1 {{struct is missing required parameter: grid}}
module attributes {fsdp.plan = #fsdp.plan<optimizer = #fsdp.sgd<lr = 0.1>>} {}

// -----

// plan: the optimizer must be an optimizer attribute.
// expected-error@+2 {{invalid kind of attribute specified}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'optimizer'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.zeros>} {}

// -----

// plan: an unknown strategy keyword.
// expected-error@+2 {{expected one of: full_shard, shard_grad_op, no_shard, hybrid_shard}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'strategy' which is to be a `::mlir::fsdp::Strategy`}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], strategy = zero3, optimizer = #fsdp.sgd<lr = 0.1>>} {}

// -----

// plan: an unknown dtype keyword.
// expected-error@+2 {{expected one of: f32, bf16}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'param_dtype'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, param_dtype = f16>} {}

// -----

// plan: an unknown remat keyword.
// expected-error@+2 {{expected one of: none, selective, unit}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'remat'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, remat = all>} {}

// -----

// plan: a device memory without a unit the plan knows.
// expected-error@+1 {{device_memory must be a positive size such as "80GB" or "79.5GiB", got "80G"}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, device_memory = "80G">} {}

// -----

// plan: no device memory at all.
// expected-error@+1 {{device_memory must be a positive size such as "80GB" or "79.5GiB", got "0GB"}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, device_memory = "0GB">} {}

// -----

// plan: no micro-batch at all.
// expected-error@+1 {{micro_batches must be at least 1, got 0}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, micro_batches = 0>} {}

// -----

// plan: no_sync with nothing to accumulate.
// expected-error@+1 {{accumulate = no_sync needs micro_batches > 1 (one micro-batch has nothing to accumulate)}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, accumulate = no_sync>} {}

// -----

// The step's micro-batch count is a positive integer on a function.
// expected-error@+1 {{'fsdp.micro_batches' is a positive integer on a function}}
module attributes {fsdp.micro_batches = 2 : i64} {}

// -----

// expected-error@+1 {{'fsdp.forward_only' is a unit attribute on a function}}
module attributes {fsdp.forward_only} {}

// -----

module {
  // expected-error@+1 {{'fsdp.forward_only' is a unit attribute on a function}}
  func.func @f() attributes {fsdp.forward_only = 1 : i64} {
    return
  }
}

// -----

// plan: recompute every 0th unit.
// expected-error@+1 {{remat_every must be at least 1, got 0}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, remat = unit, remat_every = 0>} {}

// -----

// plan: which units to recompute, without recompute.
// expected-error@+1 {{remat_every needs remat = unit or selective}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, remat_every = 2>} {}

// -----

// expected-error@+1 {{remat_units needs remat = unit or selective}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, remat_units = ["a"]>} {}

// -----

// plan: two ways of choosing the units to recompute.
// expected-error@+1 {{remat_units and remat_every both choose the units to recompute: give one}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, remat = unit, remat_every = 2, remat_units = ["a"]>} {}

// -----

// expected-error@+1 {{remat_units must name at least one unit}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, remat = unit, remat_units = []>} {}

// -----

// expected-error@+1 {{remat_units must be unit names (non-empty strings), got 3}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, remat = unit, remat_units = ["a", 3]>} {}

// -----

// expected-error@+1 {{remat_units names unit "a" twice}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, remat = selective, remat_units = ["a", "b", "a"]>} {}

// -----

// fsdp.recompute is the compiler's record on the module, a #fsdp.recompute.
// expected-error@+1 {{'fsdp.recompute' is a #fsdp.recompute on the module}}
module attributes {fsdp.recompute = {ops = 3 : i64}} {}

// -----

// fsdp.manifest is the lowered step's manifest, a #fsdp.manifest on the module.
// expected-error@+1 {{'fsdp.manifest' is a #fsdp.manifest on the module}}
module attributes {fsdp.manifest = "{}"} {}

// -----

// manifest: the persistent part lies within the arena.
// expected-error@+1 {{the arena's persistent part (256 bytes) lies within its 128 bytes}}
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 128, persistent_bytes = 256, local_batch = 1, shard_ranks = 2>} {}

// -----

// manifest: shard_ranks divides the plan's ranks.
// expected-error@+1 {{shard_ranks 3 divides the plan's 2 ranks}}
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 128, persistent_bytes = 64, local_batch = 1, shard_ranks = 3>} {}

// -----

// manifest: every parameter's unit is one of the manifest's.
// expected-error@+1 {{parameter 'w' names no unit of the manifest: 'fc'}}
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 128, persistent_bytes = 64, local_batch = 1, shard_ranks = 2, params = [#fsdp.manifest_param<name = "w", shape = [4], dtype = f32, unit = "fc", trainable = true, init = #fsdp.zeros, unit_offset = 0>]>} {}

// -----

// manifest: a frozen unit has no gradient.
// expected-error@+2 {{frozen unit 'fc' has no gradient, state or host regions}}
// expected-error@+1 {{failed to parse FSDP_ManifestAttr parameter 'units'}}
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 128, persistent_bytes = 64, local_batch = 1, shard_ranks = 2, units = [#fsdp.manifest_unit<name = "fc", dtype = f32, trainable = false, numel = 4, shard_numel = 2, param_offset = 0, grad_offset = 64>]>} {}

// -----

// manifest: an offloaded unit has both its device copy's dtype and its host regions.
// expected-error@+2 {{unit 'fc': param_dtype and host come together (an offloaded unit)}}
// expected-error@+1 {{failed to parse FSDP_ManifestAttr parameter 'units'}}
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 128, persistent_bytes = 64, local_batch = 1, shard_ranks = 2, units = [#fsdp.manifest_unit<name = "fc", dtype = f32, trainable = true, numel = 4, shard_numel = 2, param_offset = 0, param_dtype = bf16>]>} {}

// -----

// manifest: an integer input has a bound.
// expected-error@+2 {{role tokens needs integers with a positive bound, got 'i32'}}
// expected-error@+1 {{failed to parse FSDP_ManifestAttr parameter 'inputs'}}
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 128, persistent_bytes = 64, local_batch = 1, shard_ranks = 2, inputs = [#fsdp.manifest_input<shape = [1, 4], dtype = i32, role = "tokens", offset = 0, bytes = 16>]>} {}

// -----

// manifest: a collective is one the runtime starts.
// expected-error@+2 {{a collective is all_gather, reduce_scatter or all_reduce, got 'broadcast'}}
// expected-error@+1 {{failed to parse FSDP_ManifestAttr parameter 'collectives'}}
module attributes {fsdp.manifest = #fsdp.manifest<plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>, arena_bytes = 128, persistent_bytes = 64, local_batch = 1, shard_ranks = 2, collectives = [#fsdp.manifest_collective<kind = "broadcast">]>} {}

// -----

// plan: an unknown field.
// expected-error@+1 {{duplicate or unknown struct parameter name: lr}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, lr = 0.1>} {}

// -----

// plan: a field given twice.
// expected-error@+1 {{duplicate or unknown struct parameter name: grid}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], grid = [4], optimizer = #fsdp.sgd<lr = 0.1>>} {}

//===----------------------------------------------------------------------===//
// Dialect attributes on operations
//===----------------------------------------------------------------------===//

// -----

// fsdp.plan belongs on a module, not a function.
// expected-error@+1 {{'fsdp.plan' belongs on the builtin.module of the model}}
func.func @f() attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  return
}

// -----

// fsdp.plan belongs on a module, not on a model op.
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{'fsdp.plan' belongs on the builtin.module of the model}}
  %0 = fsdp.relu %x {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} : tensor<4xf32>
  return
}

// -----

// fsdp.plan must be a plan (a builtin integer).
// expected-error@+1 {{'fsdp.plan' must be a #fsdp.plan<...>, got 1 : i64}}
module attributes {fsdp.plan = 1 : i64} {}

// -----

// fsdp.plan must be a plan (an optimizer alone).
// expected-error@+1 {{'fsdp.plan' must be a #fsdp.plan<...>, got #fsdp.sgd<lr = }}
module attributes {fsdp.plan = #fsdp.sgd<lr = 0.1>} {}

// -----

// An unknown fsdp.* attribute on a module.
// expected-error@+1 {{unknown fsdp attribute 'fsdp.xyz'; the only one is 'fsdp.plan'}}
module attributes {fsdp.xyz = 1} {}

// -----

// An unknown fsdp.* attribute on an op.
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{unknown fsdp attribute 'fsdp.foo'; the only one is 'fsdp.plan'}}
  %0 = fsdp.relu %x {fsdp.foo} : tensor<4xf32>
  return
}

// -----

// A parameter whose element count overflows int64.
// expected-error@+1 {{'fsdp.param' op parameter dimensions must be at least 1 and hold fewer than 2^63 elements, got 'tensor<4294967296x4294967297xf32>'}}
fsdp.param @w : tensor<4294967296x4294967297xf32> = #fsdp.zeros

// -----

// A parameter type with an encoding.
// expected-error@+1 {{'fsdp.param' op parameter type must be a statically shaped tensor without encoding, got 'tensor<4xf32, "enc">'}}
fsdp.param @w : tensor<4xf32, "enc"> = #fsdp.zeros

// -----

// Model ops reject tensors with a zero-size dimension (a mean over nothing).
func.func @f(%l: tensor<8x0xf32>, %t: tensor<8xi32>) {
  // expected-error@+1 {{'fsdp.cross_entropy' op operand #0 must be non-empty statically shaped tensor of f32 or bf16, but got 'tensor<8x0xf32>'}}
  %0 = fsdp.cross_entropy %l, %t : tensor<8x0xf32>, tensor<8xi32> -> tensor<f32>
  return
}

// -----

// Model ops reject tensors with an encoding.
func.func @f(%a: tensor<4xf32, "enc">) {
  // expected-error@+1 {{'fsdp.relu' op operand #0 must be non-empty statically shaped tensor of f32 or bf16, but got 'tensor<4xf32, "enc">'}}
  %0 = fsdp.relu %a : tensor<4xf32, "enc">
  return
}

// -----

// Model ops reject shapes whose element count overflows int64.
func.func @f(%x: tensor<4x4294967296xf32>) {
  // expected-error@+1 {{'fsdp.reshape' op result #0 must be non-empty statically shaped tensor of f32 or bf16, but got 'tensor<17179869184x1073741825xf32>'}}
  %0 = fsdp.reshape %x : tensor<4x4294967296xf32> -> tensor<17179869184x1073741825xf32>
  return
}

// -----

// `true` is not a number.
// expected-error@+3 {{expected floating point literal}}
// expected-error@+2 {{failed to parse FSDP_SGDAttr parameter 'lr' which is to be a `::llvm::APFloat`}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'optimizer'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = true>>} {}

// -----

// Two minus signs.
// expected-error@+3 {{expected a number}}
// expected-error@+2 {{failed to parse FSDP_SGDAttr parameter 'lr' which is to be a `::llvm::APFloat`}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'optimizer'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = --1>>} {}

// -----

// A whole number beyond int64 must be written as a real.
// expected-error@+3 {{whole number too large; write it as a real number, e.g. 1.0e20}}
// expected-error@+2 {{failed to parse FSDP_SGDAttr parameter 'weight_decay' which is to be a `::llvm::APFloat`}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'optimizer'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1, weight_decay = 99999999999999999999>>} {}

// -----

// A grid with more ranks than MPI can number.
// expected-error@+1 {{grid and tensor_parallel hold more than 2^31 - 1 ranks}}
module attributes {fsdp.plan = #fsdp.plan<grid = [65536, 65536], strategy = hybrid_shard, optimizer = #fsdp.sgd<lr = 0.1>>} {}

// -----

// One plan per model.
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>>} {
  // expected-error@+1 {{a model has one plan, but an enclosing module already carries 'fsdp.plan'}}
  module attributes {fsdp.plan = #fsdp.plan<grid = [4], optimizer = #fsdp.sgd<lr = 0.1>>} {}
}

// -----

// The dialect defines no argument attributes.
// expected-error@+1 {{unknown fsdp argument attribute 'fsdp.xyz'}}
func.func @f(%x: tensor<4xf32> {fsdp.xyz = 1}) {
  return
}

// -----

// The dialect defines no result attributes.
// expected-error@+1 {{unknown fsdp result attribute 'fsdp.abc'}}
func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32> {fsdp.abc}) {
  return %x : tensor<4xf32>
}

// -----

// broadcast only adds leading dimensions and expands size-1 ones.
func.func @f(%x: tensor<4x3xf32>) {
  // expected-error@+1 {{'fsdp.broadcast' op cannot broadcast 4x3 to 2x4x5}}
  %0 = fsdp.broadcast %x : tensor<4x3xf32> -> tensor<2x4x5xf32>
  return
}

// -----

// softmax_grad's dim must exist.
func.func @f(%y: tensor<4x8xf32>) {
  // expected-error@+1 {{'fsdp.softmax_grad' op dim 2 is out of range for rank 2}}
  %0 = fsdp.softmax_grad %y, %y dim 2 : tensor<4x8xf32>
  return
}

// -----

// causal_mask_grad needs a square trailing matrix, like causal_mask.
func.func @f(%d: tensor<4x8xf32>) {
  // expected-error@+1 {{'fsdp.causal_mask_grad' op needs a square (query x key) trailing matrix, got 4x8}}
  %0 = fsdp.causal_mask_grad %d : tensor<4x8xf32>
  return
}

// -----

// layer_norm_grad's gamma is over the last dimension.
func.func @f(%x: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error@+1 {{'fsdp.layer_norm_grad' op gamma must be 'tensor<8xf32>' (the last dimension of the input), got 'tensor<4xf32>'}}
  %0:3 = fsdp.layer_norm_grad %x, %g, %x : tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

// rms_norm_grad's gamma is over the last dimension.
func.func @f(%x: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error@+1 {{'fsdp.rms_norm_grad' op gamma must be 'tensor<8xf32>' (the last dimension of the input), got 'tensor<4xf32>'}}
  %0:2 = fsdp.rms_norm_grad %x, %g, %x : tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

// The gradient flowing into embedding_grad has the embedding output's shape.
func.func @f(%ids: tensor<2x4xi32>, %d: tensor<2x4x7xf32>) {
  // expected-error@+1 {{'fsdp.embedding_grad' op gradient type 'tensor<2x4x7xf32>' does not match the embedding output 'tensor<2x4x8xf32>'}}
  %0 = fsdp.embedding_grad %ids, %d : tensor<2x4xi32>, tensor<2x4x7xf32> -> tensor<16x8xf32>
  return
}

// -----

// The table gradient is a matrix.
func.func @f(%ids: tensor<2x4xi32>, %d: tensor<2x4x8xf32>) {
  // expected-error@+1 {{'fsdp.embedding_grad' op table gradient must be [rows, features], got 'tensor<16x8x1xf32>'}}
  %0 = fsdp.embedding_grad %ids, %d : tensor<2x4xi32>, tensor<2x4x8xf32> -> tensor<16x8x1xf32>
  return
}

// -----

// cross_entropy_grad's targets follow the logits' leading shape.
func.func @f(%z: tensor<4x10xf32>, %t: tensor<5xi32>, %dl: tensor<f32>) {
  // expected-error@+1 {{'fsdp.cross_entropy_grad' op targets shape 5 must be the logits shape without its last dimension (4)}}
  %0 = fsdp.cross_entropy_grad %z, %t, %dl : tensor<4x10xf32>, tensor<5xi32>, tensor<f32>
  return
}

// -----

// cross_entropy_grad's loss gradient is f32, as the loss.
func.func @f(%z: tensor<4x10xbf16>, %t: tensor<4xi32>, %dl: tensor<bf16>) {
  // expected-error@+1 {{'fsdp.cross_entropy_grad' op operand #2 must be rank-0 tensor of f32, but got 'tensor<bf16>'}}
  %0 = fsdp.cross_entropy_grad %z, %t, %dl : tensor<4x10xbf16>, tensor<4xi32>, tensor<bf16>
  return
}

// -----

// Clipping needs a positive norm.
func.func @f(%s: tensor<f32>) {
  // expected-error@+1 {{'fsdp.clip_coefficient' op max_norm must be positive, got 0.000000e+00}}
  %0 = fsdp.clip_coefficient %s max_norm 0.0 : tensor<f32>
  return
}

// -----

// update names a parameter.
func.func @f(%g: tensor<4xf32>, %step: i64, %lr: f32) {
  // expected-error@+1 {{'fsdp.update' op 'nothing' does not name an fsdp.param}}
  fsdp.update @nothing, %g step %step lr %lr {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<4xf32>
  return
}

// -----

// Frozen parameters are never updated.
fsdp.param frozen @w : tensor<4xf32> = #fsdp.ones
func.func @f(%g: tensor<4xf32>, %step: i64, %lr: f32) {
  // expected-error@+1 {{'fsdp.update' op 'w' is frozen and cannot be updated}}
  fsdp.update @w, %g step %step lr %lr {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<4xf32>
  return
}

// -----

// The gradient has the parameter's type.
fsdp.param @w : tensor<4xf32> = #fsdp.ones
func.func @f(%g: tensor<5xf32>, %step: i64, %lr: f32) {
  // expected-error@+1 {{'fsdp.update' op gradient type 'tensor<5xf32>' does not match the declaration of 'w' as 'tensor<4xf32>'}}
  fsdp.update @w, %g step %step lr %lr {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<5xf32>
  return
}

// -----

// update's optimizer attribute must be an optimizer.
fsdp.param @w : tensor<4xf32> = #fsdp.ones
func.func @f(%g: tensor<4xf32>, %step: i64, %lr: f32) {
  // expected-error@+1 {{'fsdp.update' op attribute 'optimizer' failed to satisfy constraint: optimizer}}
  fsdp.update @w, %g step %step lr %lr {optimizer = #fsdp.zeros} : tensor<4xf32>
  return
}

// -----

// convert changes the element type, never the shape.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fsdp.convert' op failed to verify that all of {input, result} have same shape}}
  %0 = fsdp.convert %x : tensor<4x8xf32> -> tensor<8x4xbf16>
  return
}

// -----

// plan: offload takes what can live in host memory.
// expected-error@+2 {{expected one of: none, optimizer}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'offload'}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, offload = params>} {}

// -----

// fsdp.on_host marks offload's read of the host arena: a memref.load.
func.func @f(%x: memref<f32>, %v: f32) {
  // expected-error@+1 {{'fsdp.on_host' is a unit attribute on a memref.load}}
  memref.store %v, %x[] {fsdp.on_host} : memref<f32>
  return
}

// -----

// fsdp.recomputed marks a product that computes again what the step computed.
func.func @f(%x: memref<f32>, %v: f32) {
  // expected-error@+1 {{'fsdp.recomputed' is a unit attribute on a linalg.batch_matmul or a call}}
  memref.store %v, %x[] {fsdp.recomputed} : memref<f32>
  return
}

// -----

// fsdp.row_prologue marks an elementwise linalg op for the buffer plan.
func.func @f(%x: memref<f32>, %v: f32) {
  // expected-error@+1 {{'fsdp.row_prologue' is a unit attribute on a linalg op}}
  memref.store %v, %x[] {fsdp.row_prologue} : memref<f32>
  return
}

// -----

// expected-error@+2 {{expected true or false}}
// expected-error@+1 {{failed to parse FSDP_PlanAttr parameter 'allow_tf32' which is to be a `bool`}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], optimizer = #fsdp.sgd<lr = 0.1>, allow_tf32 = 1>} {}

// -----

// slice: the range must lie within the dimension.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'fsdp.slice' op the range [6, 9) of dimension 1 is not within its 8 entries}}
  // expected-error@+1 {{'fsdp.slice' op failed to infer returned types}}
  %0 = fsdp.slice %x dim 1 offset 6 size 3 : tensor<4x8xf32> -> tensor<4x3xf32>
  return
}

// -----

// slice: dim names a dimension of the input.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'fsdp.slice' op dim 2 is not a dimension of 'tensor<4x8xf32>'}}
  // expected-error@+1 {{'fsdp.slice' op failed to infer returned types}}
  %0 = fsdp.slice %x dim 2 offset 0 size 1 : tensor<4x8xf32> -> tensor<4x8x1xf32>
  return
}

// -----

// slice: the result type is the input's with the range's size.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{'fsdp.slice' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x2xf32>'}}
  // expected-error@+1 {{'fsdp.slice' op failed to infer returned types}}
  %0 = fsdp.slice %x dim 1 offset 0 size 3 : tensor<4x8xf32> -> tensor<4x2xf32>
  return
}

// -----

// slice: an empty range.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fsdp.slice' op attribute 'size' failed to satisfy constraint}}
  %0 = fsdp.slice %x dim 1 offset 0 size 0 : tensor<4x8xf32> -> tensor<4x0xf32>
  return
}

// -----

// slice_grad: the gradient's range must lie within the forward input.
func.func @f(%g: tensor<4x3xf32>) {
  // expected-error@+1 {{'fsdp.slice_grad' op the range [6, 9) of dimension 1 is not within its 8 entries}}
  %0 = fsdp.slice_grad %g dim 1 offset 6 : tensor<4x3xf32> -> tensor<4x8xf32>
  return
}

// -----

// slice_grad: dimensions other than dim agree.
func.func @f(%g: tensor<4x3xf32>) {
  // expected-error@+1 {{'fsdp.slice_grad' op the slice 'tensor<4x3xf32>' and the sliced 'tensor<5x8xf32>' differ in dimension 0, which is not sliced}}
  %0 = fsdp.slice_grad %g dim 1 offset 0 : tensor<4x3xf32> -> tensor<5x8xf32>
  return
}

// -----

// A tensor-parallel degree is a number of ranks.
// expected-error@+1 {{tensor_parallel must be at least 1, got 0}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], tensor_parallel = 0, optimizer = #fsdp.sgd<lr = 0.1>>} {}

// -----

module attributes {fsdp.plan = #fsdp.plan<grid = [2], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  // expected-error@+1 {{split dimension 2 is not a dimension of 'tensor<8x4xf32>'}}
  fsdp.param @w unit "mlp" split 2 : tensor<8x4xf32> = #fsdp.zeros
}

// -----

module attributes {fsdp.plan = #fsdp.plan<grid = [2], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  // expected-error@+1 {{is split over the tensor ranks, but annotated 'tensor whole'}}
  fsdp.param @w unit "mlp" tensor whole split 0 : tensor<8x4xf32> = #fsdp.zeros
}

// -----

// Sequence blocks are split over tensor ranks.
// expected-error@+1 {{sequence_parallel splits the sequence over the tensor ranks: it needs tensor_parallel above 1}}
module attributes {fsdp.plan = #fsdp.plan<grid = [2], sequence_parallel = true, optimizer = #fsdp.sgd<lr = 0.1>>} {}

// -----

// A block is the whole divided by the plan's tensor ranks along `dim`, or for a chunk
// by fewer blocks than ranks, which each of them reads: not by more.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 4, sequence_parallel = true, optimizer = #fsdp.sgd<lr = 0.1>>} {
  func.func @f(%x: tensor<2x8x4xf32>) -> tensor<2x1x4xf32> {
    // expected-error@+1 {{'fsdp.tensor_chunk' op dimension 1 of the block 'tensor<2x1x4xf32>' must be that of the whole 'tensor<2x8x4xf32>' divided by the tensor ranks (4), or by a number of blocks that divides them}}
    %b = fsdp.tensor_chunk %x dim 1 : tensor<2x8x4xf32> -> tensor<2x1x4xf32>
    return %b : tensor<2x1x4xf32>
  }
}

// -----

// 3 blocks do not divide 4 tensor ranks.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 4, optimizer = #fsdp.sgd<lr = 0.1>>} {
  func.func @f(%x: tensor<2x1x4xf32>) -> tensor<2x3x4xf32> {
    // expected-error@+1 {{'fsdp.tensor_unchunk' op dimension 1 of the block 'tensor<2x1x4xf32>' must be that of the whole 'tensor<2x3x4xf32>' divided by the tensor ranks (4), or by a number of blocks that divides them}}
    %w = fsdp.tensor_unchunk %x dim 1 : tensor<2x1x4xf32> -> tensor<2x3x4xf32>
    return %w : tensor<2x3x4xf32>
  }
}

// -----

// Only a chunk and its gradient take fewer blocks than ranks.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 4, optimizer = #fsdp.sgd<lr = 0.1>>} {
  func.func @f(%x: tensor<2x4x4xf32>) -> tensor<2x8x4xf32> {
    // expected-error@+1 {{'fsdp.tensor_all_gather' op dimension 1 of the block 'tensor<2x4x4xf32>' must be that of the whole 'tensor<2x8x4xf32>' divided by the tensor ranks (4)}}
    %g = fsdp.tensor_all_gather %x dim 1 : tensor<2x4x4xf32> -> tensor<2x8x4xf32>
    return %g : tensor<2x8x4xf32>
  }
}

// -----

func.func @f(%x: tensor<2x4x4xf32>) -> tensor<4x8x4xf32> {
  // expected-error@+1 {{'fsdp.tensor_all_gather' op the block 'tensor<2x4x4xf32>' and the whole 'tensor<4x8x4xf32>' differ in dimension 0, which is not split}}
  %g = fsdp.tensor_all_gather %x dim 1 : tensor<2x4x4xf32> -> tensor<4x8x4xf32>
  return %g : tensor<4x8x4xf32>
}

// -----

func.func @f(%x: tensor<2x8x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error@+1 {{'fsdp.tensor_reduce_scatter' op dim 3 is not a dimension of 'tensor<2x8x4xf32>'}}
  %s = fsdp.tensor_reduce_scatter %x dim 3 : tensor<2x8x4xf32> -> tensor<2x4x4xf32>
  return %s : tensor<2x4x4xf32>
}

// -----

// A vocabulary block: its rows are the whole's divided by the tensor ranks.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  func.func @f(%table: tensor<8x4xf32>, %ids: tensor<2x3xi32>) -> tensor<2x3x4xf32> {
    // expected-error@+1 {{'fsdp.tensor_embedding' op the table's 8 rows must be the 32 rows divided by the tensor ranks (2)}}
    %e = fsdp.tensor_embedding %table[%ids] rows 32 : tensor<8x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
    return %e : tensor<2x3x4xf32>
  }
}

// -----

module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 4, optimizer = #fsdp.sgd<lr = 0.1>>} {
  func.func @f(%z: tensor<2x3x8xf32>, %ids: tensor<2x3xi32>) -> tensor<f32> {
    // expected-error@+1 {{'fsdp.tensor_cross_entropy' op the logits' 8 classes must be the 16 classes divided by the tensor ranks (4)}}
    %l = fsdp.tensor_cross_entropy %z, %ids classes 16 : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The statistics of a block of classes: 3 rows of one f32 per position.
func.func @f(%z: tensor<2x3x8xf32>, %ids: tensor<2x3xi32>, %first: tensor<1xi64>) -> tensor<1x3x5xf32> {
  // expected-error@+1 {{'fsdp.cross_entropy_stats' op the statistics must be f32 [1, 3, 6], got 'tensor<1x3x5xf32>'}}
  %s = fsdp.cross_entropy_stats %z, %ids, %first : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<1xi64> -> tensor<1x3x5xf32>
  return %s : tensor<1x3x5xf32>
}

// -----

func.func @f(%z: tensor<2x3x8xf32>, %ids: tensor<2x3xi32>, %first: tensor<2xi64>) -> tensor<1x3x6xf32> {
  // expected-error@+1 {{'fsdp.cross_entropy_stats' op the block's first class must be a tensor of one index, got 'tensor<2xi64>'}}
  %s = fsdp.cross_entropy_stats %z, %ids, %first : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<2xi64> -> tensor<1x3x6xf32>
  return %s : tensor<1x3x6xf32>
}

// -----

func.func @f(%s: tensor<2x2x6xf32>) -> tensor<f32> {
  // expected-error@+1 {{'fsdp.cross_entropy_combine' op the statistics must be f32 [blocks, 3, positions], got 'tensor<2x2x6xf32>'}}
  %l = fsdp.cross_entropy_combine %s : tensor<2x2x6xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A fused product's parts: with a split, two or more, each cut into the tensor ranks'
// blocks, summing to the whole dimension.
module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  // expected-error@+1 {{'fsdp.param' op has parts but no split dimension}}
  fsdp.param @w unit "u" parts [4, 4] : tensor<8x4xf32> = #fsdp.zeros
}

// -----

module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  // expected-error@+1 {{'fsdp.param' op part 3 of the split dimension does not cut into 2 tensor ranks' equal blocks}}
  fsdp.param @w unit "u" split 1 parts [3, 5] : tensor<8x4xf32> = #fsdp.zeros
}

// -----

module attributes {fsdp.plan = #fsdp.plan<grid = [1], tensor_parallel = 2, optimizer = #fsdp.sgd<lr = 0.1>>} {
  // expected-error@+1 {{'fsdp.param' op the parts of the split dimension must be two or more summing to its whole size (8), got 2 summing to 6}}
  fsdp.param @w unit "u" split 1 parts [2, 4] : tensor<8x4xf32> = #fsdp.zeros
}
