#!/usr/bin/env python3
"""The two float computations of bitsandbytes' 4-bit double quantization that run in PyTorch
rather than in its kernels, as torch computes them, set beside ops/quant4's:

  dynamic_map   create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8): for each
                exponent i of 0..6, torch.linspace(0.1, 1, 2**i + 1) in float32 on the CPU,
                the means of neighbouring points times 10**(i - 6), with both signs, then 0 and
                1, sorted (the map the nested absmax codes index);
  offsets       the mean of a vector of absmax (torch's float32 mean on the device, as
                quantize_4bit takes `_absmax.mean()`), for a few seeded vectors, beside the
                mean computed in double and rounded once (what ops/quant4 uses).

ops/quant4/code_books.cpp computes the map with torch's CPU linspace formula (the first half
counted up from start, the second down from end, in float32, each element one fused
multiply-add as torch's vectorised build computes it); this script repeats that in Python,
rounding to float32 after every operation, and compares it with torch's map entry by
entry: a difference (a torch build whose compiler fused a multiply-add, say) is printed and
the exit status is 1. The offsets are reported as the ulps between torch's mean and the
double one (ops/quant4 uses the latter). Writes the JSON (every float as its IEEE-754 bits) to
--out. Needs torch; the offsets use CUDA when it is there.
    python3 tools/quant4_torch_reference.py --out quant4_torch_reference.json
"""
import argparse
import json
import struct

import torch


def bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def f32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def zerotune_linspace(start: float, end: float, steps: int) -> list:
    start, end = f32(start), f32(end)
    step = f32(f32(end - start) / (steps - 1))
    half = steps // 2
    # One fused multiply-add, as torch's AVX2 build computes it: the exact step * i + start fits a
    # double here (24 + 7 bits), so one rounding to float32 is the fma's.
    return [f32(start + step * i) if i < half else f32(end - step * (steps - i - 1)) for i in range(steps)]


def zerotune_map() -> list:
    values = []
    for i in range(7):
        points = zerotune_linspace(0.1, 1.0, 2**i + 1)
        scale = f32(10.0 ** (i - 6))
        means = [f32(f32(a + b) / 2) for a, b in zip(points[:-1], points[1:])]
        values += [f32(scale * m) for m in means] + [f32(-scale * m) for m in means]
    return sorted(values + [0.0, 1.0])


def dynamic_map() -> list:
    values = []
    for i in range(7):
        points = torch.linspace(0.1, 1, 2**i + 1, dtype=torch.float32)
        means = (points[:-1] + points[1:]) / 2.0
        scale = 10 ** (i - 6)
        values += (scale * means).tolist()
        values += (-scale * means).tolist()
    values += [0.0, 1.0]
    return sorted(values)


def offsets(device: str) -> list:
    cases = []
    for seed, count in [(1, 180), (2, 4096), (3, 1_000_003), (4, 65536)]:
        generator = torch.Generator().manual_seed(seed)
        absmax = torch.rand(count, generator=generator, dtype=torch.float32) * 0.1 + 0.01
        cases.append(
            {
                "seed": seed,
                "absmax_first": [bits(v) for v in absmax[:4].tolist()],
                "count": count,
                "torch_mean": bits(absmax.to(device).mean().item()),
                "double_mean": bits(float(absmax.double().mean().item())),
            }
        )
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="JSON file to write (default: stdout)")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    result = {
        "torch": torch.__version__,
        "device": device,
        "dynamic_map": [bits(v) for v in dynamic_map()],
        "offsets": offsets(device),
    }
    if args.out:
        with open(args.out, "w") as out:
            out.write(json.dumps(result, indent=1) + "\n")
    for case in result["offsets"]:
        print(f"offset of {case['count']} absmax: torch's mean and the double mean are "
              f"{abs(case['torch_mean'] - case['double_mean'])} ulp apart")
    ours = [bits(v) for v in zerotune_map()]
    differing = [i for i, (a, b) in enumerate(zip(ours, result["dynamic_map"])) if a != b]
    for i in differing:
        print(f"dynamic map entry {i}: torch {result['dynamic_map'][i]:#010x}, zerotune {ours[i]:#010x}")
    print(f"dynamic map: {256 - len(differing)} of 256 entries equal (torch {torch.__version__})")
    raise SystemExit(1 if differing else 0)


if __name__ == "__main__":
    main()
