#!/usr/bin/env python3
"""scripts/eval_table.py on ablation directories made here: runs found by their grid labels and
seeds (folders named as ropelab names them), each report's perplexity under its scaling, gains
with their interval and p, blanks for evaluations not run, other overrides left out, and one
line for an experiment whose grid it cannot read or whose runs are missing."""
import json
import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "eval_table.py"

EXPERIMENT = """grid:
  model.position:
    - {value: "{type: rotary}", label: rotary}
    - {value: "{type: fire, fire_threshold: 128}", label: fire L0=C/4}
"""


def report(run, tag, fields, sets=()):
    body = {"split": "test", "set": ["data.eval_tokens=1000000", *sets], **fields}
    (run / f"eval.test.{tag}.json").write_text(json.dumps(body))


class EvalTable(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.tmp.name)
        self.exp = self.root / "exp.yaml"
        self.exp.write_text(EXPERIMENT)
        self.rotary = self.root / "out" / "runs" / "model.position=_type__rotary_.seed1"
        self.fire = self.root / "out" / "runs" / "model.position=_type__fire,_fire_threshold__128_.seed1"
        for run in (self.rotary, self.fire):
            run.mkdir(parents=True)

    def tearDown(self):
        self.tmp.cleanup()

    def table(self, *args):
        return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)

    def test_reports_become_cells_by_label_context_and_scaling(self):
        report(self.rotary, "ctx512", {"context": 512, "stride": 512, "perplexity": 3.17186})
        report(self.rotary, "ctx1024", {"context": 1024, "stride": 1024, "perplexity": 4.75977})
        report(self.rotary, "ctx512.yarn4", {"context": 512, "stride": 512, "perplexity": 4.2124},
               ["model.position.scaling.type=yarn", "model.position.scaling.factor=4"])
        report(self.rotary, "ctx1024.w", {"context": 1024, "stride": 1024, "perplexity": 9.0},
               ["model.attention.window=512"])  # another override: not these tables'
        report(self.fire, "ctx512", {"context": 512, "stride": 512, "perplexity": 3.1715})
        report(self.fire, "ctx512.set_last", {"context": 512, "stride": 512, "perplexity": 7.0, "checkpoint": "last"})
        report(self.fire, "ctx512.set_bf16", {"context": 512, "stride": 512, "perplexity": 8.0, "precision": "bf16"})
        report(self.fire, "ctx2048.gain512",  # a gain too small for 5 decimals keeps 2 digits
               {"context": 2048, "window": 512, "gain@512-2048": 1.5977e-07, "ci95@512-2048": [9.08e-09, 3.08e-07],
                "p@512-2048": 0.04})
        report(self.rotary, "ctx1024.gain512",
               {"context": 1024, "window": 512, "perplexity": 4.76, "gain@512-1024": -0.82471,
                "ci95@512-1024": [-0.83343, -0.81332], "p@512-1024": 0.002})
        done = self.table(self.exp, self.root / "out")
        self.assertEqual(done.returncode, 0, done.stderr)
        out = done.stdout
        self.assertIn("| run | seed | 512 | 1024 |\n|---|---|---|---|\n"
                      "| rotary | 1 | 3.1719 | 4.7598 |\n| fire L0=C/4 | 1 | 3.1715 |  |\n", out)
        self.assertIn("yarn 4 (factor)\n\n| run | seed | 512 |\n|---|---|---|\n| rotary | 1 | 4.2124 |\n", out)
        for other in ("9.0000", "7.0000", "8.0000"):  # other overrides, checkpoints, precisions
            self.assertNotIn(other, out)
        self.assertIn("Context gain at 1024 over a window of 512", out)
        self.assertIn("| rotary | 1 | -0.82471 [-0.83343, -0.81332] p=0.002 |\n", out)
        self.assertIn("Context gain over [512, C), by context C (nats/token, 95% interval):\n\n"
                      "| run | seed | 1024 | 2048 |\n|---|---|---|---|\n| rotary | 1 | -0.82471 [-0.83343, -0.81332] |  |\n",
                      out)
        self.assertNotIn("| fire L0=C/4 | 1 |  |\n", out)  # a run with no gain there has no row there
        self.assertIn("| fire L0=C/4 | 1 |  | +1.6e-07 [+9.1e-09, +3.1e-07] |\n", out)
        self.assertIn("| fire L0=C/4 | 1 | +1.6e-07 [+9.1e-09, +3.1e-07] p=0.040 |\n", out)

    def test_an_experiment_it_cannot_read_fails_with_one_line(self):
        (self.root / "two.yaml").write_text("grid:\n  a: [1]\n  b: [2]\n")
        for args, message in (([self.root / "two.yaml", self.root / "out"], "grid: one key expected, found 2"),
                              ([self.exp, self.root / "none"], "holds no run of"),
                              ([self.exp], "usage: python3 scripts/eval_table.py EXPERIMENT OUT")):
            done = self.table(*args)
            self.assertNotEqual(done.returncode, 0, args)
            self.assertIn(message, done.stderr)
            self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
