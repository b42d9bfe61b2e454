#!/usr/bin/env python3
"""Fails (exit 1, one line per problem) on a file or a function longer than the house allows.
Part of `make lint`.

  files       src/ropelab outside ops/: 450 lines; apps/: 120; tests/: 600 (every physical line)
  functions   src/ropelab outside ops/, apps/ and tests/: 80 lines, from the first line of the
              declaration to the closing brace (a test body is a function)
  callbacks   a lambda in apps/: 30 lines (an app hands the work to the library)

scripts/sizes_known.txt lists what is over its limit today, each at its size: such an entry
may shrink but not grow, and an entry that keeps to its limit must be removed from the list.

Usage: scripts/check_sizes.py [REPOSITORY_ROOT]
       scripts/check_sizes.py --functions FILE...   (print every function's length)"""
import pathlib
import re
import subprocess
import sys

FILE_LIMITS = (("src/ropelab/ops/", None), ("src/ropelab/", 450), ("apps/", 120), ("tests/", 600))
FUNCTION_LIMIT = 80
CALLBACK_LIMIT = 30
SOURCES = (".h", ".cpp", ".inc", ".cu")


def blank_non_code(text):
    """The text with comments, string and character literals and preprocessor lines replaced
    by spaces; newlines stay, so offsets and line numbers are the file's."""
    out, i, n = list(text), 0, len(text)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            j = i
            while j < n and (text[j] != "\n" or text[j - 1] == "\\"):
                j += 1
            blank(i, j)
            i = j
            continue
        if c == "\n":
            line_start = True
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            paren = text.find("(", i + 2)
            delimiter = text[i + 2:paren]
            j = text.find(")" + delimiter + '"', paren)
            j = n if j < 0 else j + len(delimiter) + 2
            blank(i + 1, j)
            i = j
        elif c in "\"'":
            token = i
            while token > 0 and (text[token - 1].isalnum() or text[token - 1] == "_"):
                token -= 1
            if c == "'" and token < i and text[token].isdigit():  # a digit separator: 1'000 (not U'0')
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


KEYWORD_SCOPE = re.compile(r"\b(namespace|extern)\b")
TYPE_SCOPE = re.compile(r"\b(class|struct|union)\b")
ENUM = re.compile(r"\benum\b")
FUNCTION_TAIL = re.compile(r"(\)|\b(const|override|final|noexcept|mutable|try))\s*$")
CONTROL = re.compile(r"^\s*(if|for|while|switch|catch|do|else)\b")


def matching_open(head, close_index):
    """The index of the '(' or '[' that the bracket at close_index closes, searching back."""
    pair = {")": "(", "]": "["}[head[close_index]]
    depth = 0
    for k in range(close_index, -1, -1):
        if head[k] == head[close_index]:
            depth += 1
        elif head[k] == pair:
            depth -= 1
            if depth == 0:
                return k
    return -1


def is_lambda_head(head):
    """Whether a '{' after head opens a lambda's body: [captures](parameters) specifiers {."""
    def without_specifiers(text):
        return re.sub(r"(\s*\b(mutable|noexcept|constexpr))+\s*$", "", text.rstrip())

    s = without_specifiers(head)
    arrow = s.rfind("->")
    if arrow >= 0 and ")" not in s[arrow:] and "]" not in s[arrow:]:
        before_arrow = without_specifiers(s[:arrow])
        if before_arrow.endswith((")", "]")):
            s = before_arrow
    if s.endswith(")"):
        k = matching_open(s, len(s) - 1)
        if k < 0:
            return False
        s = s[:k].rstrip()
    if not s.endswith("]"):
        return False
    k = matching_open(s, len(s) - 1)
    before = s[:k].rstrip()
    return k >= 0 and (not before or before[-1] in "(,={;:?" or before.endswith("return"))


