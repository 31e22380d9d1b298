//===- TestManifest.h - A small valid manifest for the tests ----*- C++ -*-===//
//
// A softmax classifier: features [4, 3] f32, classes [4] i32 with 5 classes,
// fc.w [3, 5] and fc.b [5], AdamW. Tests mutate one field at a time.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TEST_TESTMANIFEST_H
#define FSDPRT_TEST_TESTMANIFEST_H

#include <nlohmann/json.hpp>

namespace fsdprt::test {

inline nlohmann::json classifierManifest() {
  return nlohmann::json::parse(R"({
    "version": 1,
    "arena_bytes": 512,
    "batch": 4,
    "grid": [1],
    "strategy": "full_shard",
    "optimizer": {"kind": "adamw", "lr": 0.001, "beta1": 0.9, "beta2": 0.999, "eps": 1e-08,
                  "weight_decay": 0.0},
    "clip_grad_norm": 0.0,
    "params": [
      {"name": "fc.w", "shape": [3, 5], "dtype": "f32", "unit": "fc", "trainable": true,
       "init": {"kind": "fan_in_uniform", "scale": 1.0}, "offset": 0, "bytes": 60},
      {"name": "fc.b", "shape": [5], "dtype": "f32", "unit": "fc", "trainable": true,
       "init": {"kind": "zeros"}, "offset": 64, "bytes": 20}
    ],
    "state": [
      {"param": "fc.w", "slot": "exp_avg", "offset": 128, "bytes": 60},
      {"param": "fc.w", "slot": "exp_avg_sq", "offset": 192, "bytes": 60},
      {"param": "fc.b", "slot": "exp_avg", "offset": 256, "bytes": 20},
      {"param": "fc.b", "slot": "exp_avg_sq", "offset": 320, "bytes": 20}
    ],
    "inputs": [
      {"index": 0, "shape": [4, 3], "dtype": "f32", "role": "features", "offset": 384,
       "bytes": 48},
      {"index": 1, "shape": [4], "dtype": "i32", "role": "classes", "bound": 5, "offset": 448,
       "bytes": 16}
    ]
  })");
}

} // namespace fsdprt::test

#endif // FSDPRT_TEST_TESTMANIFEST_H
