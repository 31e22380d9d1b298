// RUN: fsdp-opt %s -split-input-file -verify-diagnostics

// Every diagnostic of the sharding ops (fsdp.unit, fsdp.all_gather,
// fsdp.view, fsdp.free, fsdp.flatten, fsdp.reduce_scatter, fsdp.all_reduce),
// of a parameter's `at` offset and of fsdp.update naming a unit, one case
// each.

//===----------------------------------------------------------------------===//
// fsdp.param ... at
//===----------------------------------------------------------------------===//

// An offset places a parameter in its unit's buffer: no unit, no offset.
// expected-error@+1 {{'fsdp.param' op an offset ('at') needs a unit}}
fsdp.param @w at 0 : tensor<4xf32> = #fsdp.zeros

// -----

// expected-error@+1 {{'fsdp.param' op offset must not be negative, got -4}}
fsdp.param @w unit "u" at -4 : tensor<4xf32> = #fsdp.zeros

// -----

// `at` comes after `unit`.
// expected-error@+1 {{expected ':'}}
fsdp.param @w at 0 unit "u" : tensor<4xf32> = #fsdp.zeros

//===----------------------------------------------------------------------===//
// fsdp.unit
//===----------------------------------------------------------------------===//

// -----

// expected-error@+1 {{'fsdp.unit' op numel, shard and ranks must be at least 1}}
fsdp.unit @u numel 16 shard 16 ranks 0 : f32

// -----

// A negative size reads as a huge unsigned one; it is rejected all the same.
// expected-error@+1 {{'fsdp.unit' op numel, shard and ranks must be at least 1}}
fsdp.unit @u numel -8 shard 16 ranks 1 : f32

// -----

fsdp.param @w unit "u" at 0 : tensor<40xf32> = #fsdp.zeros
// expected-error@+1 {{'fsdp.unit' op the 2 shards of 16 elements do not hold the unit's 40 elements}}
fsdp.unit @u numel 40 shard 16 ranks 2 : f32

// -----

// shard * ranks overflows int64.
// expected-error@+1 {{'fsdp.unit' op the 4 shards of 4611686018427387904 elements do not hold the unit's 40 elements}}
fsdp.unit @u numel 40 shard 4611686018427387904 ranks 4 : f32

// -----

fsdp.param @w unit "u" at 0 : tensor<8xbf16> = #fsdp.zeros
// expected-error@+1 {{'fsdp.unit' op parameter 'w' has element type 'bf16', but the unit holds 'f32'}}
fsdp.unit @u numel 8 shard 16 ranks 1 : f32

// -----

// Members are back to back in declaration order.
fsdp.param @a unit "u" at 0 : tensor<8xf32> = #fsdp.zeros
fsdp.param @b unit "u" at 16 : tensor<8xf32> = #fsdp.zeros
// expected-error@+1 {{'fsdp.unit' op parameter 'b' must be at offset 8 (right after the previous member), got 16}}
fsdp.unit @u numel 16 shard 16 ranks 1 : f32

// -----

// A member of a unit op must have its offset.
fsdp.param @a unit "u" : tensor<8xf32> = #fsdp.zeros
// expected-error@+1 {{'fsdp.unit' op parameter 'a' must be at offset 0 (right after the previous member), got none}}
fsdp.unit @u numel 8 shard 16 ranks 1 : f32

// -----

fsdp.param @a unit "u" at 0 : tensor<8xf32> = #fsdp.zeros
// expected-error@+1 {{'fsdp.unit' op the parameters of the unit hold 8 elements, but numel is 12}}
fsdp.unit @u numel 12 shard 16 ranks 1 : f32

// -----

// Flat buffers hold floats.
// expected-error@+1 {{'fsdp.unit' op attribute 'element_type' failed to satisfy constraint: type attribute of floating-point}}
fsdp.unit @u numel 8 shard 16 ranks 1 : i32

// -----

func.func @f() {
  // expected-error@+1 {{'fsdp.unit' op expects parent op 'builtin.module'}}
  fsdp.unit @u numel 8 shard 16 ranks 1 : f32
  return
}

// -----

// A unit and a parameter share the module's symbol table.
// expected-note@+1 {{see existing symbol definition here}}
fsdp.param @u unit "u" at 0 : tensor<8xf32> = #fsdp.zeros
// expected-error@+1 {{redefinition of symbol named 'u'}}
fsdp.unit @u numel 8 shard 16 ranks 1 : f32

//===----------------------------------------------------------------------===//
// fsdp.all_gather
//===----------------------------------------------------------------------===//