def functions(text):
    """(name line, first line, last line, is_lambda) of every function and lambda body: the
    outermost functions, and lambdas at any depth. Lines count from 1."""
    code = blank_non_code(text)
    line_of = []
    line = 1
    for ch in code:
        line_of.append(line)
        if ch == "\n":
            line += 1
    stack = []  # (kind, start offset of its head)
    head_start = 0
    found = []
    in_function = 0
    for i, ch in enumerate(code):
        if ch == ";":
            head_start = i + 1
        elif ch == "{":
            head = code[head_start:i]
            first = head_start + len(head) - len(head.lstrip())
            if in_function:
                kind = "lambda" if is_lambda_head(head) else "block"
            elif KEYWORD_SCOPE.search(head) and "(" not in head:
                kind = "scope"
            elif TYPE_SCOPE.search(head) and "(" not in head and "=" not in head:
                kind = "scope"
            elif ENUM.search(head) or CONTROL.match(head):
                kind = "block"
            elif is_lambda_head(head):
                kind = "lambda"
            elif FUNCTION_TAIL.search(head) or re.search(r"\)\s*->", head):
                kind = "function"
            else:
                kind = "init"
            stack.append((kind, first))
            if kind in ("function", "lambda"):
                in_function += 1
            if kind != "init":
                head_start = i + 1
        elif ch == "}" and stack:
            kind, first = stack.pop()
            if kind in ("function", "lambda"):
                in_function -= 1
                if kind == "lambda" or in_function == 0:
                    found.append((line_of[first], line_of[i], kind == "lambda"))
            if kind != "init":
                head_start = i + 1
    return found


def file_limit(name):
    for prefix, limit in FILE_LIMITS:
        if name.startswith(prefix):
            return limit
    return None


def measure(root, name):
    """{key: (lines, limit, line number)} of what is over its limit in one file."""
    text = (root / name).read_text()
    over = {}
    limit = file_limit(name)
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if limit is not None and lines > limit:
        over[name] = (lines, limit, 1)
    if name.startswith("src/ropelab/ops/") or not name.startswith(("src/ropelab/", "apps/", "tests/")):
        return over
    source_lines = text.splitlines()
    for first, last, is_lambda in functions(text):
        length = last - first + 1
        if is_lambda:
            if name.startswith("apps/") and length > CALLBACK_LIMIT:
                over[f"{name}:{first} callback"] = (length, CALLBACK_LIMIT, first)
            continue
        if length > FUNCTION_LIMIT:
            signature = " ".join(source_lines[first - 1:first + 2])
            match = re.search(r"([A-Za-z_][\w:~]*)\s*\(([^()]*)", signature)
            what = match.group(1) if match else "?"
            if what in ("TEST", "TEST_F", "TEST_P", "TYPED_TEST") and match:
                what = match.group(2).replace(" ", "").replace(",", ".")
            over[f"{name}:{what}"] = (length, FUNCTION_LIMIT, first)
    return over


def read_known(path):
    known, problems = {}, []
    if not path.exists():
        return known, problems
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, _, size = line.rpartition(" ")
        if not key or not size.isdigit():
            problems.append(f"{path.name}:{number}: expected 'FILE[:FUNCTION] LINES', got '{raw}'")
            continue
        known[key.strip()] = int(size)
    return known, problems


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--functions":
        for name in sys.argv[2:]:
            for first, last, is_lambda in functions(pathlib.Path(name).read_text()):
                print(f"{name}:{first}: {last - first + 1} lines{' (lambda)' if is_lambda else ''}")
        return 0
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    known, problems = read_known(root / "scripts/sizes_known.txt")
    files = subprocess.run(["git", "-C", str(root), "ls-files", "src/ropelab", "apps", "tests"], check=True,
                           capture_output=True, text=True).stdout.split()
    measured, seen = 0, set()
    for name in files:
        if not name.endswith(SOURCES) or not (root / name).exists():
            continue
        measured += 1
        for key, (lines, limit, number) in measure(root, name).items():
            # a callback is known by file (its line moves as the file changes)
            known_key = key.rsplit(":", 1)[0] + " callback" if key.endswith(" callback") else key
            seen.add(known_key)
            allowed = known.get(known_key)
            if allowed is None:
                problems.append(f"{name}:{number}: {key.split(':', 1)[-1] if ':' in key else 'the file'} is "
                                f"{lines} lines, over the limit of {limit}")
            elif lines > allowed:
                problems.append(f"{name}:{number}: {key.split(':', 1)[-1] if ':' in key else 'the file'} grew to "
                                f"{lines} lines; scripts/sizes_known.txt allows it {allowed} until it is split "
                                f"(limit {limit})")
    for key in sorted(set(known) - seen):
        problems.append(f"scripts/sizes_known.txt: '{key}' keeps to its limit now; remove its line")
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"lint: {measured} files of src/ropelab, apps and tests keep to their sizes and function lengths "
          f"({len(known)} known exceptions left)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
