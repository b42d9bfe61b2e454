"""Whether two ropelab checkpoints hold the same tensors, bit for bit: the model's
parameters and buffers, the training progress, and the optimizer's state per parameter
(Adam's step and moments). Prints the count and the tensors that differ with their largest
absolute difference; exits 1 if the names or any tensor other than those given with
--ignore differ. For checking that a change of code leaves training exactly where it was.
  /usr/bin/python3 bench/compare_checkpoints.py A.pt B.pt [--ignore progress.seconds]"""
import argparse
import sys

import torch


def optimizer_state(archive):
    """The optimizer's state as optimizer.state.G.I.NAME for parameter I of group G. The
    archive keys each parameter's state by its address in the process that saved it, which
    differs between two runs; the groups' parameter lists give those keys in order."""
    if not hasattr(archive, "optimizer"):
        return {}
    groups = dict(archive.optimizer.param_groups.named_children())
    states = dict(archive.optimizer.state.named_children())
    found = {}
    for g in range(int(archive.optimizer.param_groups._c.getattr("param_groups/size"))):
        group = groups[f"param_groups/{g}"]._c
        for i in range(int(group.getattr("params/size"))):
            state = states.get(group.getattr(f"params/{i}"))
            for name in ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
                if state is not None and state._c.hasattr(name):
                    found[f"optimizer.state.{g}.{i}.{name}"] = torch.as_tensor(state._c.getattr(name))
    return found


def tensors(path):
    archive = torch.jit.load(path, map_location="cpu")
    found = {name: t.detach() for name, t in archive.state_dict().items()}  # parameters, buffers, progress
    found.update(optimizer_state(archive))
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
