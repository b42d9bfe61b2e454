#!/usr/bin/env python3
"""Golden BLEU, chrF, chrF++ and 13a-tokenizer values computed by sacreBLEU itself (Post 2018,
https://github.com/mjpost/sacrebleu), for tests/eval/metrics_test.cpp.

The test inputs are defined here, once. The script imports sacreBLEU from a source
checkout, scores every case with sacreBLEU's own classes (BLEU().corpus_score,
CHRF().corpus_score, CHRF(word_order=2).corpus_score for chrF++,
sacrebleu.tokenizers.tokenizer_13a.Tokenizer13a) and writes the
inputs and outputs to tests/golden/sacrebleu_golden.json (floats at full double
precision, cases by name), which the C++ test reads at run time. It also prints them.

    git clone --branch v2.6.0 https://github.com/mjpost/sacrebleu /tmp/sacrebleu_src
    python3 tests/golden/sacrebleu_golden.py /tmp/sacrebleu_src
    (or: SACREBLEU_SRC=/tmp/sacrebleu_src python3 tests/golden/sacrebleu_golden.py)

sacreBLEU needs portalocker, tabulate, colorama and lxml at import time (on Debian:
apt-get install python3-portalocker python3-tabulate python3-colorama python3-lxml).
A source checkout lacks sacrebleu/version.py, which setuptools_scm writes when the
package is built; if it is missing, the script puts a stand-in `sacrebleu.version`
module into sys.modules before importing sacrebleu, holding the version given by
--sacrebleu-version (or SACREBLEU_VERSION), else by `git describe --tags` of the
checkout. The version is recorded in the JSON.
"""
import argparse
import json
import os
import subprocess
import sys
import types
from pathlib import Path

OUTPUT = Path(__file__).resolve().with_name('sacrebleu_golden.json')

TOKENIZE = [
    ('comma_and_bang', 'Hello, world!'),
    ('numbers_and_parentheses', 'It costs $1,000.50 (approx.) -- see p. 3-4.'),
    ('entities', 'He said &quot;no&quot; &amp; left &lt;now&gt;.'),
    ('skipped', 'a <skipped> b'),
    ('spanish_punctuation', '¿Dónde está la estación? ¡Allí!'),
    ('unicode_quotes', '“Quoted” text… and ‘single’ ones.'),
    ('dashes', 'e-mail 3-D x-ray 2020-2021'),
    ('final_period', 'end.'),
    ('empty', ''),
]
HYPS = [
    'The cat sat on the mat.',
    '¿Dónde está la estación?',
    'It costs 1,000.50 dollars.',
    'He said &quot;yes&quot;.',
    '',
    'x',
    'completely unrelated words here',
    '“Quoted” text, more.',
]
REF1 = [
    'The cat sat on a mat.',
    '¿Dónde está la estación de tren?',
    'It costs 1,000.50 dollars!',
    'He said "yes".',
    'Nothing here.',
    'x y',
    'the reference says something else',
    '"Quoted" text, more.',
]
REF2 = [
    'A cat was sitting on the mat.',
    '¿Dónde queda la estación?',
    'The price is 1,000.50 dollars.',
    'He answered yes.',
    '',
    'x',
    'entirely different',
    '“Quoted” text, more!',
]
SMOOTHINGS = ('exp', 'none', 'floor', 'add-k')

# (name prefix, hypotheses, reference sets)
BLEU_CORPORA = [
    ('one_ref', HYPS, [REF1]),
    ('two_refs', HYPS, [REF1, REF2]),
    ('lines_1_2', HYPS[:2], [REF1[:2]]),
    ('sparse', ['a b x y', 'c'], [['a b c d', 'c d']]),  # no 3- or 4-gram matches
    ('identical', ['the cat sat on the mat'], [['the cat sat on the mat']]),
    ('no_match_abcd', ['a b c d'], [['e f g h']]),  # no n-gram of any order matches
    ('no_match_aa', ['aa bb cc dd ee ff gg'], [['the cat sat on the mat today']]),
]
# (name, hypotheses, reference sets, lowercase)
CHRF_CASES = [
    ('one_ref', HYPS, [REF1], False),
    ('two_refs', HYPS, [REF1, REF2], False),
    ('two_refs_lowercase', HYPS, [REF1, REF2], True),
    ('lines_1_2', HYPS[:2], [REF1[:2]], False),
    ('no_match', ['abc'], [['xyz']], False),
    ('identical', ['abc'], [['abc']], False),
    # References shorter than 6 characters: sacreBLEU counts no hypothesis n-grams of an
    # order the reference line lacks.
    ('short_references', ['the cat sat', 'longer words', 'abcdefgh'], [['the cat sat', 'lo', 'abc']], False),
    # Both references of the first line score the same sentence-level chrF; sacreBLEU keeps the first,
    # which only an evaluation in sacreBLEU's order of floating-point operations reproduces.
    ('tied_references', ['c cd.', 'the cat sat'], [[', bd,b ,a ,c', 'the cat sat'], ['a,d d', 'the cat sat']], False),
    # chrF prefers the first reference (the same characters), chrF++ the second (the same words)
    ('best_reference_differs', ['the cat sat on the mat', 'x'],
     [['thecat saton themat', 'x'], ['the cat sat on the mat !', 'y']], False),
]
# chrF++ (word order 2) on every case above, and on these, which exercise its word splitting:
# one punctuation mark split off the end, else off the start; one-character words kept whole;
# only ASCII punctuation; a word that is all punctuation.
CHRF_PP_CASES = CHRF_CASES + [
    ('punctuation', ['(hi) there, "you" end.. ¡Hola! ok', '- x , ...', 'a.b c;d e'],
     [['(hi) there , "you" end . ¡Hola ! ok', '- x , ...', 'a.b c;d e'],
      ['hi there, you end.. Hola! ok', '-x, ..', 'a . b c ; d e']], False),
    ('words_unicode_lowercase', ['Él dijo: «Sí». ¿Vienes?', 'ÁRBOL grande'],
     [['él dijo: «sí». ¿vienes?', 'árbol Grande']], True),
    ('one_word_lines', ['x', 'word', ''], [['x', 'word.', 'y']], False),
]


