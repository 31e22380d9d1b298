"""Hugging Face checkpoints in and out of FSDP-MLIR: fsdp-import-hf and fsdp-export-hf."""
import sys


class HfError(Exception):
    """A configuration field, tensor or file the tools cannot honour; the message names it."""


def run_tool(prog, run, args):
    """Runs a tool's `run(args)`; an HfError or OSError ends it with one line naming the
    field, tensor or file, and exit status 1."""
    try:
        run(args)
    except HfError as e:
        sys.exit(f"{prog}: error: {e}")
    except OSError as e:
        sys.exit(f"{prog}: error: {e.filename}: {e.strerror}")
