#!/usr/bin/env python3
"""Whether two ropelab builds score alike: `ropelab score` on every case of the sacreBLEU
golden file (tests/golden/sacrebleu_golden.json: BLEU with each smoothing and case, chrF,
chrF++, TER, and the paired bootstrap and approximate-randomisation tests), as a table and
as JSON, with each build; their outputs must be the same bytes.

    python3 bench/compare_score.py OLD_ROPELAB NEW_ROPELAB [WORK_DIR=/tmp/compare_score]

NEW_ARGS="..." adds flags to the new side's calls only, as a positive control: with
NEW_ARGS="-w 2" the two paired tests' tables (which print one decimal by default) must
differ, and nothing else (the score lines keep sacreBLEU's two decimals; JSON is exact).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / 'tests/golden/sacrebleu_golden.json'


def write_lines(path, lines):
    path.write_text(''.join(line + '\n' for line in lines), encoding='utf-8')
    return str(path)


def commands(work):
    """(name, arguments) of every score call the golden cases make."""
    golden = json.loads(GOLDEN.read_text(encoding='utf-8'))
    out = []
    for metric in ('bleu', 'chrf', 'ter'):
        for case in golden[metric]:
            name = f'{metric}.{case["name"]}'
            refs = [write_lines(work / f'{name}.ref{i}', ref) for i, ref in enumerate(case['refs'])]
            hyp = write_lines(work / f'{name}.hyp', case['hyps'])
            args = [a for ref in refs for a in ('--ref', ref)] + ['--hyp', hyp, '-m', 'bleu', 'chrf', 'chrf++', 'ter']
            if case.get('smooth'):
                args += ['--smooth', case['smooth'].replace('_', '-')]
            if case.get('lowercase'):
                args.append('--lowercase')
            if case.get('case_sensitive'):
                args.append('--ter-case-sensitive')
            out.append((name, args))
    for i, case in enumerate(golden['paired']):
        name = f'paired{i}.{case["test"]}'
        refs = [write_lines(work / f'{name}.ref{j}', ref) for j, ref in enumerate(case['refs'])]
        hyps = [write_lines(work / f'{name}.sys{j}', system['hyps']) for j, system in enumerate(case['systems'])]
        args = [a for ref in refs for a in ('--ref', ref)] + [a for hyp in hyps for a in ('--hyp', hyp)]
        args += ['--paired-' + case['test'], f'--paired-{case["test"]}-n', str(case['samples'])]
        out.append((name, args))
    return out


def main():
    old, new = sys.argv[1], sys.argv[2]
    work = Path(sys.argv[3] if len(sys.argv) > 3 else '/tmp/compare_score')
    work.mkdir(parents=True, exist_ok=True)
    differ = 0
    calls = 0
    for name, args in commands(work):
        for extra in ([], ['--json']):
            outputs = [subprocess.run([binary, 'score', *args, *extra, *more], capture_output=True)
                       for binary, more in ((old, []), (new, os.environ.get('NEW_ARGS', '').split()))]
            calls += 1
            same = all(o.returncode == outputs[0].returncode and o.stdout == outputs[0].stdout for o in outputs)
            if outputs[0].returncode != 0:
                print(f'{name} {" ".join(extra)}: exit {outputs[0].returncode}: {outputs[0].stderr.decode()[:200]}')
                differ += 1  # a case that does not run compares nothing
            print(f'{name} {"json " if extra else ""}{"same" if same else "DIFFERENT"} '
                  f'({len(outputs[0].stdout)} bytes)')
            differ += not same
    print(f'{calls} score calls, {differ} with different output or a failure', flush=True)
    return 1 if differ else 0


if __name__ == '__main__':
    sys.exit(main())