def import_sacrebleu(src, version):
    src = Path(src).resolve()
    if not (src / 'sacrebleu' / '__init__.py').is_file():
        sys.exit(f'{src} is not a sacreBLEU source checkout (no sacrebleu/__init__.py)')
    if not (src / 'sacrebleu' / 'version.py').is_file():
        if not version:
            try:
                version = subprocess.run(['git', '-C', str(src), 'describe', '--tags'], check=True,
                                         capture_output=True, text=True).stdout.strip().lstrip('v')
            except (OSError, subprocess.CalledProcessError):
                sys.exit(f'{src}/sacrebleu/version.py is missing and the checkout has no git tag: '
                         'give --sacrebleu-version')
        stand_in = types.ModuleType('sacrebleu.version')
        stand_in.__version__ = version
        sys.modules['sacrebleu.version'] = stand_in
    sys.path.insert(0, str(src))
    import sacrebleu
    if Path(sacrebleu.__file__).resolve().parent != src / 'sacrebleu':
        sys.exit(f'imported sacrebleu from {sacrebleu.__file__}, not from {src}')
    return sacrebleu


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('sacrebleu_src', nargs='?', default=os.environ.get('SACREBLEU_SRC'),
                        help='sacreBLEU source checkout (default: $SACREBLEU_SRC)')
    parser.add_argument('--sacrebleu-version', default=os.environ.get('SACREBLEU_VERSION'),
                        help='version to record when the checkout has no sacrebleu/version.py')
    parser.add_argument('--output', type=Path, default=OUTPUT)
    args = parser.parse_args()
    if not args.sacrebleu_src:
        parser.error('give the sacreBLEU source checkout as an argument or in SACREBLEU_SRC')
    sacrebleu = import_sacrebleu(args.sacrebleu_src, args.sacrebleu_version)
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    tokenizer = Tokenizer13a()
    tokenize = [{'name': name, 'input': text, 'output': tokenizer(text)} for name, text in TOKENIZE]

    bleu = []
    for prefix, hyps, refs in BLEU_CORPORA:
        variants = [(s, False) for s in SMOOTHINGS]
        if prefix in ('one_ref', 'two_refs'):
            variants.append(('exp', True))
        for smooth, lowercase in variants:
            metric = BLEU(smooth_method=smooth, lowercase=lowercase)
            score = metric.corpus_score(hyps, refs)
            bleu.append({
                'name': f"{prefix}_{smooth.replace('-', '_')}" + ('_lowercase' if lowercase else ''),
                'hyps': hyps,
                'refs': refs,
                'smooth': smooth,
                'lowercase': lowercase,
                'score': score.score,
                'precisions': list(score.precisions),
                'bp': score.bp,
                'ratio': score.ratio,
                'hyp_len': score.sys_len,
                'ref_len': score.ref_len,
                'counts': list(score.counts),
                'totals': list(score.totals),
                'format': score.format(),
                'signature': str(metric.get_signature()),
            })

    chrf = []
    for word_order, cases in ((0, CHRF_CASES), (2, CHRF_PP_CASES)):
        for name, hyps, refs, lowercase in cases:
            metric = CHRF(word_order=word_order, lowercase=lowercase)
            score = metric.corpus_score(hyps, refs)
            chrf.append({
                'name': name + ('_chrf++' if word_order else ''),
                'hyps': hyps,
                'refs': refs,
                'lowercase': lowercase,
                'word_order': word_order,
                'score': score.score,
                'format': score.format(),
                'signature': str(metric.get_signature()),
            })

    golden = {
        'generated_by': 'tests/golden/sacrebleu_golden.py',
        'sacrebleu_version': sacrebleu.__version__,
        'tokenize_13a': tokenize,
        'bleu': bleu,
        'chrf': chrf,
    }
    args.output.write_text(json.dumps(golden, ensure_ascii=False, indent=1) + '\n', encoding='utf-8')

    print(f'sacreBLEU {sacrebleu.__version__} -> {args.output}')
    for case in tokenize:
        print(f"tok13a {case['name']:24} {case['input']!r} -> {case['output']!r}")
    for case in bleu:
        print(f"bleu   {case['name']:24} {case['score']!r:22} {case['format']}")
    for case in chrf:
        print(f"chrf   {case['name']:24} {case['score']!r:22} {case['format']}")


if __name__ == '__main__':
    main()
