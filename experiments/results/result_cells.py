"""Reading an `ropelab ablate` results.csv and printing its cells: shared by the studies' tables.py."""
import csv
import os
import statistics


def read(path):
    """variant -> its rows (one per seed); empty when the file does not exist."""
    runs = {}
    if not os.path.exists(path):
        return runs
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            runs.setdefault(row["variant"], []).append(row)
    return runs


def values(rows, column):
    """The column's finite values over the rows (seeds); empty and non-finite cells skipped."""
    return [float(r[column]) for r in rows if r.get(column, "") not in ("", "nan", "inf", "-inf")]


def seeds_mark(count, seeds):
    """' (n=k)' when a cell holds k values where the grid has `seeds` per variant, else ''."""
    return f" (n={count})" if seeds and 0 < count < seeds else ""


def cell(rows, column, digits=2, seeds=None):
    """mean ± sample sd over the seeds, the value alone for one seed, '-' for none; with
    `seeds` (the grid's seeds per variant), ' (n=k)' on a cell over fewer of them."""
    v = values(rows, column)
    if not v:
        return "-"
    if len(v) == 1:
        return f"{v[0]:.{digits}f}" + seeds_mark(1, seeds)
    return f"{statistics.mean(v):.{digits}f} ± {statistics.stdev(v):.{digits}f}" + seeds_mark(len(v), seeds)
