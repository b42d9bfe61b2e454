#!/usr/bin/python3
"""FIRE's learned threshold L of trained runs (Li et al. 2024; position/encoders.h).

FIRE normalises a distance by psi(max(L, i)), L = |l| * fire_threshold, l a learned scalar
that starts at 1: queries past L are the progressive part. For each run directory, prints
its stack, fire_threshold (the initial L) and the learned L, read from the checkpoint with
Debian's python3-torch (a ropelab checkpoint is a TorchScript archive).

    /usr/bin/python3 scripts/fire_threshold.py RUN [RUN ...] [--checkpoint best|last]
"""
import argparse
import os
import sys

import torch
import yaml


def learned_thresholds(run, checkpoint):
    config_path = os.path.join(run, "config.yaml")
    model_path = os.path.join(run, f"checkpoint_{checkpoint}.pt")
    for path in (config_path, model_path):
        if not os.path.exists(path):
            raise SystemExit(f"{run}: {os.path.basename(path)} not found (a trained run directory?)")
    with open(config_path) as f:
        model = yaml.safe_load(f)["model"]
    parameters = dict(torch.jit.load(model_path, map_location="cpu").named_parameters())
    rows = []
    for stack in ("encoder", "decoder"):
        scale = parameters.get(f"model.{stack}.position.threshold_scale")
        if scale is None:
            continue
        initial = float(model[f"{stack}_position"]["fire_threshold"])
        rows.append((stack, initial, abs(scale.item()) * initial))
    if not rows:
        raise SystemExit(f"{run}: no FIRE encoder in {os.path.basename(model_path)}")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--checkpoint", choices=["best", "last"], default="best")
    args = parser.parse_args()
    print("run\tstack\tinitial_L\tlearned_L")
    for run in args.runs:
        for stack, initial, learned in learned_thresholds(run, args.checkpoint):
            print(f"{run}\t{stack}\t{initial:g}\t{learned:.2f}")


if __name__ == "__main__":
    sys.exit(main())
