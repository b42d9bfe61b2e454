#!/usr/bin/env python3
"""Independent reference for ropelab's BLEU and chrF: sacreBLEU 2.x's published algorithm
(13a tokenizer regexes, exp/floor/add-k/none smoothing, closest reference length, chrF with
character order 6, beta 2, averaged precision/recall) written from its description with
Python's `re`, so the C++ port is checked against a different regex engine and Unicode
handling. Run it to regenerate the expected values in tests/eval/metrics_test.cpp:
    python3 tests/golden/sacrebleu_ref.py
"""
import math
import re
from collections import Counter

RULES = [
    (re.compile(r'([\{-\~\[-\` -\&\(-\+\:-\@\/])'), r' \1 '),
    (re.compile(r'([^0-9])([\.,])'), r'\1 \2 '),
    (re.compile(r'([\.,])([^0-9])'), r' \1 \2'),
    (re.compile(r'([0-9])(-)'), r'\1 \2 '),
]


def tok13a(line):
    line = line.replace('<skipped>', '').replace('-\n', '').replace('\n', ' ')
    if '&' in line:
        line = line.replace('&quot;', '"').replace('&amp;', '&').replace('&lt;', '<').replace('&gt;', '>')
    line = f' {line} '
    for pattern, repl in RULES:
        line = pattern.sub(repl, line)
    return ' '.join(line.split())


def ngrams(words):
    c = Counter()
    for n in range(1, 5):
        for i in range(len(words) - n + 1):
            c[tuple(words[i:i + n])] += 1
    return c


def bleu(hyps, refsets, smooth='exp', smooth_value=None, lowercase=False):
    if smooth_value is None:
        smooth_value = 0.1 if smooth == 'floor' else 1
    prep = lambda s: tok13a(s.rstrip().lower() if lowercase else s.rstrip()).split()
    sys_len = ref_len = 0
    correct, total = [0] * 4, [0] * 4
    for i, h in enumerate(hyps):
        hw = prep(h)
        best_len, closest = -1, -1
        max_ref = Counter()
        for refs in refsets:
            rw = prep(refs[i])
            diff = abs(len(hw) - len(rw))
            if closest == -1 or diff < closest:
                closest, best_len = diff, len(rw)
            elif diff == closest and len(rw) < best_len:
                best_len = len(rw)
            for g, c in ngrams(rw).items():
                max_ref[g] = max(max_ref[g], c)
        sys_len += len(hw)
        ref_len += best_len
        for g, c in ngrams(hw).items():
            correct[len(g) - 1] += min(c, max_ref[g])
        for n in range(4):
            total[n] += max(0, len(hw) - n)
    precisions = [0.0] * 4
    smooth_mteval = 1.0
    correct, total = [float(x) for x in correct], [float(x) for x in total]
    for n in range(1, 5):
        if smooth == 'add-k' and n > 1:
            correct[n - 1] += smooth_value
            total[n - 1] += smooth_value
        if total[n - 1] == 0:
            break
        if correct[n - 1] == 0:
            if smooth == 'exp':
                smooth_mteval *= 2
                precisions[n - 1] = 100. / (smooth_mteval * total[n - 1])
            elif smooth == 'floor':
                precisions[n - 1] = 100. * smooth_value / total[n - 1]
        else:
            precisions[n - 1] = 100. * correct[n - 1] / total[n - 1]
    bp = 1.0 if sys_len >= ref_len else (math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0)
    log = lambda p: math.log(p) if p > 0 else -9999999999
    return bp * math.exp(sum(log(p) for p in precisions) / 4)


def char_ngrams(line, lowercase):
    line = ''.join((line.lower() if lowercase else line).split())
    return [Counter(line[i:i + n] for i in range(len(line) - n + 1)) for n in range(1, 7)]


def chrf_from(stats, beta=2):
    eps, factor = 1e-16, beta ** 2
    ap = ar = 0.0
    eff = 0
    for i in range(6):
        h, r, m = stats[3 * i:3 * i + 3]
        p = m / h if h > 0 else eps
        rc = m / r if r > 0 else eps
        if h > 0 and r > 0:
            ap += p
            ar += rc
            eff += 1
    if eff == 0:
        return 0.0
    ap, ar = ap / eff, ar / eff
    return 100 * (1 + factor) * ap * ar / (factor * ap + ar) if ap + ar else 0.0


def chrf(hyps, refsets, lowercase=False):
    tot = [0] * 18
    for i, h in enumerate(hyps):
        hn = char_ngrams(h, lowercase)
        best, best_f = None, -1.0
        for refs in refsets:
            rn = char_ngrams(refs[i], lowercase)
            stats = []
            for a, b in zip(hn, rn):
                stats += [sum(a.values()), sum(b.values()), sum(min(c, b[g]) for g, c in a.items())]
            f = chrf_from(stats)
            if f > best_f:
                best, best_f = stats, f
        tot = [x + y for x, y in zip(tot, best)]
    return chrf_from(tot)


TOKENIZE = [
    'Hello, world!',
    'It costs $1,000.50 (approx.) -- see p. 3-4.',
    'He said &quot;no&quot; &amp; left &lt;now&gt;.',
    'a <skipped> b',
    '¿Dónde está la estación? ¡Allí!',
    '“Quoted” text… and ‘single’ ones.',
    'e-mail 3-D x-ray 2020-2021',
    'end.',
    '',
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

if __name__ == '__main__':
    q = lambda s: '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'
    for t in TOKENIZE:
        print(f'{{{q(t)}, {q(tok13a(t))}}},')
    for name, refsets in (('one ref', [REF1]), ('two refs', [REF1, REF2])):
        for smooth in ('exp', 'none', 'floor', 'add-k'):
            print(name, smooth, f'{bleu(HYPS, refsets, smooth):.6f}')
        print(name, 'exp lowercase', f'{bleu(HYPS, refsets, "exp", lowercase=True):.6f}')
        print(name, 'chrF', f'{chrf(HYPS, refsets):.6f}')
    sparse_h, sparse_r = ['a b x y', 'c'], [['a b c d', 'c d']]  # no 3- or 4-gram matches
    for smooth in ('exp', 'none', 'floor', 'add-k'):
        print('sparse', smooth, f'{bleu(sparse_h, sparse_r, smooth):.6f}')
    print('no matches', f'{bleu(["a b c d"], [["e f g h"]]):.6f}', f'{chrf(["abc"], [["xyz"]]):.6f}')
    print('single pair', f'{bleu(["the cat sat on the mat"], [["the cat sat on the mat"]]):.6f}')
    print('lines 1..2 only', f'{bleu(HYPS[:2], [REF1[:2]]):.6f}', f'{chrf(HYPS[:2], [REF1[:2]]):.6f}')
