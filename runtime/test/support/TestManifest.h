//===- TestManifest.h - A small valid manifest for the tests ----*- C++ -*-===//
//
// A softmax classifier on one rank: features [4, 3] f32, classes [4] i32 with
// 5 classes, fc.w [3, 5] and fc.b [5] in one unit "fc" (20 elements, a shard
// of 32), AdamW. Arena: parameter shard [0, 128), gradient shard [128, 256),
// exp_avg [256, 384), features [384, 432), classes [448, 464), exp_avg_sq
// [512, 640), then 128 transient bytes. Tests mutate one field at a time.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TEST_SUPPORT_TESTMANIFEST_H
#define FSDPRT_TEST_SUPPORT_TESTMANIFEST_H

#include <nlohmann/json.hpp>

namespace fsdprt::test {

inline nlohmann::json classifierManifest() {
  return nlohmann::json::parse(R"({
    "version": 2,
    "arena_bytes": 768,
    "persistent_bytes": 640,
    "batch": 4,
    "local_batch": 4,
    "grid": [1],
    "strategy": "full_shard",
    "shard_ranks": 1,
    "replicas": 1,
    "optimizer": {"kind": "adamw", "lr": 0.001, "beta1": 0.9, "beta2": 0.999, "eps": 1e-08,
                  "weight_decay": 0.0},
    "clip_grad_norm": 0.0,
    "units": [
      {"name": "fc", "dtype": "f32", "trainable": true, "numel": 20, "shard_numel": 32,
       "param_offset": 0, "grad_offset": 128,
       "state": [{"slot": "exp_avg", "offset": 256}, {"slot": "exp_avg_sq", "offset": 512}]}
    ],
    "params": [
      {"name": "fc.w", "shape": [3, 5], "dtype": "f32", "unit": "fc", "trainable": true,
       "init": {"kind": "fan_in_uniform", "scale": 1.0}, "unit_offset": 0},
      {"name": "fc.b", "shape": [5], "dtype": "f32", "unit": "fc", "trainable": true,
       "init": {"kind": "zeros"}, "unit_offset": 15}
    ],
    "inputs": [
      {"index": 0, "shape": [4, 3], "dtype": "f32", "role": "features", "offset": 384,
       "bytes": 48},
      {"index": 1, "shape": [4], "dtype": "i32", "role": "classes", "bound": 5, "offset": 448,
       "bytes": 16}
    ]
  })");
}

/// The classifier on grid [2] (full_shard): each rank holds 16 of fc's 20
/// elements (shard_numel 16) and 2 of the 4 rows; the layout shrinks to match.
inline nlohmann::json shardedClassifierManifest() {
  nlohmann::json m = classifierManifest();
  m["grid"] = {2};
  m["shard_ranks"] = 2;
  m["batch"] = 8;
  m["local_batch"] = 4;
  m["units"][0]["shard_numel"] = 16;
  return m;
}

} // namespace fsdprt::test

#endif // FSDPRT_TEST_SUPPORT_TESTMANIFEST_H
