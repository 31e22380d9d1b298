//===- Passes.td - fsdp planning passes --------------------*- tablegen -*-===//

#ifndef FSDP_PLANNING_PASSES_TD
#define FSDP_PLANNING_PASSES_TD

include "mlir/Pass/PassBase.td"

def FSDPReportPass : Pass<"fsdp-report", "::mlir::ModuleOp"> {
  let summary = "Prints each rank's memory and collective traffic of the plan";
  let description = [{
    An analysis, before anything runs: from the sharding layout of the units
    (run `fsdp-form-units` first) and the plan, the bytes each rank holds for
    parameter shards, gradient shards and optimizer state (exact, padding
    included), the gathered parameters at their peak (from the strategy and
    the prefetch depth), and the bytes each rank sends per step in each kind
    of collective (ring algorithms: a rank sends (S - 1) / S of an
    all-gathered or reduce-scattered buffer of S shards), unit by unit.
    With the module's `fsdp.manifest`, the compiled step's manifest after
    `fsdp-assign-buffers` (what `fsdpc --report` attaches: its `arena_bytes`,
    `persistent_bytes` and `transient`), the report adds the activations and
    temporaries, the gathered units and the flat gradients live at the arena's
    peak, and the planned arena itself; with its `recompute` field (a plan
    with `remat`: what `fsdp-remat` recorded), the ops recompute adds to each
    step, the FLOPs of its matrix products and the elements of its other
    ops. With `cost` (what `fsdpc --report` passes: the step time the cost
    model predicts on a device profile, `docs/CostModel.md`, and the memory
    budget when one is set), the predicted step by stream and the budget's
    margin. The IR is unchanged.

    ```sh
    fsdp-opt examples/llama-70b.mlir --fsdp-form-units --fsdp-report -o /dev/null
    fsdp-opt model.mlir --fsdp-set-grid="grid=16" --fsdp-form-units \
        --fsdp-report="format=json" -o /dev/null
    ```
  }];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"table\"",
           "table (for people) or json (for scripts)">,
    Option<"cost", "cost", "std::string", /*default=*/"\"\"",
           "The predicted step and the memory budget, a JSON object (set by fsdpc --report)">,
  ];
}

#endif // FSDP_PLANNING_PASSES_TD
