#!/usr/bin/env python3
"""scripts/check_cli_names.py on small apps/ folders made here: it accepts options and
positionals named in capitals, and fails, naming the file and line, on a positional in lower
case however the call is laid out."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECKER = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "check_cli_names.py"


def check(source):
    with tempfile.TemporaryDirectory() as root:
        (pathlib.Path(root) / "apps").mkdir()
        (pathlib.Path(root) / "apps/cmd.cpp").write_text(source)
        done = subprocess.run([sys.executable, str(CHECKER), root], capture_output=True, text=True)
        return done.returncode, done.stdout


GOOD = """void add(CLI::App& cmd) {
  cmd.add_option("CONFIG", files, "configs");
  cmd.add_option("-c,--config", more, "more configs");
  cmd.add_option_function<std::string>(
      "--precision", [&p](const std::string& name) { p = parse(name); }, "help");
}
"""


class CheckCliNames(unittest.TestCase):
    def test_capitals_and_options_pass(self):
        code, out = check(GOOD)
        self.assertEqual(code, 0, out)
        self.assertIn("3 options of apps/ checked", out)

    def test_lower_case_positional_fails_with_its_line(self):
        code, out = check(GOOD + 'void more(CLI::App& cmd) { cmd.add_option("config", files); }\n')
        self.assertEqual(code, 1, out)
        self.assertIn("apps/cmd.cpp:7: positional 'config'", out)

    def test_a_name_on_the_next_line_or_behind_a_nested_template_is_read(self):
        for call in ['cmd->add_option(\n      "experiment", path)',
                     'cmd.add_option_function<std::vector<std::string>>(\n    "files", [](const auto&) {})']:
            code, out = check("void f() {\n  " + call + ";\n}\n")
            self.assertEqual(code, 1, call + "\n" + out)
            self.assertIn("apps/cmd.cpp:3: positional", out)

    def test_no_options_at_all_is_an_error(self):
        code, _ = check("int main() { return 0; }\n")
        self.assertEqual(code, 1)


if __name__ == "__main__":
    unittest.main()
