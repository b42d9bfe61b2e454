#!/usr/bin/env python3
"""Builds documents that must use their far context: real speeches in which passages recur
farther back than an attention window, the instrument check of context gain (a model that
learns to copy them gains in every bucket past the window; one that cannot gains nothing).

    python3 data/make_repeats.py --input data/corpora/sotu/train.txt --output data/corpora/sotu_repeats/train.txt \
        [--near 600] [--far 1800] [--every 1500] [--seed 1]

Each input line is a document (a speech), kept whole and in order. Walking through its
sentences, once --every bytes have been written since the last copy, the next copy is put in:
a run of whole sentences of 150 to 400 bytes that starts between --near and --far bytes back
in the output (so that every copied byte sits more than --near bytes after the byte it
repeats), written again as it was. About an eighth of the output is such copies (12.8% of the
SOTU test split with --seed 3; the script prints the share). Deterministic
for a seed. Make each split with its own input (train, valid, test).
"""
import argparse
import os
import random
import re

SENTENCE_END = re.compile(r'(?<=[.?!])\s+(?=[A-Z"])')


def with_repeats(text, rng, near, far, every):
    out, starts, since = '', [], 0  # starts: where each written sentence begins in `out`
    for sentence in SENTENCE_END.split(text):
        starts.append(len(out) + (1 if out else 0))
        out += (' ' if out else '') + sentence
        since += len(sentence) + 1
        if since < every:
            continue
        candidates = [i for i, s in enumerate(starts) if near <= len(out) - s <= far]
        rng.shuffle(candidates)
        for i in candidates:  # a run of whole sentences of 150 to 400 bytes from sentence i
            j = i + 1
            while j < len(starts) and starts[j] - starts[i] < 150:
                j += 1
            end = starts[j] - 1 if j < len(starts) else len(out)
            if 150 <= end - starts[i] <= 400:
                passage = out[starts[i]:end]
                starts.append(len(out) + 1)
                out += ' ' + passage
                since = 0
                break
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--input', required=True)
    parser.add_argument('--output', required=True)
    parser.add_argument('--near', type=int, default=600)
    parser.add_argument('--far', type=int, default=1800)
    parser.add_argument('--every', type=int, default=1500)
    parser.add_argument('--seed', type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with open(args.input, encoding='utf-8') as f:
        documents = [line.strip() for line in f if line.strip()]
    written = [with_repeats(d, rng, args.near, args.far, args.every) for d in documents]
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output + '.tmp', 'w', encoding='utf-8') as f:
        for d in written:
            f.write(d + '\n')
    os.replace(args.output + '.tmp', args.output)
    before, after = sum(len(d) for d in documents), sum(len(d) for d in written)
    print(f'make_repeats: {len(documents)} documents, {before} -> {after} characters '
          f'({100 * (after - before) / after:.1f}% copies) -> {args.output}')


if __name__ == '__main__':
    main()
