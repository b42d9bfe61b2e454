#!/usr/bin/env python3
"""Golden BLEU, chrF, chrF++, TER, 13a-tokenizer and paired-test values computed by sacreBLEU
itself (Post 2018, https://github.com/mjpost/sacrebleu), for tests/metrics/metrics_test.cpp and
tests/metrics/significance_test.cpp.

The test inputs are defined here, once. The script imports sacreBLEU from a source
checkout, scores every case with sacreBLEU's own classes (BLEU().corpus_score,
CHRF().corpus_score, CHRF(word_order=2).corpus_score for chrF++, TER().corpus_score and
its per-line statistics, sacrebleu.tokenizers.tokenizer_13a.Tokenizer13a), runs its paired
tests (sacrebleu.significance.PairedTest, bootstrap and approximate randomisation) and
writes the inputs and outputs to tests/golden/sacrebleu_golden.json (floats at full double
precision, cases by name), which the C++ tests read at run time. It also prints them.

ropelab draws its resamples with its own generator, so for the paired tests the file also
holds the draws sacreBLEU's NumPy generator makes for the seed used (regenerated here with
the same calls sacreBLEU makes); the C++ test hands those draws to ropelab's tests and
expects sacreBLEU's p-values, means and intervals.

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


# TER: (name, hypotheses, reference sets, case_sensitive). Besides the shared lines, cases
# that exercise Tercom's shift search and limits: block moves, a move farther than the
# 50-word shift distance, blocks longer than the 10-word shift size, sentences with so many
# repeated words that the 1000-candidate budget runs out, and length ratios that widen the
# edit-distance beam.
def _ter_long_cases():
    import random
    rng = random.Random(20261124)
    words = [f'w{i}' for i in range(80)]
    far = words[60:70] + words[:60] + words[70:]          # a block moved 60 words
    block = words[30:55] + words[:30] + words[55:]        # a 25-word block
    few = 'a b c'.split()
    repeated_h = ' '.join(rng.choice(few) for _ in range(70))
    repeated_r = ' '.join(rng.choice(few) for _ in range(66))
    vocab = 'el la los de que y en un una por con no su para es al lo como más pero sus le ya o'.split()
    random_h, random_r = [], []
    for _ in range(30):
        ref = [rng.choice(vocab) for _ in range(rng.randint(1, 40))]
        hyp = list(ref)
        for _ in range(rng.randint(0, 6)):
            op = rng.random()
            if op < 0.3 and len(hyp) > 3:  # move a block
                i = rng.randrange(len(hyp) - 2)
                k = rng.randint(1, min(12, len(hyp) - i))
                blk = hyp[i:i + k]
                del hyp[i:i + k]
                j = rng.randrange(len(hyp) + 1)
                hyp[j:j] = blk
            elif op < 0.55 and hyp:
                hyp[rng.randrange(len(hyp))] = rng.choice(vocab)
            elif op < 0.8:
                hyp.insert(rng.randrange(len(hyp) + 1), rng.choice(vocab))
            elif hyp:
                del hyp[rng.randrange(len(hyp))]
        random_h.append(' '.join(hyp))
        random_r.append(' '.join(ref))
    return [
        ('block_moves', ['d e f a b c', 'the cat sat on the mat', 'x y z'],
         [['a b c d e f', 'on the mat the cat sat', 'z y x']], False),
        ('shift_farther_than_50', [' '.join(far)], [[' '.join(words)]], False),
        ('block_longer_than_10', [' '.join(block)], [[' '.join(words)]], False),
        ('candidate_budget', [repeated_h], [[repeated_r]], False),
        ('long_reference', ['w3 w70'], [[' '.join(words + words[:40])]], False),
        ('long_hypothesis', [' '.join(words + words[:40])], [['w3 w70 w5']], False),
        ('random_edits', random_h, [random_r], False),
        # Lines whose edit count changes when any one of Tercom's shift-ranking keys (longest
        # block, earliest start, earliest target) is reversed: found by searching random
        # sentences against a copy of lib_ter.py with that key flipped.
        ('shift_ranking',
         ['c b a e a e b a b', 'a b a b c b e e', 'd e a d e c',
          'a b a c d e a b', 'd b d c a', 'e a d d d e d e c',
          'a e d b d e a d c', 'c d b e d b d c c', 'd c a c d a a e'],
         [['b c e d d c a b b', 'd e d a e b d d', 'a c d d d',
           'e a a e e b b b d', 'c e b a e e e d d b', 'c d b c e a e a e',
           'b d c e b d d', 'c b e d b c a d d', 'a a d c e a']], False),
    ]


TER_CASES = [
    ('one_ref', HYPS, [REF1], False),
    ('two_refs', HYPS, [REF1, REF2], False),
    ('case_sensitive', ['The CAT sat', 'ÁRBOL grande'], [['the cat sat', 'árbol Grande']], True),
    ('case_insensitive', ['The CAT sat', 'ÁRBOL grande'], [['the cat sat', 'árbol Grande']], False),
    ('empty_hypothesis', ['', 'a b'], [['a b c', 'a b']], False),
    ('empty_references', ['a b', ''], [['', '']], False),
    ('all_empty', [''], [['']], False),
] + _ter_long_cases()


# Paired tests: a baseline and four systems on 60 synthetic lines (two near it, one identical
# to it; one empty baseline line), against one reference set (bootstrap) or two (randomisation), every metric, both tests, fewer resamples than the defaults to keep the file
# small.
def _paired_systems():
    import random
    rng = random.Random(7)
    vocab = ('el la los de que y en un una por con no su para es al lo como más pero sus le ya o '
             'señor Dios pueblo tierra casa día hijo rey Israel árbol ¿ ? , .').split()
    refs = [' '.join(rng.choice(vocab) for _ in range(rng.randint(3, 25))) for _ in range(60)]

    def noisy(rate, r):
        out = []
        for line in refs:
            ws = line.split()
            ws = [w if r.random() > rate else r.choice(vocab) for w in ws if r.random() > rate / 3]
            out.append(' '.join(ws))
        return out
    baseline = noisy(0.3, random.Random(1))
    baseline[5] = ''  # an empty hypothesis

    def mixed(other, share, r):  # the baseline with about `share` of its lines from `other`
        return [o if r.random() < share else b for b, o in zip(baseline, other)]
    second = noisy(0.2, random.Random(8))  # a second reference set, for the cases with two
    return [refs, second], [('baseline', baseline), ('better', noisy(0.2, random.Random(2))),
                  ('close', mixed(noisy(0.3, random.Random(3)), 0.3, random.Random(4))),
                  ('closer', mixed(noisy(0.25, random.Random(5)), 0.15, random.Random(6))),
                  ('same', list(baseline))]


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
    from sacrebleu.metrics import BLEU, CHRF, TER
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

    ter = []
    for name, hyps, refs, case_sensitive in TER_CASES:
        metric = TER(case_sensitive=case_sensitive)
        score = metric.corpus_score(hyps, refs)
        stats = metric._extract_corpus_statistics(hyps, refs)
        ter.append({
            'name': name,
            'hyps': hyps,
            'refs': refs,
            'case_sensitive': case_sensitive,
            'score': score.score,
            'edits': score.num_edits,
            'ref_len': score.ref_length,
            'sentence_stats': [[float(e), float(r)] for e, r in stats],
            'format': score.format(),
            'signature': str(metric.get_signature()),
        })

    paired = [paired_case(test, n, seed, n_confidence, n_refs)
              for test, n, seed, n_confidence, n_refs in (('bs', 200, 12345, -1, 1), ('ar', 500, 777, 100, 2))]

    golden = {
        'generated_by': 'tests/golden/sacrebleu_golden.py',
        'sacrebleu_version': sacrebleu.__version__,
        'tokenize_13a': tokenize,
        'bleu': bleu,
        'chrf': chrf,
        'ter': ter,
        'paired': paired,
    }
    args.output.write_text(json.dumps(golden, ensure_ascii=False, indent=1) + '\n', encoding='utf-8')

    print(f'sacreBLEU {sacrebleu.__version__} -> {args.output}')
    for case in tokenize:
        print(f"tok13a {case['name']:24} {case['input']!r} -> {case['output']!r}")
    for case in bleu:
        print(f"bleu   {case['name']:24} {case['score']!r:22} {case['format']}")
    for case in chrf:
        print(f"chrf   {case['name']:24} {case['score']!r:22} {case['format']}")
    for case in ter:
        print(f"ter    {case['name']:24} {case['score']!r:22} {case['format']}")
    for case in paired:
        for r in case['results']:
            print(f"paired {case['test']} {r['system']:8} {r['metric']:8} score {r['score']:.4f} "
                  f"p {r['p_value']} mean {r['mean']} ci {r['ci']}")


def rows(draws):
    """Each row of draws as one string of space-separated item indices (keeps the file small)."""
    return [' '.join(str(i) for i in row) for row in draws]


def paired_case(test, n_samples, seed, n_confidence, n_refs):
    """sacreBLEU's PairedTest on _paired_systems(), with the draws its generator makes:
    resamples (rows of item indices) and flips (rows of 0/1, one per item: 1 keeps the
    item's baseline statistics in the first pseudo-system)."""
    import numpy as np
    from sacrebleu.metrics import BLEU, CHRF, TER
    from sacrebleu.significance import PairedTest
    ref_sets, systems = _paired_systems()
    refs = ref_sets[:n_refs]
    os.environ['SACREBLEU_SEED'] = str(seed)
    metrics = {'bleu': BLEU(), 'chrf': CHRF(), 'chrf++': CHRF(word_order=2), 'ter': TER()}
    for m in metrics.values():  # signatures need the number of references, known once a corpus is scored
        m.corpus_score(systems[0][1], refs)
    sigs, scores = PairedTest(systems, metrics, refs, test_type=test, n_samples=n_samples,
                              n_ar_confidence=n_confidence)()
    lines = len(refs[0])
    # The draws, made as sacreBLEU makes them: the baseline's confidence resamples from a fresh
    # generator; the test's own draws from another one, in the test's order.
    baseline_resamples = np.random.default_rng(seed).choice(lines, size=(n_samples if test == 'bs' else n_confidence, lines),
                                                            replace=True)
    rng = np.random.default_rng(seed)
    case = {'test': test, 'samples': n_samples, 'seed': seed, 'confidence_samples': n_confidence,
            'refs': refs, 'systems': [{'name': n, 'hyps': h} for n, h in systems],
            'metrics': list(metrics), 'baseline_resamples': rows(baseline_resamples)}
    if test == 'bs':
        case['resamples'] = rows(rng.choice(lines, size=(n_samples, lines), replace=True))
    else:
        case['flips'] = [''.join('1' if f else '0' for f in row)
                         for row in rng.integers(2, size=(n_samples, lines), dtype=bool)]
        case['resamples'] = rows(rng.choice(lines, size=(n_confidence, lines), replace=True))
    case['signatures'] = {name: sigs[key].format() for name, key in zip(metrics, sigs)}
    results = []
    for metric_key, name in zip([k for k in scores if k != 'System'], metrics):
        for system, result in zip(scores['System'], scores[metric_key]):
            results.append({'system': system, 'metric': name, 'score': result.score, 'p_value': result.p_value,
                            'mean': None if result.mean is None else float(result.mean),
                            'ci': None if result.ci is None else float(result.ci)})
    case['results'] = results
    return case


if __name__ == '__main__':
    main()
