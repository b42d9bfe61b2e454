#!/usr/bin/env python3
"""Fails (exit 1, one line per problem) when a file of src/ropelab/ROOM includes a header of
a room that ROOM may not use, by the table in scripts/layers.txt. Part of `make lint`.

Usage: scripts/check_layers.py [REPOSITORY_ROOT]"""
import pathlib
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"ropelab/([A-Za-z0-9_]+)/')


def read_table(path):
    uses, known, problems = {}, set(), []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, rest = line.partition(":")
        if not sep:
            problems.append(f"{path}:{number}: expected 'ROOM: ROOMS' or 'known: FILE -> ROOM', got '{raw}'")
        elif key.strip() == "known":
            source, arrow, room = rest.partition("->")
            if not arrow:
                problems.append(f"{path}:{number}: expected 'known: FILE -> ROOM', got '{raw}'")
            known.add((source.strip(), room.strip()))
        else:
            room = key.strip()
            if room in uses:
                problems.append(f"{path}:{number}: room '{room}' listed twice")
            uses[room] = rest.split()
    for room, below in uses.items():
        for other in below:
            if other not in uses:
                problems.append(f"{path}: room '{room}' uses '{other}', which the table does not list")
    return uses, known, problems


def closure(uses, problems):
    """Every room each room may use, transitively; a cycle is a problem."""
    reach, state = {}, {}

    def visit(room, stack):
        if state.get(room) == "done":
            return reach[room]
        if state.get(room) == "open":
            problems.append("scripts/layers.txt: cycle " + " -> ".join(stack + [room]))
            return set()
        state[room] = "open"
        out = set()
        for other in uses.get(room, []):
            out |= {other} | visit(other, stack + [room])
        state[room], reach[room] = "done", out
        return out

    for room in uses:
        visit(room, [])
    return reach


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    uses, known, problems = read_table(root / "scripts/layers.txt")
    reach = closure(uses, problems)
    files = subprocess.run(["git", "-C", str(root), "ls-files", "src/ropelab"], check=True, capture_output=True,
                           text=True).stdout.split()
    seen_known = set()
    for name in files:
        parts = pathlib.PurePosixPath(name).parts
        if len(parts) < 4 or not name.endswith((".h", ".cpp", ".inc", ".cu")):
            continue  # files directly under src/ropelab are not in a room
        room = parts[2]
        if room not in uses:
            problems.append(f"{name}: room '{room}' is not in scripts/layers.txt")
            continue
        for number, line in enumerate((root / name).read_text().splitlines(), 1):
            match = INCLUDE.match(line)
            if not match or match.group(1) == room:
                continue
            other = match.group(1)
            if other in reach[room]:
                continue
            if (name, other) in known:
                seen_known.add((name, other))
                continue
            problems.append(f"{name}:{number}: room '{room}' may not include '{other}' "
                            f"(it may use: {', '.join(sorted(reach[room])) or 'nothing'}; scripts/layers.txt)")
    for name, other in sorted(known - seen_known):
        problems.append(f"scripts/layers.txt: 'known: {name} -> {other}' no longer happens: remove the line")
    for problem in problems:
        print("lint:", problem)
    if problems:
        return 1
    print(f"lint: {len(files)} files of src/ropelab keep to the layers of scripts/layers.txt "
          f"({len(known)} known upward includes left)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
