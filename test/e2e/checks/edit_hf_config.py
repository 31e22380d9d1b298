#!/usr/bin/env python3
"""A Hugging Face fixture with its config.json edited, for the importer's error tests.

    edit_hf_config.py SRC DST FIELD=JSON ... [-FIELD ...]

Copies the folder SRC to DST (files linked, config.json rewritten) with each FIELD set to
the JSON value given, and each -FIELD removed.
"""
import json
import os
import shutil
import sys


def main():
    src, dst, edits = sys.argv[1], sys.argv[2], sys.argv[3:]
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    for name in os.listdir(src):
        if name != "config.json":
            os.symlink(os.path.abspath(os.path.join(src, name)), os.path.join(dst, name))
    with open(os.path.join(src, "config.json")) as f:
        config = json.load(f)
    for edit in edits:
        if edit.startswith("-"):
            config.pop(edit[1:])
            continue
        field, _, value = edit.partition("=")
        config[field] = json.loads(value)
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


if __name__ == "__main__":
    main()
