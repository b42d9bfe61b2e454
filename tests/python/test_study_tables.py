#!/usr/bin/env python3
"""experiments/results/ablate_length_512/tables.py on small results directories made here: its
cells (mean ± sd over seeds, ratios), passkey counts pooled over seeds with Wilson's interval
(against tests/golden/wilson_golden.json, found by bisection), --collect, which reads each
run's directory from results.csv, keeps a cell the run cannot take and stops on a missing table
or a failed depth of a length that has an accuracy, and --budget of an ablate log and of an
ablation directory; and that every table of the study's README.md is printed whole by
tables.py from the committed results."""
import csv
import importlib.util
import json
import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "experiments" / "results" / "ablate_length_512" / "tables.py"
PASSKEY_HEADER = "length,depth,documents,correct,accuracy,ci95_low,ci95_high,error\n"


def load_tables():
    spec = importlib.util.spec_from_file_location("tables_512", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def write_csv(path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


class Wilson(unittest.TestCase):
    def test_matches_the_score_test_inverted_by_bisection(self):
        golden = json.loads((ROOT / "tests" / "golden" / "wilson_golden.json").read_text())
        wilson = load_tables().wilson
        for case in golden["intervals"]:
            low, high = wilson(case["successes"], case["trials"])
            self.assertAlmostEqual(low, case["low"], places=12, msg=case)
            self.assertAlmostEqual(high, case["high"], places=12, msg=case)


class Collect(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp())
        # the variant reuses a run whose directory is named after another variant
        self.variant = "model.attention.type=softmax,model.position={type: rotary, nope_every: 3}"
        write_csv(self.dir / "results.csv", ["variant", "seed", "run", "passkey@1024"],
                  [[self.variant, 1, "runs/other.seed1", 0.7], [self.variant, 2, "runs/other.seed2", 0.3]])
        for seed, correct in [(1, 7), (2, 3)]:
            run_dir = self.dir / "runs" / f"other.seed{seed}"
            run_dir.mkdir(parents=True)
            (run_dir / "passkey.csv").write_text(
                PASSKEY_HEADER + f"1024,0,10,{correct},0.7,,,\n1024,1,10,{correct - 1},0.6,,,\n")

    def tearDown(self):
        subprocess.run(["rm", "-rf", str(self.dir)], check=True)

    def test_gathers_every_runs_cells_from_the_directory_results_csv_names(self):
        out = self.dir / "cells.csv"
        done = run("--collect", self.dir / "results.csv", out)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(out, newline="") as f:
            rows = [list(r.values()) for r in csv.DictReader(f)]
        self.assertEqual(rows, [[self.variant, "1", "1024", "0", "10", "7", ""],
                                [self.variant, "1", "1024", "1", "10", "6", ""],
                                [self.variant, "2", "1024", "0", "10", "3", ""],
                                [self.variant, "2", "1024", "1", "10", "2", ""]])

    def test_a_run_without_its_passkey_table_stops_it_and_writes_nothing(self):
        (self.dir / "runs" / "other.seed2" / "passkey.csv").unlink()
        out = self.dir / "cells.csv"
        done = run("--collect", self.dir / "results.csv", out)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn(str(self.dir / "runs" / "other.seed2" / "passkey.csv") + ": missing", done.stderr)
        self.assertIn("1 runs have no passkey.csv; nothing written", done.stderr)
        self.assertFalse(out.exists())

    def test_a_length_the_run_cannot_take_is_kept_with_its_error(self):
        # no passkey@2048 for the run in results.csv: a learned table's length past its end
        table = self.dir / "runs" / "other.seed1" / "passkey.csv"
        table.write_text(table.read_text() + '2048,0,0,0,0.0000,,,"position 2048 is beyond the table"\n')
        out = self.dir / "cells.csv"
        done = run("--collect", self.dir / "results.csv", out)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(out, newline="") as f:
            rows = [list(r.values()) for r in csv.DictReader(f)]
        self.assertIn([self.variant, "1", "2048", "0", "0", "0", "position 2048 is beyond the table"], rows)

    def test_a_failed_depth_of_a_length_with_an_accuracy_stops_it(self):
        # passkey@1024 = 0.7 in results.csv is then over the other depths only
        table = self.dir / "runs" / "other.seed1" / "passkey.csv"
        table.write_text(PASSKEY_HEADER + '1024,0,10,7,0.7,,,\n1024,1,0,0,0.0000,,,"out of memory"\n')
        out = self.dir / "cells.csv"
        done = run("--collect", self.dir / "results.csv", out)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn(f"{table}: length 1024 depth 1 failed: out of memory (while", done.stderr)
        self.assertIn("passkey@1024 = 0.7", done.stderr)
        self.assertFalse(out.exists())

    def test_a_missing_results_csv_is_one_line(self):
        done = run("--collect", self.dir / "nothing.csv", self.dir / "cells.csv")
        self.assertNotEqual(done.returncode, 0)
        self.assertEqual(done.stderr, f"{self.dir / 'nothing.csv'}: missing\n")

    def test_results_without_the_run_column_are_refused(self):
        write_csv(self.dir / "results.csv", ["variant", "seed", "passkey@1024"], [[self.variant, 1, 0.7]])
        done = run("--collect", self.dir / "results.csv", self.dir / "cells.csv")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("no rows with a run column", done.stderr)


class Tables(unittest.TestCase):
    def test_cells_ratios_and_the_pooled_passkey_table(self):
        with tempfile.TemporaryDirectory() as d:
            here = pathlib.Path(d)
            columns = ["test_ppl@512", "test_ppl@32768", "test_ppl@32768/4096"]
            write_csv(here / "results.csv", ["variant", "seed", "run"] + columns,
                      [["model.position={type: rotary}", 1, "runs/a.seed1", 2.0, 8.0, 6.0],
                       ["model.position={type: rotary}", 2, "runs/a.seed2", 4.0, 12.0, ""],
                       ["model.position={type: alibi}", 1, "runs/b.seed1", 3.0, 2.7, 3.0]])
            write_csv(here / "passkey" / "results.csv",
                      ["variant", "seed", "run", "test_ppl@512", "passkey@1024", "passkey@2048"],
                      [["model.position={type: rotary}", 1, "runs/a.seed1", 2.0, 0.7, ""],
                       ["model.position={type: rotary}", 2, "runs/a.seed2", 4.0, 0.3, ""]])
            write_csv(here / "passkey" / "cells.csv",
                      ["variant", "seed", "length", "depth", "documents", "correct", "error"],
                      [["model.position={type: rotary}", 1, 1024, 0.5, 10, 7, ""],
                       ["model.position={type: rotary}", 2, 1024, 0.5, 10, 3, ""],
                       ["model.position={type: rotary}", 1, 2048, 0.5, 0, 0, "beyond the table"],
                       ["model.position={type: rotary}", 2, 2048, 0.5, 0, 0, "beyond the table"]])
            done = run(here)
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.splitlines()
        # mean ± sample sd over two seeds; the ratio divides the means: 10 / 3
        self.assertIn("| rotary | 3.00 ± 1.41 | - | - | - | - | - | 10.00 ± 2.83 | 3.33 |", lines)
        # the grid has two seeds a variant (rotary's): alibi's one is marked
        self.assertIn("| alibi | 3.00 (n=1) | - | - | - | - | - | 2.70 (n=1) | 0.90 (n=1) |", lines)
        # one seed of rotary lacks the sliding cell: the other seed's value alone, and the
        # ratio over that seed (6 / 2), not over the means of different seeds (6 / 3)
        self.assertIn("| rotary | 3.00 ± 1.41 | - | - | 6.00 (n=1) | 3.00 (n=1) |", lines)
        self.assertIn("| rotary | 3.000 ± 1.414 | 0.50 ± 0.28 | - |", lines)
        # 10 of 20 over both seeds: Wilson's 95% interval [0.30, 0.70]; a length the model
        # cannot take is n/a
        self.assertIn("| 1024 | 0.50 [0.30, 0.70] (10/20) |", lines)
        self.assertIn("| 2048 | n/a |", lines)

    def test_a_pooled_table_of_other_runs_than_the_mean_table_stops_it(self):
        with tempfile.TemporaryDirectory() as d:
            here = pathlib.Path(d)
            write_csv(here / "results.csv", ["variant", "seed", "run", "test_ppl@512"],
                      [["model.position={type: rotary}", 1, "runs/a.seed1", 2.0]])
            write_csv(here / "passkey" / "results.csv", ["variant", "seed", "run", "test_ppl@512", "passkey@1024"],
                      [["model.position={type: rotary}", 1, "runs/a.seed1", 2.0, 0.7],
                       ["model.position={type: rotary}", 2, "runs/a.seed2", 4.0, 0.3]])
            # collected before seed 2 finished
            write_csv(here / "passkey" / "cells.csv",
                      ["variant", "seed", "length", "depth", "documents", "correct", "error"],
                      [["model.position={type: rotary}", 1, 1024, 0.5, 10, 7, ""]])
            done = run(here)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("cells.csv: holds 1 runs where", done.stderr)
        self.assertIn("has 2 (1 not collected, 0 not in it): run --collect again", done.stderr)

    def test_the_readings_take_an_encoder_not_a_fine_tune_of_the_same_type_name(self):
        with tempfile.TemporaryDirectory() as d:
            here = pathlib.Path(d)
            write_csv(here / "results.csv", ["variant", "seed", "run", "test_ppl@512", "test_ppl@1024"],
                      [["model.position={type: none}", 1, "runs/a.seed1", 4.0, 8.0],
                       ["finetune:model.position.scaling={type: none}", 1, "runs/f.seed1", 3.0, 3.0]])
            done = run(here)
        self.assertEqual(done.returncode, 0, done.stderr)
        # NoPE's own 1024 / 512 = 2.00 beside the published ratios, not the fine-tune's 1.00
        self.assertIn("| nope | 2.00 | - | 12.86 | - | - | 24.50 | - | - | - | - |", done.stdout.splitlines())


class Budget(unittest.TestCase):
    def test_sums_the_finished_runs_of_an_ablate_log(self):
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write("ablate: [1/3] start a seed 1 (log x)\n"
                    "ablate: finished a seed 1 in 1h17m; 2 left, ETA 2h00m\n"
                    "ablate: finished b seed 1 in 42m10s; 1 left, ETA 1h00m\n"
                    "ablate: finished c seed 1 in 50s; 1 left, ETA unknown until a run trained from its start\n"
                    "ablate: FAILED d seed 1 in 5m00s; 0 left, ETA 0s\n")
        done = run("--budget", f.name)
        pathlib.Path(f.name).unlink()
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("3 runs finished, 2.0 hours of run time", done.stdout)  # 4620 + 2530 + 50 s

    def test_sums_an_ablation_directorys_runs_by_kind_and_machine(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        out = pathlib.Path(tmp.name)
        write_csv(out / "results.csv", ["variant", "seed", "run", "train_s"],
                  [["a", 1, "runs/a.seed1", 1800], ["a", 2, "runs/a.seed2", 5400], ["a", 3, "runs/a.seed3", ""],
                   ["finetune:x", 1, "runs/finetune_x.seed1", 600]])
        for name, seconds, machines in [("a.seed1", [60, 120], ["AMD EPYC (family 26, model 2)"]),
                                        ("a.seed2", [300], []), ("a.seed3", [], None),
                                        ("finetune_x.seed1", [240], ["AMD EPYC (family 26, model 2)", "Xeon"])]:
            (out / "runs" / name).mkdir(parents=True)
            for i, s in enumerate(seconds):
                (out / "runs" / name / f"eval.test.ctx{i}.json").write_text(json.dumps({"seconds": s}))
            if machines is not None:
                (out / "runs" / f"{name}.log").write_text(
                    "".join(f"machine: {m}, 2 cores; ATen kernels AVX2\nstep 1\nmachine: {m}, 2 cores; x\n"
                            for m in machines))
        done = run("--budget", out)
        lines = done.stdout.splitlines()
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn('"finetune:x",1,10.0,4.0,"AMD EPYC (family 26, model 2) + Xeon"', lines)
        per_run = list(csv.reader(lines[1:5]))  # CSV: the machine's commas inside its quotes
        self.assertEqual([len(r) for r in per_run], [5, 5, 5, 5])
        self.assertIn("3 grid runs: training 2.0 hours (30-90 minutes a run) (1 without train_s), evaluations "
                      "0.1 hours (0.0-5.0 minutes a run)", lines)
        self.assertIn("1 fine-tunes: training 0.2 hours (10-10 minutes a run), evaluations 0.1 hours "
                      "(4.0-4.0 minutes a run)", lines)
        self.assertIn("1 runs on not named in the log: a seed 2", lines)
        self.assertIn("1 runs on no log: a seed 3", lines)

        def fails_with(line):
            done = run("--budget", out)
            self.assertNotEqual(done.returncode, 0)
            self.assertEqual(done.stderr.splitlines()[-1], line)

        (out / "runs" / "a.seed2" / "eval.test.ctx0.json").write_text("{}")
        fails_with(f"{out}/runs/a.seed2/eval.test.ctx0.json: no readable seconds ('seconds')")
        subprocess.run(["rm", "-rf", str(out / "runs" / "a.seed2")], check=True)
        fails_with(f"{out}/runs/a.seed2: missing (unpack the records first: scripts/run_records.sh unpack)")
        write_csv(out / "results.csv", ["variant", "seed", "run", "train_s"], [["a", 1, "runs/a.seed1", "1h"]])
        fails_with(f"{out}/results.csv: row 2: train_s '1h' is not a number")
        write_csv(out / "results.csv", ["variant", "seed", "run"], [["a", 1, "runs/a.seed1"]])
        fails_with(f"{out}/results.csv: no train_s column")

    def test_a_missing_log_is_one_line(self):
        done = run("--budget", "/nonexistent/ablate.log")
        self.assertNotEqual(done.returncode, 0)
        self.assertEqual(done.stderr, "/nonexistent/ablate.log: missing\n")


class ShippedReadme(unittest.TestCase):
    def test_every_table_of_the_readme_is_printed_whole_from_the_committed_results(self):
        """The README's tables are copied from tables.py's output: each (its header, rule and
        rows, in order) must be consecutive lines of it. A results.csv written again (a run
        retrained, a grid completed) without the README following fails here."""
        done = run()
        self.assertEqual(done.returncode, 0, done.stderr)
        printed = "\n" + done.stdout + "\n"
        tables, table = [], []
        for line in (SCRIPT.parent / "README.md").read_text().splitlines() + [""]:
            if line.startswith("|"):
                table.append(line)
            elif table:
                tables.append(table)
                table = []
        self.assertGreater(len(tables), 15)  # the byte, passkey and subword tables
        self.assertEqual([t[0] for t in tables if "\n" + "\n".join(t) + "\n" not in printed], [])


if __name__ == "__main__":
    unittest.main()