// -----

fsdp.param @w unit "u" at 0 : tensor<8xf32> = #fsdp.zeros
func.func @f() {
  // expected-error@+1 {{'fsdp.all_gather' op 'w' does not name an fsdp.unit}}
  %0 = fsdp.all_gather @w : tensor<8xf32>
  return
}

// -----

// The gathered buffer is the padded flat buffer: shard * ranks elements.
fsdp.param @w unit "u" at 0 : tensor<40xf32> = #fsdp.zeros
fsdp.unit @u numel 40 shard 32 ranks 2 : f32
func.func @f() {
  // expected-error@+1 {{'fsdp.all_gather' op result type 'tensor<40xf32>' is not the flat type 'tensor<64xf32>' of unit 'u'}}
  %0 = fsdp.all_gather @u : tensor<40xf32>
  return
}

// -----

// A gather may round the shards to a narrower type, never widen them.
fsdp.param @w unit "u" at 0 : tensor<64xbf16> = #fsdp.zeros
fsdp.unit @u numel 64 shard 32 ranks 2 : bf16
func.func @f() {
  // expected-error@+1 {{'fsdp.all_gather' op result type 'tensor<64xf32>' is not the flat type 'tensor<64xbf16>' of unit 'u', or its shape in a narrower float type}}
  %0 = fsdp.all_gather @u : tensor<64xf32>
  return
}

// -----

