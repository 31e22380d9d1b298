// RUN: fsdp-opt %s -fsdp-lower-gemms -verify-diagnostics

// A bf16 product stands for an f32 sum rounded once: loops would sum it in
// bf16, so one the runtime's GEMMs cannot take is an error, never a fallback.
func.func @strided_columns(%a: memref<4x8xbf16, strided<[16, 2]>>, %b: memref<8x16xbf16>, %c: memref<4x16xbf16>) {
  // expected-error@+1 {{'linalg.matmul' op is a bf16 product the runtime's GEMMs cannot compute (operands must be static with contiguous rows)}}
  linalg.matmul ins(%a, %b : memref<4x8xbf16, strided<[16, 2]>>, memref<8x16xbf16>) outs(%c : memref<4x16xbf16>)
  return
}
