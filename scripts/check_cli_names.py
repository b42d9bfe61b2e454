#!/usr/bin/env python3
"""Fails (exit 1, one line per problem) when a command of apps/ names a positional argument
in lower case. CLI11 2.4 and later refuse a positional whose name equals a long option's
(`train`'s `config` beside `-c,--config`), so positionals are named in capitals, as the help
shows them (CONFIG, EXPERIMENT). Reads every add_option / add_option_function call whose
name is a string literal, over line breaks. Part of `make lint`.

Usage: scripts/check_cli_names.py [REPOSITORY_ROOT]"""
import pathlib
import re
import sys

# add_option( "name" or add_option_function<T>( "name", with any template argument and layout
CALL = re.compile(r'\badd_option(?:_function\s*<(?:[^()"]|\([^()]*\))*?>)?\s*\(\s*"([^"]*)"', re.S)


def check(root):
    """Returns (problems, the number of option names read)."""
    found, calls = [], 0
    for path in sorted((root / "apps").glob("*.[ch]*")):
        text = path.read_text()
        for match in CALL.finditer(text):
            calls += 1
            for name in (n for n in match.group(1).split(",") if n and not n.startswith("-")):
                if name != name.upper():
                    line = text.count("\n", 0, match.start(1)) + 1
                    found.append(f"{path.relative_to(root)}:{line}: positional '{name}': name it in capitals "
                                 f"({name.upper()}); CLI11 2.4+ refuses a positional named like an option")
    return found, calls


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    if not (root / "apps").is_dir():
        print(f"check_cli_names: {root}/apps: no such folder")
        return 1
    found, calls = check(root)
    for line in found:
        print(line)
    if not found:
        print(f"lint: {calls} options of apps/ checked; every positional is named in capitals")
    return 1 if found or calls == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
