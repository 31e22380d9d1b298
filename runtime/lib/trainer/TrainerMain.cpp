//===- TrainerMain.cpp - main() of a generated trainer --------------------===//
//
// Lives in its own library (libfsdprt_main.a) so that a trainer is just the
// generated object linked with `-lfsdprt_main -lfsdprt`: the linker pulls this
// member in to resolve `main`, and it pulls in the model's two symbols.
//
//===----------------------------------------------------------------------===//

#include "fsdprt/fsdprt.h"

#include "trainer/Ranks.h"
#include "trainer/Trainer.h"

// An object without an evaluation step (a hand-written model) links too.
#pragma weak fsdp_eval_manifest
#pragma weak fsdp_eval_step
#pragma weak fsdp_kernel_origins
#pragma weak fsdp_eval_kernel_origins

int main(int argc, char **argv) {
  int status = fsdprt::runTrainer(argc, argv, fsdp_manifest, fsdp_train_step,
                                  fsdp_eval_step ? fsdp_eval_manifest : nullptr, fsdp_eval_step,
                                  fsdp_kernel_origins, fsdp_eval_kernel_origins);
  // Errors never get here: they exit (or abort every rank) where they happen.
  fsdprt::finishMpi();
  return status;
}
