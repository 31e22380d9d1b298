#!/usr/bin/env python3
"""Checks that the runtime functions a compiled step calls are declared in the LLVM IR
exactly as runtime/include/fsdprt/fsdprt.h declares them in C (after the x86-64 C ABI
mapping of their types), and that the step itself is defined as the header says.

    abi_check.py --header fsdprt.h --llvm step.ll

Prints one line per function the IR declares (`ok NAME` or `MISMATCH ...`), then PASS,
or FAIL and exit status 1. A function the IR calls that the header does not declare is
a failure too: the header is the whole contract.
"""

import argparse
import re
import sys

# C parameter and return types of fsdprt.h, as LLVM IR spells them on x86-64.
C_TO_LLVM = {
    "void": "void",
    "int32_t": "i32",
    "int64_t": "i64",
    "size_t": "i64",
    "intptr_t": "i64",
    "float": "float",
    # A function pointer (offload's update task).
    "fsdprt_host_task": "ptr",
}


def llvm_type(c_type):
    c_type = c_type.replace("const ", "").strip()
    if c_type.endswith("*"):
        return "ptr"
    if c_type not in C_TO_LLVM:
        sys.exit(f"abi_check.py: no LLVM type for C type '{c_type}'")
    return C_TO_LLVM[c_type]


def parameter_types(params):
    """The LLVM types of a C parameter list."""
    types = []
    for param in params.split(","):
        param = param.strip()
        if not param or param == "void":
            continue
        # Drop the parameter's name, keep its type (and pointer stars).
        types.append(llvm_type(re.sub(r"\s*\b\w+$", "", param) or param))
    return types


def header_typedefs(text):
    """{name: (return type, [parameter types])} of the header's function pointer types."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return {name: (llvm_type(result), parameter_types(params))
            for result, name, params in re.findall(
                r"\btypedef\s+(\w+)\s*\(\s*\*\s*(\w+)\s*\)\s*\(([^)]*)\)\s*;", text)}


def header_prototypes(text):
    """{name: (return type, [parameter types])} of every function of the header."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#[^\n]*", " ", text, flags=re.M)
    text = re.sub(r"\btypedef\b[^;]*;", " ", text)
    text = text.replace('extern "C" {', " ").replace("}", " ;")
    prototypes = {}
    for match in re.finditer(r"([A-Za-z_][\w\s\*]*?)\b(\w+)\s*\(([^;{)]*)\)\s*;", text):
        result, name, params = match.groups()
        result = result.replace("extern", "").strip()
        if not result or name in ("if", "while"):
            continue
        prototypes[name] = (llvm_type(result), parameter_types(params))
    return prototypes


def ir_functions(text):
    """{name: (kind, return type, [parameter types])} of the IR's declares and defines."""
    functions = {}
    # A parameter's attributes may hold parentheses (`captures(none)`): the list
    # ends at the first `)` not inside one.
    for match in re.finditer(r"^(declare|define)\s+(?:[\w ]*?\s)?(\S+)\s+@(\w+)\(((?:[^()]|\([^()]*\))*)\)",
                             text, flags=re.M):
        kind, result, name, params = match.groups()
        params = re.sub(r"\([^()]*\)", "", params)
        types = []
        for param in params.split(","):
            param = param.strip()
            if param:
                types.append(param.split()[0])
        functions[name] = (kind, result, types)
    return functions


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--header", required=True)
    parser.add_argument("--llvm", required=True)
    parser.add_argument("--step-type", help="the header's function pointer type the step "
                        "has instead of fsdp_train_step's (fsdp_offloaded_train_step)")
    args = parser.parse_args()
    with open(args.header) as f:
        text = f.read()
    header = header_prototypes(text)
    if args.step_type:
        typedefs = header_typedefs(text)
        if args.step_type not in typedefs:
            sys.exit(f"abi_check.py: fsdprt.h has no function pointer type {args.step_type}")
        header["fsdp_train_step"] = header["fsdp_eval_step"] = typedefs[args.step_type]
    with open(args.llvm) as f:
        functions = ir_functions(f.read())

    failures = 0
    checked = [name for name in functions
               if name.startswith(("fsdprt_", "mgpu", "fsdp_train_step", "fsdp_eval_step"))]
    for name in sorted(checked):
        kind, result, params = functions[name]
        if name not in header:
            print(f"MISMATCH {name}: the IR {kind}s it, fsdprt.h does not declare it")
            failures += 1
            continue
        expected = header[name]
        if (result, params) != expected:
            print(f"MISMATCH {name}: IR {result} ({', '.join(params)}), "
                  f"fsdprt.h {expected[0]} ({', '.join(expected[1])})")
            failures += 1
        else:
            print(f"ok {name}")
    if failures:
        print(f"FAIL: {failures} of {len(checked)} functions differ from fsdprt.h")
        sys.exit(1)
    print(f"PASS: {len(checked)} functions match fsdprt.h")


if __name__ == "__main__":
    main()
