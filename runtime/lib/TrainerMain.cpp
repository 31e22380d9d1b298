//===- TrainerMain.cpp - main() of a generated trainer --------------------===//
//
// Lives in its own library (libfsdprt_main.a) so that a trainer is just the
// generated object linked with `-lfsdprt_main -lfsdprt`: the linker pulls this
// member in to resolve `main`, and it pulls in the model's two symbols.
//
//===----------------------------------------------------------------------===//

#include "fsdprt/fsdprt.h"

#include "Trainer.h"

int main(int argc, char **argv) {
  return fsdprt::runTrainer(argc, argv, fsdp_manifest, fsdp_train_step);
}
