#!/usr/bin/env python3
"""Checks a CUDA step's kernel table (fsdpc --kernels): no generated kernel that moves
MIN_BYTES or more runs fewer blocks than the profile's multiprocessors (it would leave the
others idle while it streams its bytes), and no thread of any kernel runs more than
MAX_SERIAL loop iterations in order (a chain the GPU cannot spread over its threads).

    kernel_table_check.py TABLE [--min-bytes 1048576] [--max-serial 256]

Prints one line per kernel that breaks a rule, then PASS or FAIL with the count of
kernels; exits with 1 when one breaks a rule.
"""

import argparse
import json
import sys


def problems(kernel, multiprocessors, min_bytes, max_serial):
    blocks = kernel["grid"][0] * kernel["grid"][1] * kernel["grid"][2]
    moved = kernel["bytes_read"] + kernel["bytes_written"]
    found = []
    if moved >= min_bytes and blocks < multiprocessors:
        found.append(f"{blocks} blocks for {moved:,.0f} bytes, fewer than the "
                     f"{multiprocessors} multiprocessors")
    if kernel["serial_trips"] > max_serial:
        found.append(f"{kernel['serial_trips']:,} iterations in order a thread, over "
                     f"{max_serial}")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("table")
    parser.add_argument("--min-bytes", type=float, default=2.0 ** 20)
    parser.add_argument("--max-serial", type=int, default=256)
    args = parser.parse_args()
    with open(args.table) as f:
        table = json.load(f)
    multiprocessors = table["multiprocessors"]
    if multiprocessors < 1:
        sys.exit(f"kernel_table_check.py: the table's profile {table['profile']} is not a GPU's")
    failed = 0
    for kernel in table["kernels"]:
        found = problems(kernel, multiprocessors, args.min_bytes, args.max_serial)
        if found:
            failed += 1
            origin = ", ".join(kernel["origin"][:2])
            print(f"{kernel['name']} ({kernel['kind']}, {origin}): {'; '.join(found)}")
    count = len(table["kernels"])
    print(f"{'FAIL' if failed else 'PASS'}: {failed} of {count} kernels break a rule")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
