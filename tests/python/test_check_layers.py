#!/usr/bin/env python3
"""scripts/check_layers.py on small repositories made here: it accepts includes that follow the
table, and fails, naming the file and line, on an upward include, a room the table lacks, a
cycle, and a known upward include that no longer happens."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECKER = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "check_layers.py"

TABLE = """low:
mid: low
high: mid
known: src/ropelab/mid/b.h -> high
"""


def check(files, table=TABLE):
    with tempfile.TemporaryDirectory() as root:
        base = pathlib.Path(root)
        (base / "scripts").mkdir()
        (base / "scripts/layers.txt").write_text(table)
        for name, text in files.items():
            (base / name).parent.mkdir(parents=True, exist_ok=True)
            (base / name).write_text(text)
        subprocess.run(["git", "init", "-q", root], check=True)
        subprocess.run(["git", "-C", root, "add", "."], check=True)
        done = subprocess.run([sys.executable, str(CHECKER), root], capture_output=True, text=True)
        return done.returncode, done.stdout


GOOD = {
    "src/ropelab/low/a.h": "#pragma once\n",
    "src/ropelab/mid/b.h": '#include "ropelab/low/a.h"\n#include "ropelab/high/c.h"\n',
    "src/ropelab/high/c.h": '#include "ropelab/low/a.h"\n#include "ropelab/mid/b.h"\n',
}


class CheckLayers(unittest.TestCase):
    def test_includes_down_the_table_pass(self):
        code, out = check(GOOD)
        self.assertEqual(code, 0, out)
        self.assertIn("1 known upward includes left", out)

    def test_an_upward_include_fails_naming_file_and_line(self):
        code, out = check({**GOOD, "src/ropelab/low/a.h": '#pragma once\n#include "ropelab/mid/b.h"\n'})
        self.assertEqual(code, 1)
        self.assertIn("src/ropelab/low/a.h:2: room 'low' may not include 'mid'", out)

    def test_a_room_missing_from_the_table_fails(self):
        code, out = check({**GOOD, "src/ropelab/other/d.cpp": "int x;\n"})
        self.assertEqual(code, 1)
        self.assertIn("room 'other' is not in scripts/layers.txt", out)

    def test_a_cycle_in_the_table_fails(self):
        code, out = check(GOOD, TABLE.replace("low:\n", "low: high\n"))
        self.assertEqual(code, 1)
        self.assertIn("cycle", out)

    def test_a_known_include_that_is_gone_fails(self):
        code, out = check({**GOOD, "src/ropelab/mid/b.h": '#include "ropelab/low/a.h"\n'})
        self.assertEqual(code, 1)
        self.assertIn("'known: src/ropelab/mid/b.h -> high' no longer happens", out)


if __name__ == "__main__":
    unittest.main()
