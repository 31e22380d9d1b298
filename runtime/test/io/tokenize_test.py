#!/usr/bin/env python3
"""Tests of scripts/tokenize_text.py: the files it writes are read back with NumPy.

    tokenize_test.py --script PATH/TO/tokenize_text.py [unittest arguments]

The gpt2 tokenizer runs on a stand-in `tiktoken` module put first on the
script's path (the real one may be absent, and its BPE would be downloaded):
what is tested is how the script uses an encoding, not GPT-2's merges.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import numpy as np

SCRIPT = None

TEXT_A = "Hello, wörld!\nSecond line.\n"
TEXT_B = "ünïcode ✓ and more text to split\n"

# A stand-in tiktoken: each character is its code point, plus VOCAB_OFFSET.
FAKE_TIKTOKEN = textwrap.dedent("""\
    import os

    class Encoding:
        n_vocab = int(os.environ["FAKE_VOCAB"])

        def encode_ordinary(self, text):
            return [ord(c) + int(os.environ["FAKE_OFFSET"]) for c in text]

    def get_encoding(name):
        if name != "gpt2":
            raise ValueError(name)
        if os.environ.get("FAKE_FAIL"):
            raise OSError("no network")
        return Encoding()
    """)


def load_script():
    spec = importlib.util.spec_from_file_location("tokenize_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TokenizeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def write(self, name, data):
        path = self.path(name)
        with open(path, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        return path

    def run_script(self, *args, env=None):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                              env=env, timeout=60)

    def tokenize(self, *args, env=None):
        """Runs the script, which must succeed, and returns its JSON line."""
        result = self.run_script(*args, env=env)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")
        lines = result.stdout.splitlines()
        self.assertEqual(len(lines), 1, result.stdout)
        return json.loads(lines[0])

    def expect_error(self, args, message, env=None):
        result = self.run_script(*args, env=env)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn(message, result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        self.assertEqual(result.stdout, "")

    def read_llmc(self, path, dtype):
        """(header ints, tokens) of an llm.c file."""
        data = np.fromfile(path, dtype=np.uint8)
        header = data[:1024].view("<i4")
        return header, data[1024:].view(dtype)

    def fake_tiktoken_env(self, vocab, offset=0, fail=False):
        directory = self.path("fake")
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "tiktoken.py"), "w") as f:
            f.write(FAKE_TIKTOKEN)
        env = dict(os.environ, PYTHONPATH=directory, FAKE_VOCAB=str(vocab),
                   FAKE_OFFSET=str(offset))
        if fail:
            env["FAKE_FAIL"] = "1"
        return env

    def test_bytes_round_trip_and_split(self):
        a, b = self.write("a.txt", TEXT_A), self.write("b.txt", TEXT_B)
        out = self.path("out")
        info = self.tokenize(a, b, "--out-dir", out, "--val-fraction", "0.25")
        text = (TEXT_A + TEXT_B).encode("utf-8")
        cut = int(len(text) * 0.75)
        self.assertEqual(info, {"tokenizer": "bytes", "vocab_size": 256, "dtype": "uint16",
                                "train_tokens": cut, "val_tokens": len(text) - cut,
                                "header": False})
        # Headerless uint16: exactly two bytes a token.
        self.assertEqual(os.path.getsize(os.path.join(out, "train.bin")), 2 * cut)
        train = np.fromfile(os.path.join(out, "train.bin"), dtype="<u2")
        val = np.fromfile(os.path.join(out, "val.bin"), dtype="<u2")
        self.assertEqual(train.astype(np.uint8).tobytes(), text[:cut])
        self.assertEqual(val.astype(np.uint8).tobytes(), text[cut:])

    def test_default_fraction_is_a_tenth(self):
        a = self.write("a.txt", "x" * 1000)
        info = self.tokenize(a, "--out-dir", self.path("out"))
        self.assertEqual((info["train_tokens"], info["val_tokens"]), (900, 100))

    def test_files_are_concatenated_in_order(self):
        a, b = self.write("a.txt", "first "), self.write("b.txt", "second")
        out = self.path("out")
        self.tokenize(b, a, "--out-dir", out, "--val-fraction", "0.5")
        tokens = np.concatenate([np.fromfile(os.path.join(out, name), dtype="<u2")
                                 for name in ("train.bin", "val.bin")])
        self.assertEqual(tokens.astype(np.uint8).tobytes(), b"secondfirst ")

    def test_header(self):
        a = self.write("a.txt", TEXT_A)
        out = self.path("out")
        info = self.tokenize(a, "--out-dir", out, "--header", "--val-fraction", "0.5")
        self.assertTrue(info["header"])
        text = TEXT_A.encode("utf-8")
        cut = int(len(text) * 0.5)
        for name, part in (("train.bin", text[:cut]), ("val.bin", text[cut:])):
            path = os.path.join(out, name)
            self.assertEqual(os.path.getsize(path), 1024 + 2 * len(part))
            header, tokens = self.read_llmc(path, "<u2")
            self.assertEqual(list(header[:3]), [20240520, 1, len(part)])
            self.assertFalse(header[3:].any())
            self.assertEqual(tokens.astype(np.uint8).tobytes(), part)

    def test_gpt2_with_a_vocabulary_of_uint16(self):
        a = self.write("a.txt", TEXT_B)
        out = self.path("out")
        info = self.tokenize(a, "--out-dir", out, "--tokenizer", "gpt2",
                             env=self.fake_tiktoken_env(50257, offset=50000))
        expected = [ord(c) + 50000 for c in TEXT_B]
        cut = int(len(expected) * 0.9)
        self.assertEqual(info, {"tokenizer": "gpt2", "vocab_size": 50257, "dtype": "uint16",
                                "train_tokens": cut, "val_tokens": len(expected) - cut,
                                "header": False})
        train = np.fromfile(os.path.join(out, "train.bin"), dtype="<u2")
        val = np.fromfile(os.path.join(out, "val.bin"), dtype="<u2")
        self.assertEqual(list(train) + list(val), expected)

    def test_vocabularies_beyond_uint16_are_uint32(self):
        a = self.write("a.txt", TEXT_A)
        out = self.path("out")
        # The largest id is ord("ö") + 65536 > 65535.
        info = self.tokenize(a, "--out-dir", out, "--tokenizer", "gpt2", "--header",
                             env=self.fake_tiktoken_env(65537 + 256, offset=65536))
        self.assertEqual(info["dtype"], "uint32")
        expected = [ord(c) + 65536 for c in TEXT_A]
        header, train = self.read_llmc(os.path.join(out, "train.bin"), "<u4")
        _, val = self.read_llmc(os.path.join(out, "val.bin"), "<u4")
        self.assertEqual(list(header[:3]), [20240520, 2, len(train)])
        self.assertEqual(list(train) + list(val), expected)

    def test_dtype_boundary(self):
        script = load_script()
        self.assertEqual(script.token_dtype(256), np.dtype("<u2"))
        self.assertEqual(script.token_dtype(65536), np.dtype("<u2"))
        self.assertEqual(script.token_dtype(65537), np.dtype("<u4"))

    def test_gpt2_without_tiktoken(self):
        a = self.write("a.txt", TEXT_A)
        # A directory first on the path whose tiktoken fails to import.
        directory = self.path("broken")
        os.makedirs(directory)
        with open(os.path.join(directory, "tiktoken.py"), "w") as f:
            f.write("raise ImportError('No module named tiktoken')\n")
        env = dict(os.environ, PYTHONPATH=directory)
        self.expect_error([a, "--out-dir", self.path("out"), "--tokenizer", "gpt2"],
                          "--tokenizer gpt2 needs tiktoken: pip install tiktoken", env=env)

    def test_gpt2_encoding_that_cannot_load(self):
        a = self.write("a.txt", TEXT_A)
        self.expect_error([a, "--out-dir", self.path("out"), "--tokenizer", "gpt2"],
                          "tiktoken cannot load the gpt2 encoding: no network",
                          env=self.fake_tiktoken_env(50257, fail=True))

    def test_errors(self):
        a = self.write("a.txt", TEXT_A)
        out = self.path("out")
        self.expect_error(["--out-dir", out], "tokenize_text.py: error: no input")
        self.expect_error([self.path("missing.txt"), "--out-dir", out],
                          "cannot read '" + self.path("missing.txt") + "': No such file")
        self.expect_error([self.dir.name, "--out-dir", out], "cannot read '" + self.dir.name)
        self.expect_error([self.write("bad.txt", b"ok\xff\xfe"), "--out-dir", out],
                          "is not UTF-8 text (byte 2")
        for bad in ("0", "1", "1.5", "-0.1", "nan"):
            self.expect_error([a, "--out-dir", out, "--val-fraction", bad],
                              "argument --val-fraction: must lie strictly between 0 and 1")
        self.expect_error([a, "--out-dir", out, "--val-fraction", "tenth"],
                          "argument --val-fraction: expected a number, got 'tenth'")
        self.expect_error([a], "the following arguments are required: --out-dir")
        self.expect_error([a, "--out-dir", out, "--tokenizer", "sentencepiece"],
                          "argument --tokenizer: invalid choice")
        self.expect_error([self.write("one.txt", "x"), "--out-dir", out],
                          "1 tokens cannot be split with --val-fraction 0.1: train would have 0 "
                          "and val 1")
        self.expect_error([self.write("empty.txt", ""), "--out-dir", out],
                          "0 tokens cannot be split")
        self.expect_error([a, "--out-dir", a], "cannot write to '" + a + "'")
        self.assertFalse(os.path.exists(out))


def main():
    global SCRIPT
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", required=True)
    args, rest = parser.parse_known_args()
    SCRIPT = os.path.abspath(args.script)
    unittest.main(argv=[sys.argv[0], *rest])


if __name__ == "__main__":
    main()