// A view has the gathered buffer's element type.
fsdp.param @w unit "u" at 0 : tensor<2x4xf32> = #fsdp.zeros
fsdp.unit @u numel 8 shard 16 ranks 1 : f32
func.func @f() {
  %g = fsdp.all_gather @u : tensor<16xbf16>
  // expected-error@+1 {{'fsdp.view' op type 'tensor<2x4xf32>' is not the shape of 'w' ('tensor<2x4xf32>') in the element type of the gathered buffer}}
  %0 = fsdp.view @w in %g : tensor<16xbf16> -> tensor<2x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// fsdp.view
//===----------------------------------------------------------------------===//

// -----

fsdp.param @w unit "u" at 0 : tensor<8xf32> = #fsdp.zeros
fsdp.unit @u numel 8 shard 16 ranks 1 : f32
func.func @f() {
  %g = fsdp.all_gather @u : tensor<16xf32>
  // expected-error@+1 {{'fsdp.view' op 'u' does not name an fsdp.param}}
  %0 = fsdp.view @u in %g : tensor<16xf32> -> tensor<8xf32>
  return
}

// -----

fsdp.param @w unit "u" at 0 : tensor<2x4xf32> = #fsdp.zeros
fsdp.unit @u numel 8 shard 16 ranks 1 : f32
func.func @f() {
  %g = fsdp.all_gather @u : tensor<16xf32>
  // expected-error@+1 {{'fsdp.view' op type 'tensor<4x2xf32>' is not the shape of 'w' ('tensor<2x4xf32>') in the element type of the gathered buffer}}
  %0 = fsdp.view @w in %g : tensor<16xf32> -> tensor<4x2xf32>
  return
}

// -----

fsdp.param @w unit "u" : tensor<8xf32> = #fsdp.zeros
func.func @f(%g: tensor<16xf32>) {
  // expected-error@+1 {{'fsdp.view' op 'w' has no place in a unit; run fsdp-partition}}
  %0 = fsdp.view @w in %g : tensor<16xf32> -> tensor<8xf32>
  return
}

// -----

fsdp.param @w unit "u" at 0 : tensor<8xf32> = #fsdp.zeros
func.func @f(%g: tensor<16xf32>) {
  // expected-error@+1 {{'fsdp.view' op the unit 'u' of 'w' has no fsdp.unit}}
  %0 = fsdp.view @w in %g : tensor<16xf32> -> tensor<8xf32>
  return
}

// -----

fsdp.param @w unit "u" at 0 : tensor<8xf32> = #fsdp.zeros
fsdp.unit @u numel 8 shard 16 ranks 2 : f32
func.func @f(%g: tensor<32xf32>) {
  // expected-error@+1 {{'fsdp.view' op reads 'w' from a value that is not an fsdp.all_gather of its unit 'u'}}
  %0 = fsdp.view @w in %g : tensor<32xf32> -> tensor<8xf32>
  return
}

// -----

fsdp.param @w unit "u" at 0 : tensor<8xf32> = #fsdp.zeros
fsdp.unit @u numel 8 shard 16 ranks 2 : f32
fsdp.param @v unit "t" at 0 : tensor<8xf32> = #fsdp.zeros
fsdp.unit @t numel 8 shard 16 ranks 2 : f32
func.func @f() {
  %g = fsdp.all_gather @t : tensor<32xf32>
  // expected-error@+1 {{'fsdp.view' op reads 'w' from a value that is not an fsdp.all_gather of its unit 'u'}}
  %0 = fsdp.view @w in %g : tensor<32xf32> -> tensor<8xf32>
  return
}

//===----------------------------------------------------------------------===//
// fsdp.free
//===----------------------------------------------------------------------===//

// -----

func.func @f(%g: tensor<16xf32>) {
  // expected-error@+1 {{'fsdp.free' op frees a value that no fsdp.all_gather produced}}
  fsdp.free %g : tensor<16xf32>
  return
}

// -----

fsdp.param @w unit "u" at 0 : tensor<8xf32> = #fsdp.zeros
fsdp.unit @u numel 8 shard 16 ranks 1 : f32
func.func @f() -> tensor<8xf32> {
  %g = fsdp.all_gather @u : tensor<16xf32>
  // expected-error@+1 {{'fsdp.free' op the freed buffer is still used afterwards}}
  fsdp.free %g : tensor<16xf32>
  // expected-note@+1 {{used here}}
  %w = fsdp.view @w in %g : tensor<16xf32> -> tensor<8xf32>
  return %w : tensor<8xf32>
}

//===----------------------------------------------------------------------===//
// fsdp.flatten
//===----------------------------------------------------------------------===//

// -----

fsdp.param @w unit "u" at 0 : tensor<8xf32> = #fsdp.zeros
func.func @f(%dw: tensor<8xf32>) {
  // expected-error@+1 {{'fsdp.flatten' op 'w' does not name an fsdp.unit}}
  %0 = fsdp.flatten @w (%dw) : tensor<8xf32> -> tensor<16xf32>
  return
}

// -----

fsdp.param @w unit "u" at 0 : tensor<8xf32> = #fsdp.zeros
fsdp.param @b unit "u" at 8 : tensor<4xf32> = #fsdp.zeros
fsdp.unit @u numel 12 shard 16 ranks 1 : f32
func.func @f(%dw: tensor<8xf32>) {
  // expected-error@+1 {{'fsdp.flatten' op unit 'u' has 2 parameters, but 1 gradients are given}}
  %0 = fsdp.flatten @u (%dw) : tensor<8xf32> -> tensor<16xf32>
  return
}

// -----

// Gradients come in the members' declaration order.
fsdp.param @w unit "u" at 0 : tensor<8xf32> = #fsdp.zeros
fsdp.param @b unit "u" at 8 : tensor<4xf32> = #fsdp.zeros
fsdp.unit @u numel 12 shard 16 ranks 1 : f32
func.func @f(%dw: tensor<8xf32>, %db: tensor<4xf32>) {
  // expected-error@+1 {{'fsdp.flatten' op gradient #0 has type 'tensor<4xf32>', but 'w' is 'tensor<8xf32>'}}
  %0 = fsdp.flatten @u (%db, %dw) : tensor<4xf32>, tensor<8xf32> -> tensor<16xf32>
  return
}

// -----

// f32 gradients are not silently rounded into a bf16 flat gradient.
fsdp.param @w unit "u" at 0 : tensor<8xf32> = #fsdp.zeros
fsdp.unit @u numel 8 shard 16 ranks 1 : f32
func.func @f(%dw: tensor<8xf32>) {
  // expected-error@+1 {{'fsdp.flatten' op gradient #0 has type 'tensor<8xf32>', but 'w' is 'tensor<8xf32>' and the flat gradient holds 'bf16'}}
  %0 = fsdp.flatten @u (%dw) : tensor<8xf32> -> tensor<16xbf16>
  return
}

// -----

fsdp.param @w unit "u" at 0 : tensor<8xf32> = #fsdp.zeros
fsdp.unit @u numel 8 shard 16 ranks 2 : f32
func.func @f(%dw: tensor<8xf32>) {
  // expected-error@+1 {{'fsdp.flatten' op result type 'tensor<16xf32>' is not the flat type 'tensor<32xf32>' of unit 'u'}}
  %0 = fsdp.flatten @u (%dw) : tensor<8xf32> -> tensor<16xf32>
  return
}

//===----------------------------------------------------------------------===//
// fsdp.reduce_scatter
//===----------------------------------------------------------------------===//

// -----

func.func @f(%g: tensor<4x8xf32>) {
  // expected-error@+1 {{'fsdp.reduce_scatter' op input and result must be 1-D tensors of one element type}}
  %0 = fsdp.reduce_scatter %g avg : tensor<4x8xf32> -> tensor<16xf32>
  return
}

// -----

func.func @f(%g: tensor<32xf32>) {
  // expected-error@+1 {{'fsdp.reduce_scatter' op input and result must be 1-D tensors of one element type}}
  %0 = fsdp.reduce_scatter %g avg : tensor<32xf32> -> tensor<16xbf16>
  return
}

// -----

func.func @f(%g: tensor<32xf32>) {
  // expected-error@+1 {{'fsdp.reduce_scatter' op the input's 32 elements do not split into shards of 12}}
  %0 = fsdp.reduce_scatter %g sum : tensor<32xf32> -> tensor<12xf32>
  return
}

// -----

func.func @f(%g: tensor<32xf32>) {
  // expected-error@+1 {{custom op 'fsdp.reduce_scatter' expected string or keyword containing one of the following enum values for attribute 'reduction' [sum, avg]}}
  %0 = fsdp.reduce_scatter %g max : tensor<32xf32> -> tensor<16xf32>
  return
}

//===----------------------------------------------------------------------===//
// fsdp.all_reduce
//===----------------------------------------------------------------------===//

// -----

func.func @f(%g: tensor<32xf32>) {
  // expected-error@+1 {{custom op 'fsdp.all_reduce' expected string or keyword containing one of the following enum values for attribute 'group' [world, shard, replica, tensor]}}
  %0 = fsdp.all_reduce %g sum over node : tensor<32xf32>
  return
}

// -----

// Generic form: the result has the input's type.
func.func @f(%g: tensor<32xf32>) {
  // expected-error@+1 {{'fsdp.all_reduce' op requires the same type for all operands and results}}
  %0 = "fsdp.all_reduce"(%g) <{group = 0 : i32, reduction = 0 : i32}> : (tensor<32xf32>) -> tensor<16xf32>
  return
}

// -----

// Collectives move f32 or bf16.
func.func @f(%g: tensor<32xi32>) {
  // expected-error@+1 {{'fsdp.all_reduce' op operand #0 must be non-empty statically shaped tensor of f32 or bf16}}
  %0 = fsdp.all_reduce %g sum over world : tensor<32xi32>
  return
}

//===----------------------------------------------------------------------===//
// fsdp.update of a unit
//===----------------------------------------------------------------------===//

// -----

func.func @f(%g: tensor<4xf32>, %step: i64, %lr: f32) {
  // expected-error@+1 {{'fsdp.update' op 'nothing' does not name an fsdp.param or fsdp.unit}}
  fsdp.update @nothing, %g step %step lr %lr {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<4xf32>
  return
}

// -----

fsdp.param frozen @w unit "u" at 0 : tensor<8xf32> = #fsdp.zeros
fsdp.unit @u numel 8 shard 16 ranks 1 : f32
func.func @f(%g: tensor<16xf32>, %step: i64, %lr: f32) {
  // expected-error@+1 {{'fsdp.update' op unit 'u' is frozen and cannot be updated}}
  fsdp.update @u, %g step %step lr %lr {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<16xf32>
  return
}

// -----

// A unit's update takes one shard, not the whole flat buffer.
fsdp.param @w unit "u" at 0 : tensor<8xf32> = #fsdp.zeros
fsdp.unit @u numel 8 shard 16 ranks 2 : f32
func.func @f(%g: tensor<32xf32>, %step: i64, %lr: f32) {
  // expected-error@+1 {{'fsdp.update' op gradient type 'tensor<32xf32>' is not the shard type 'tensor<16xf32>' of unit 'u'}}
  fsdp.update @u, %g step %step lr %lr {optimizer = #fsdp.sgd<lr = 0.1>} : tensor<32xf32>
  return
}

// -----

// A unit's shards are summed over the tensor ranks or counted once per tensor
// rank: its members are all cut or all whole.
fsdp.param @a unit "u" split 1 at 0 : tensor<2x4xf32> = #fsdp.zeros
fsdp.param @b unit "u" at 8 : tensor<8xf32> = #fsdp.zeros
// expected-error@+1 {{'fsdp.unit' op parameter 'b' is whole, but 'a' of the same unit is cut; a unit's members are all cut or all whole}}
fsdp.unit @u numel 16 shard 16 ranks 1 : f32
