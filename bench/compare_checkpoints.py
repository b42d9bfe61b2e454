"""Whether two ropelab checkpoints hold the same tensors, bit for bit: every parameter,
buffer and saved state (optimizer moments, progress) of each, by name. Prints the count and
the tensors that differ with their largest absolute difference; exits 1 if the names or any
tensor other than those given with --ignore differ. For checking that a change of code
leaves training exactly where it was.
  /usr/bin/python3 bench/compare_checkpoints.py A.pt B.pt [--ignore progress.seconds]"""
import argparse
import sys

import torch


def tensors(path):
    archive = torch.jit.load(path, map_location="cpu")
    found = dict(archive.state_dict())
    found.update({name: t.detach() for name, t in archive.named_parameters()})
    found.update({name: t.detach() for name, t in archive.named_buffers()})
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--ignore", action="append", default=[], help="a tensor name allowed to differ")
    args = parser.parse_args()
    a, b = tensors(args.a), tensors(args.b)
    if a.keys() != b.keys():
        print("different tensors:", sorted(set(a) ^ set(b)))
        return 1
    differ = {}
    for name in sorted(a):
        x, y = a[name], b[name]
        if x.dtype != y.dtype or x.shape != y.shape:
            differ[name] = f"{x.dtype} {tuple(x.shape)} against {y.dtype} {tuple(y.shape)}"
        elif x.contiguous().numpy().tobytes() != y.contiguous().numpy().tobytes():  # bits: -0 != 0, NaN == NaN
            differ[name] = f"max |a - b| = {(x.double() - y.double()).abs().max().item():g}"
    print(f"{len(a)} tensors, {len(differ)} differ" + "".join(f"\n  {n}: {d}" for n, d in differ.items()))
    return 1 if set(differ) - set(args.ignore) else 0


if __name__ == "__main__":
    sys.exit(main())
