#!/usr/bin/env python3
"""Every `build/ropelab ...` command line of README.md and docs/*.md still parses, so that no
documented flag is stale.

- A command line (in a code block, or a code span of the text) runs as `ropelab --parse-only
  ARGS`: CLI11 parses it and checks each flag and value, and nothing runs. Paths need not
  exist; shell redirections, pipes and comments end the command.
- A synopsis line (`[--beam 4]`, `A|B`, `...`) names each long flag its subcommand's --help
  must list.

Usage: test_documented_commands.py ROPELAB [REPOSITORY_ROOT]"""
import pathlib
import re
import shlex
import subprocess
import sys
import unittest

ROOT = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else pathlib.Path(__file__).resolve().parents[2])
ROPELAB = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build" / "ropelab")
SHELL_ENDS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1", "2>>", "&>"}


def documents(root):
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


def command_lines(text):
    """(line number, command text) of every build/ropelab command: in fenced blocks, with
    their continuation lines (a trailing backslash, or an indented synopsis line), and in
    code spans."""
    found, lines, fence = [], text.splitlines(), False
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.lstrip().startswith("```"):
            fence = not fence
            k += 1
            continue
        if fence and "build/ropelab" in line:
            start, command = k + 1, line[line.index("build/ropelab"):]
            while command.rstrip().endswith("\\") and k + 1 < len(lines):
                k += 1
                command = command.rstrip()[:-1] + " " + lines[k].strip()
            while k + 1 < len(lines) and re.match(r"\s+[\[(]", lines[k + 1]) and "build/ropelab" not in lines[k + 1]:
                k += 1
                command += " " + lines[k].strip()
            found.append((start, command))
        elif not fence:
            for span in re.findall(r"`(build/ropelab [^`]*)`", line):  # not the bare path
                found.append((k + 1, span))
        k += 1
    return found


def is_synopsis(command):
    return bool(re.search(r"\[|\.\.\.|\w\|\w|\s\|\s*--", command))


def arguments(command):
    """The arguments of a command line, up to the first shell operator or comment."""
    words = shlex.split(command.split(" #", 1)[0], posix=True)
    out = []
    for word in words[1:]:
        if word in SHELL_ENDS or word.startswith((">", "<", "2>", "#")):
            break
        out.append(word)
    return out


def subcommand_path(command):
    words = command.split()[1:]
    path = []
    for word in words:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", word):
            break
        path.append(word)
    return path[:2]


HELP = {}


def help_flags(path):
    key = tuple(path)
    if key not in HELP:
        done = subprocess.run([ROPELAB, *path, "--help"], capture_output=True, text=True)
        HELP[key] = set(re.findall(r"--[a-z0-9][a-z0-9-]*", done.stdout))
    return HELP[key]


def check(document, number, command):
    """A problem with one command line, or None."""
    where = f"{document.relative_to(ROOT)}:{number}: {command.strip()}"
    if is_synopsis(command):
        path = subcommand_path(command)
        # the subcommand path is as deep as ropelab has subcommands
        while path and not help_flags(path):
            path.pop()
        known = help_flags(path)
        stale = sorted(set(re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*", command)) - known)
        return f"{where}\n  flags that `ropelab {' '.join(path)} --help` does not list: {stale}" if stale else None
    done = subprocess.run([ROPELAB, "--parse-only", *arguments(command)], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        return f"{where}\n  {(done.stdout + done.stderr).strip()}"
    return None


class DocumentedCommands(unittest.TestCase):
    def test_the_parse_only_mode_refuses_a_stale_flag_and_runs_nothing(self):
        done = subprocess.run([ROPELAB, "--parse-only", "eval", "--run", "no/such/run", "--stale-flag", "3"],
                              capture_output=True, text=True)
        self.assertEqual(done.returncode, 2, done.stdout + done.stderr)
        self.assertIn("--stale-flag", done.stderr)
        done = subprocess.run([ROPELAB, "--parse-only", "eval", "--run", "no/such/run", "--beam", "2"],
                              capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("nothing run", done.stdout)

    def test_the_finder_reads_blocks_continuations_spans_and_synopses(self):
        text = ("Run `build/ropelab eval --run R` then\n```sh\nOPENBLAS_NUM_THREADS=1 build/ropelab train a.yaml \\\n"
                "  --set x=1 > log 2>&1\n```\n```\nbuild/ropelab score --ref REF [--hyp HYP]\n"
                "                    [--json]\n```\n")
        self.assertEqual(command_lines(text), [(1, "build/ropelab eval --run R"),
                                               (3, "build/ropelab train a.yaml  --set x=1 > log 2>&1"),
                                               (7, "build/ropelab score --ref REF [--hyp HYP] [--json]")])
        self.assertEqual(arguments("build/ropelab train a.yaml --set x=1 > log 2>&1"), ["train", "a.yaml", "--set", "x=1"])
        self.assertTrue(is_synopsis("build/ropelab score --ref REF [--json]"))
        self.assertFalse(is_synopsis("build/ropelab eval --run R --beam 4"))

    def test_every_documented_command_line_parses(self):
        problems, checked = [], 0
        for document in documents(ROOT):
            for number, command in command_lines(document.read_text()):
                checked += 1
                problem = check(document, number, command)
                if problem:
                    problems.append(problem)
        self.assertGreater(checked, 10)
        self.assertEqual(problems, [], "\n".join(problems))
        print(f"{checked} documented command lines parse", file=sys.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
