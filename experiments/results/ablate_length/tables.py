#!/usr/bin/env python3
"""Prints the tables of README.md from the results.csv files `ropelab ablate` wrote.

    python3 experiments/results/ablate_length/tables.py [DIR]

DIR (default: this file's directory) holds results.csv of ablate_length.yaml and
passkey/results.csv of ablate_length_passkey.yaml. Cells are the mean ± sample sd over
seeds; a ratio column divides the means. Python 3 standard library only.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from result_cells import cell, read, values  # noqa: E402

CONTEXTS = [128, 256, 512, 1024, 2048]


def short(variant):
    return variant.replace("model.position.type=", "").replace("model.position.scaling.type=", "scaling=")


def perplexity_table(runs, suffix, title):
    print(f"\n{title}\n")
    print("| variant | " + " | ".join(str(c) for c in CONTEXTS) + " | 2048 / 128 |")
    print("|---|" + "---|" * (len(CONTEXTS) + 1))
    for variant, rows in runs.items():
        cols = [f"test_ppl@{c}{suffix(c)}" for c in CONTEXTS]
        first, last = values(rows, cols[0]), values(rows, cols[-1])
        ratio = f"{statistics.mean(last) / statistics.mean(first):.1f}x" if first and last else "-"
        print(f"| {short(variant)} | " + " | ".join(cell(rows, c) for c in cols) + f" | {ratio} |")


def main():
    here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    runs = read(os.path.join(here, "results.csv"))
    base = {v: r for v, r in runs.items() if not v.startswith("finetune")}
    perplexity_table(base, lambda c: "", "Non-overlapping windows of C bytes:")
    perplexity_table(base, lambda c: "/64" if c > 64 else "", "Sliding windows of C bytes, stride 64:")
    rotary = runs.get("model.position.type=rotary", [])
    print("\nRotary trained at 128, evaluated with RoPE scaling at factor C / 128 (non-overlapping):\n")
    print("| scaling | " + " | ".join(str(c) for c in CONTEXTS[1:]) + " |")
    print("|---|" + "---|" * (len(CONTEXTS) - 1))
    print("| none | " + " | ".join(cell(rotary, f"test_ppl@{c}") for c in CONTEXTS[1:]) + " |")
    for scaling in ["linear", "ntk", "dynamic_ntk", "yarn"]:
        print(f"| {scaling} | " + " | ".join(cell(rotary, f"test_ppl@{c}+{scaling}") for c in CONTEXTS[1:]) + " |")
    tuned = {v: r for v, r in runs.items() if v.startswith("finetune")}
    if tuned:
        print("\nRotary fine-tuned at 512 for 300 updates (non-overlapping / sliding by 64):\n")
        print("| fine-tune | " + " | ".join(str(c) for c in CONTEXTS) + " |")
        print("|---|" + "---|" * len(CONTEXTS))
        for variant, rows in tuned.items():
            print(f"| {short(variant)} | "
                  + " | ".join(cell(rows, f"test_ppl@{c}") + " / " + cell(rows, f"test_ppl@{c}/64") for c in CONTEXTS)
                  + " |")
    passkey = os.path.join(here, "passkey", "results.csv")
    if os.path.exists(passkey):
        runs = read(passkey)
        lengths = sorted({int(k.split("@")[1]) for rows in runs.values() for k in rows[0] if k.startswith("passkey@")})
        print("\nPasskey accuracy over the five depths, by prompt length in characters:\n")
        print("| variant | test ppl | " + " | ".join(str(n) for n in lengths) + " |")
        print("|---|---|" + "---|" * len(lengths))
        for variant, rows in runs.items():
            print(f"| {short(variant)} | {cell(rows, 'test_ppl@128', 3)} | "
                  + " | ".join(cell(rows, f"passkey@{n}") for n in lengths) + " |")


if __name__ == "__main__":
    main()
