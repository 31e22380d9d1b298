"""Hugging Face checkpoints in and out of FSDP-MLIR: fsdp-import-hf and fsdp-export-hf."""


class HfError(Exception):
    """A configuration field, tensor or file the tools cannot honour; the message names it."""
