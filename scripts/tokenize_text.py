#!/usr/bin/env python3
"""Turns text into the token files a trainer reads with --data (lib/io/TokenFile.h):

    tokenize_text.py TEXT... --out-dir DIR [--tokenizer bytes|gpt2|hf] [--hf-model DIR]
                [--val-fraction 0.1] [--header]

The text files (UTF-8) are read and concatenated in order, then tokenized:

- bytes: every byte of the UTF-8 text is a token (vocabulary 256, nothing to
  install): a character-level model of any text;
- gpt2: the GPT-2 BPE of tiktoken (vocabulary 50257), as nanoGPT's
  prepare.py scripts use it (pip install tiktoken);
- hf: the tokenizer of a Hugging Face model directory (--hf-model DIR, with
  transformers' AutoTokenizer; no special tokens added), for fine-tuning a model
  fsdp-import-hf imported (its vocabulary: the config's vocab_size).

The token stream is split as nanoGPT splits it: DIR/train.bin gets the first
int(n * (1 - val_fraction)) tokens, DIR/val.bin the rest (held-out data for
evaluation). Both are flat little-endian arrays of token ids, uint16 when the
vocabulary fits (<= 65536 ids) and uint32 otherwise, without a header (the
nanoGPT layout, the trainer's default) or, with --header, after llm.c's
1024-byte header (256 int32: magic 20240520, version 1 for uint16 or 2 for
uint32, the number of tokens), which carries the dtype with the file.

One JSON line on stdout describes the result: tokenizer, vocab_size, dtype,
train_tokens, val_tokens, header. Any error is one line on stderr and exit
status 1.
"""

import argparse
import json
import os
import sys

import numpy as np

LLMC_MAGIC = 20240520
LLMC_HEADER_INTS = 256


class Error(Exception):
    """A problem with the user's input, reported without a traceback."""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        raise Error(message)


def read_text(paths):
    """The files' contents, concatenated, as UTF-8 bytes (checked)."""
    chunks = []
    for path in paths:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise Error(f"cannot read '{path}': {e.strerror}")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Error(f"'{path}' is not UTF-8 text (byte {e.start}: {e.reason})")
        chunks.append(data)
    return b"".join(chunks)


def tokenize_bytes(text, _args):
    return np.frombuffer(text, dtype=np.uint8).astype(np.uint32), 256


def tokenize_hf(text, args):
    if not args.hf_model:
        raise Error("--tokenizer hf needs --hf-model DIR (a Hugging Face model directory)")
    try:
        from transformers import AutoConfig, AutoTokenizer
    except ImportError:
        raise Error("--tokenizer hf needs transformers: pip install transformers")
    try:
        tokenizer = AutoTokenizer.from_pretrained(args.hf_model)
        vocab_size = AutoConfig.from_pretrained(args.hf_model).vocab_size
    except (OSError, ValueError) as e:
        raise Error(f"--hf-model '{args.hf_model}': no tokenizer transformers can load: {e}")
    tokens = tokenizer(text.decode("utf-8"), add_special_tokens=False)["input_ids"]
    return np.asarray(tokens, dtype=np.uint32), vocab_size


def tokenize_gpt2(text, _args):
    try:
        import tiktoken
    except ImportError:
        raise Error("--tokenizer gpt2 needs tiktoken: pip install tiktoken")
    try:
        encoding = tiktoken.get_encoding("gpt2")
    except Exception as e:  # tiktoken downloads the BPE once; any failure is the user's to fix
        raise Error(f"tiktoken cannot load the gpt2 encoding: {e}")
    # encode_ordinary, as nanoGPT: text that spells <|endoftext|> is just text.
    tokens = encoding.encode_ordinary(text.decode("utf-8"))
    return np.asarray(tokens, dtype=np.uint32), encoding.n_vocab


TOKENIZERS = {"bytes": tokenize_bytes, "gpt2": tokenize_gpt2, "hf": tokenize_hf}


def token_dtype(vocab_size):
    """The narrowest dtype the trainer reads that holds every id."""
    return np.dtype("<u2") if vocab_size <= 1 << 16 else np.dtype("<u4")


def split(tokens, val_fraction):
    """(train, val): the first int(n * (1 - val_fraction)) tokens and the rest."""
    cut = int(len(tokens) * (1 - val_fraction))
    if cut == 0 or cut == len(tokens):
        raise Error(f"{len(tokens)} tokens cannot be split with --val-fraction {val_fraction}: "
                    f"train would have {cut} and val {len(tokens) - cut}; both need tokens")
    return tokens[:cut], tokens[cut:]


def write_tokens(path, tokens, dtype, header):
    """Writes `tokens` as `dtype`, after llm.c's header when `header`."""
    with open(path, "wb") as f:
        if header:
            if len(tokens) > np.iinfo(np.int32).max:
                raise Error(f"{len(tokens)} tokens do not fit the llm.c header's int32 count; "
                            "write it without --header")
            fields = np.zeros(LLMC_HEADER_INTS, dtype="<i4")
            fields[0] = LLMC_MAGIC
            fields[1] = 1 if dtype.itemsize == 2 else 2
            fields[2] = len(tokens)
            f.write(fields.tobytes())
        f.write(np.asarray(tokens).astype(dtype).tobytes())


def fraction(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1, got {text}")
    return value


def main(argv):
    parser = Parser(prog="tokenize_text.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("texts", nargs="*", metavar="TEXT", help="UTF-8 text files, in order")
    parser.add_argument("--out-dir", required=True, help="where train.bin and val.bin go")
    parser.add_argument("--tokenizer", choices=sorted(TOKENIZERS), default="bytes")
    parser.add_argument("--hf-model", help="the model directory of --tokenizer hf")
    parser.add_argument("--val-fraction", type=fraction, default=0.1,
                        help="the share of tokens, at the end, that go to val.bin (default 0.1)")
    parser.add_argument("--header", action="store_true",
                        help="write llm.c's 1024-byte header before the tokens")
    args = parser.parse_args(argv)
    if not args.texts:
        raise Error("no input: name at least one text file")

    tokens, vocab_size = TOKENIZERS[args.tokenizer](read_text(args.texts), args)
    train, val = split(tokens, args.val_fraction)
    dtype = token_dtype(vocab_size)
    try:
        os.makedirs(args.out_dir, exist_ok=True)
        write_tokens(os.path.join(args.out_dir, "train.bin"), train, dtype, args.header)
        write_tokens(os.path.join(args.out_dir, "val.bin"), val, dtype, args.header)
    except OSError as e:
        raise Error(f"cannot write to '{args.out_dir}': {e.strerror}")
    print(json.dumps({
        "tokenizer": args.tokenizer,
        "vocab_size": int(vocab_size),
        "dtype": "uint16" if dtype.itemsize == 2 else "uint32",
        "train_tokens": len(train),
        "val_tokens": len(val),
        "header": args.header,
    }))


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except Error as e:
        print(f"tokenize_text.py: error: {e}", file=sys.stderr)
        sys.exit(1)
