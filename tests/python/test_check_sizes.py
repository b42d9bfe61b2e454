#!/usr/bin/env python3
"""scripts/check_sizes.py on small repositories made here: it accepts files and functions within
their limits, and fails, naming the file and line, on a file, function, test body or app
callback over its limit, on a known exception that grew and on one that no longer needs its
line. Its function finder is checked on the C++ shapes that could mislead it."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPTS = pathlib.Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))
import check_sizes  # noqa: E402


def body(lines):
    return "".join(f"  x += {k};\n" for k in range(lines))


def function(name, lines):
    """A function of exactly `lines` lines, signature and closing brace included."""
    return f"int {name}(int x) {{\n{body(lines - 3)}  return x;\n}}\n"


def check(files, known=""):
    with tempfile.TemporaryDirectory() as root:
        base = pathlib.Path(root)
        (base / "scripts").mkdir()
        (base / "scripts/sizes_known.txt").write_text(known)
        for name, text in files.items():
            (base / name).parent.mkdir(parents=True, exist_ok=True)
            (base / name).write_text(text)
        subprocess.run(["git", "init", "-q", root], check=True)
        subprocess.run(["git", "-C", root, "add", "."], check=True)
        done = subprocess.run([sys.executable, str(SCRIPTS / "check_sizes.py"), root], capture_output=True, text=True)
        return done.returncode, done.stdout


class CheckSizes(unittest.TestCase):
    def test_files_and_functions_at_their_limits_pass(self):
        code, out = check({"src/ropelab/a/a.cpp": function("f", 80) + "\n" * 369,
                           "apps/b.cpp": "\n" * 120, "tests/a/c_test.cpp": "\n" * 600,
                           "src/ropelab/ops/big.cpp": function("kernel", 300) + "\n" * 500})
        self.assertEqual(code, 0, out)
        self.assertIn("0 known exceptions left", out)

    def test_a_file_over_its_limit_fails(self):
        for name, limit in (("src/ropelab/a/a.cpp", 450), ("apps/b.cpp", 120), ("tests/a/c_test.cpp", 600)):
            code, out = check({name: "\n" * (limit + 1)})
            self.assertEqual(code, 1, name)
            self.assertIn(f"{name}:1: the file is {limit + 1} lines, over the limit of {limit}", out)

    def test_a_long_function_fails_naming_it_and_its_line(self):
        code, out = check({"src/ropelab/a/a.cpp": "\n\n" + function("ropelab::validate", 81)})
        self.assertEqual(code, 1)
        self.assertIn("src/ropelab/a/a.cpp:3: ropelab::validate is 81 lines, over the limit of 80", out)

    def test_a_long_test_body_fails(self):
        test = "TEST(Suite, Name) {\n" + body(80) + "}\n"
        code, out = check({"tests/a/c_test.cpp": test})
        self.assertEqual(code, 1)
        self.assertIn("tests/a/c_test.cpp:1: Suite.Name is 82 lines", out)

    def test_a_long_app_callback_fails_and_a_short_one_passes(self):
        app = "void add(App& cli) {\n  cli.callback([&] {\n" + body(N) + "  });\n}\n"
        for lines, expected in ((28, 0), (29, 1)):
            code, out = check({"apps/a.cpp": app.replace(body(N), body(lines))})
            self.assertEqual(code, expected, out)
        self.assertIn("apps/a.cpp:2: 2 callback is 31 lines, over the limit of 30", out)

    def test_a_known_exception_may_shrink_but_not_grow_and_leaves_when_fixed(self):
        files = {"src/ropelab/a/a.cpp": function("f", 90)}
        self.assertEqual(check(files, "src/ropelab/a/a.cpp:f 95\n")[0], 0)
        code, out = check(files, "src/ropelab/a/a.cpp:f 85\n")
        self.assertEqual(code, 1)
        self.assertIn("f grew to 90 lines; scripts/sizes_known.txt allows it 85", out)
        code, out = check({"src/ropelab/a/a.cpp": function("f", 60)}, "src/ropelab/a/a.cpp:f 95\n")
        self.assertEqual(code, 1)
        self.assertIn("'src/ropelab/a/a.cpp:f' keeps to its limit now; remove its line", out)

    def test_the_finder_reads_the_shapes_that_could_mislead_it(self):
        text = """namespace n {
struct S : Base {
  int a{1};
  S(int x) : Base(x), b_{x}, c_(x) {
    if (x) {
      run([&](int y) mutable -> int {
        return y;
      });
    }
  }
  int b_, c_;
};
const std::map<int, int> table = {{1, 2}, {3, 4}};
auto f() -> int { return '{' + U'{' + 1'000; }  // {
const char* s = R"({{)";
enum class E { a, b };
TEST_F(Fixture, Case) {
  /* { */ int v[2] = {0, 1};
}
}  // namespace n
"""
        found = sorted(check_sizes.functions(text))
        self.assertEqual(found, [(4, 10, False), (6, 8, True), (14, 14, False), (17, 19, False)])


N = 5

if __name__ == "__main__":
    unittest.main()
