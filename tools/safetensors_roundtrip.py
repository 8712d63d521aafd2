#!/usr/bin/env python3
"""Checks zerotune's safetensors reader and writer against the Python `safetensors` package.

Needs python3 with torch, numpy and safetensors (the GPU machine has them) and a build of
tests/tensor/safetensors/safetensors_interop_test. The whole round trip, in one command:

    python3 tools/safetensors_roundtrip.py --dir /tmp/st-interop \
        --test-binary build/tests/safetensors_interop_test

which runs, in order:
  1. ZT_SAFETENSORS_INTEROP_DIR=DIR safetensors_interop_test --gtest_filter=SafetensorsInterop.WriteOurs
     zerotune writes DIR/ours/*.safetensors and a sharded checkpoint DIR/ours/sharded/;
  2. this script checks those load here bit-exactly with the catalogue's values, and that the
     Python package writes the very same bytes for the same tensors;
  3. this script writes DIR/theirs/*.safetensors (torch and numpy writers) and
     DIR/theirs/manifest.json (every tensor's dtype, shape and bytes in hex);
  4. ZT_SAFETENSORS_INTEROP_DIR=DIR safetensors_interop_test --gtest_filter=SafetensorsInterop.ReadTheirs
     zerotune reads them and checks them bit-exactly.
Without --test-binary only steps 2 (if DIR/ours exists) and 3 run. Exits non-zero on any mismatch.

The catalogue (names, shapes, value formula) mirrors tests/tensor/safetensors/safetensors_interop_test.cpp.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from safetensors.numpy import save_file as save_numpy
from safetensors.torch import load_file, save, save_file

DTYPES = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8, "BOOL": torch.bool}
SHAPES = [("scalar", []), ("empty", [0]), ("zero_mid", [3, 0, 2]), ("cube", [3, 5, 7]), ("transposed", [7, 5])]
CODES = {dtype: code for code, dtype in DTYPES.items()}

# Bit patterns that value-based checks miss: -0, +-inf, a NaN with payload, the smallest
# subnormal and the largest finite value of each float type.
SPECIAL_BITS = {
    "F32": ("<I", [0x80000000, 0x7F800000, 0xFF800000, 0x7FC00001, 0x00000001, 0x7F7FFFFF]),
    "F64": ("<Q", [1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000001, 1, 0x7FEFFFFFFFFFFFFF]),
    "F16": ("<H", [0x8000, 0x7C00, 0xFC00, 0x7E01, 0x0001, 0x7BFF]),
    "BF16": ("<H", [0x8000, 0x7F80, 0xFF80, 0x7FC1, 0x0001, 0x7F7F]),
}


def value(code, k, salt):
    u = (k * 37 + salt * 11) % 256
    if code in ("F32", "F64", "F16", "BF16"):
        return (u - 128) / 4.0
    return {"I64": (u - 128) * 8589934597, "I32": (u - 128) * 1000003, "U8": u, "BOOL": u % 3 == 0}[code]


def catalogue():
    """name -> contiguous tensor holding the expected values."""
    tensors = {}
    for code, dtype in DTYPES.items():
        for label, shape in SHAPES:
            salt = len(tensors)
            count = int(np.prod(shape)) if shape else 1
            values = [value(code, k, salt) for k in range(count)]
            tensors[f"{code}.{label}"] = torch.tensor(values, dtype=dtype).reshape(shape)
    return tensors


def specials():
    tensors = {}
    for code, (fmt, bits) in SPECIAL_BITS.items():
        raw = b"".join(struct.pack(fmt, b) for b in bits)
        tensors[f"{code}.specials"] = torch.frombuffer(bytearray(raw), dtype=DTYPES[code]).clone()
    return tensors


def raw_bytes(tensor):
    return tensor.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


class Checker:
    def __init__(self):
        self.failures = []

    def expect(self, condition, message):
        if not condition:
            self.failures.append(message)

    def same_tensors(self, where, got, expected):
        self.expect(sorted(got) == sorted(expected), f"{where}: names {sorted(got)} != {sorted(expected)}")
        for name, want in expected.items():
            have = got.get(name)
            if have is None:
                continue
            ok = have.dtype == want.dtype and list(have.shape) == list(want.shape) and raw_bytes(have) == raw_bytes(want)
            self.expect(ok, f"{where}: tensor {name}: got {have.dtype} {list(have.shape)}, "
                            f"expected {want.dtype} {list(want.shape)} (or bytes differ)")


def check_ours(ours, check):
    expected = catalogue()
    got = load_file(ours / "dtypes.safetensors")
    check.same_tensors("ours/dtypes", got, expected)
    with safe_open(ours / "dtypes.safetensors", framework="pt") as f:
        check.expect(f.metadata() == {"format": "pt"}, f"ours/dtypes: metadata {f.metadata()}")
    python_bytes = save(expected, metadata={"format": "pt"})
    check.expect(python_bytes == (ours / "dtypes.safetensors").read_bytes(),
                 "ours/dtypes: the Python package writes different bytes for the same tensors")

    with safe_open(ours / "metadata.safetensors", framework="pt") as f:
        want = {"format": "pt", "step": "1200", "note": 'caf\u00e9 "quoted"\n'}
        check.expect(f.metadata() == want, f"ours/metadata: {f.metadata()} != {want}")

    index = json.loads((ours / "sharded" / "model.safetensors.index.json").read_text())
    shard_names = sorted(set(index["weight_map"].values()))
    check.expect(len(shard_names) > 1, f"ours/sharded: expected several shards, got {shard_names}")
    sharded = {}
    for shard in shard_names:
        sharded.update(load_file(ours / "sharded" / shard))
    check.same_tensors("ours/sharded", sharded, expected)
    total = sum(t.numel() * t.element_size() for t in expected.values())
    check.expect(index["metadata"]["total_size"] == total, f"ours/sharded: total_size {index['metadata']}")
    print(f"checked {ours}: {len(got)} tensors, {len(shard_names)} shards")


def manifest_entry(path):
    entry = {"tensors": {}}
    with safe_open(path, framework="pt") as f:
        entry["metadata"] = f.metadata() or {}
        for name in f.keys():
            t = f.get_tensor(name)
            entry["tensors"][name] = {"dtype": CODES[t.dtype], "shape": list(t.shape), "hex": raw_bytes(t).hex()}
    return entry


def write_theirs(theirs):
    theirs.mkdir(parents=True, exist_ok=True)
    save_file(catalogue(), theirs / "dtypes.safetensors", metadata={"format": "pt"})
    save_file(specials(), theirs / "specials.safetensors", metadata={"format": "pt", "kind": "special bits"})
    numpy_tensors = {"f32": np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5, "i64": np.array(-7, dtype=np.int64),
                     "u8": np.zeros((2, 0), dtype=np.uint8), "b": np.array([True, False, True])}
    save_numpy(numpy_tensors, theirs / "numpy.safetensors")
    manifest = {p.name: manifest_entry(p) for p in sorted(theirs.glob("*.safetensors"))}
    (theirs / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"wrote {theirs}: {', '.join(manifest)}")


def run_test(binary, directory, name):
    env = dict(os.environ, ZT_SAFETENSORS_INTEROP_DIR=str(directory))
    result = subprocess.run([binary, f"--gtest_filter=SafetensorsInterop.{name}"], env=env)
    if result.returncode != 0:
        sys.exit(f"{binary} {name} failed")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True, help="scratch directory for ours/ and theirs/")
    parser.add_argument("--test-binary", help="path to safetensors_interop_test; omit to run the Python half only")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, numpy {np.__version__}, safetensors "
          f"{__import__('safetensors').__version__}")
    if args.test_binary:
        run_test(args.test_binary, args.dir, "WriteOurs")
    check = Checker()
    if (args.dir / "ours").exists():
        check_ours(args.dir / "ours", check)
    write_theirs(args.dir / "theirs")
    if check.failures:
        sys.exit("MISMATCH:\n  " + "\n  ".join(check.failures))
    if args.test_binary:
        run_test(args.test_binary, args.dir, "ReadTheirs")
    print("safetensors interop: all checks passed")


if __name__ == "__main__":
    main()
