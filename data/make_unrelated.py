#!/usr/bin/env python3
"""Builds the negative control of context gain: documents in which no two sentences of one
evaluation window come from the same source document, so that whatever lies farther back
than a sentence is unrelated to what is predicted.

    python3 data/make_unrelated.py --input data/corpora/sotu/test.txt \
        --output data/corpora/sotu_unrelated/test.txt [--max-sentence 511] [--seed 1]

Each input line is a document (a speech). Its sentences (split after . ? or ! before a
capital, but not after a title such as "Mr." or an initial) longer than --max-sentence
characters are dropped, so that a token's own sentence always starts within the window a
context-gain evaluation keeps (512 keys: a sentence of at most 511 bytes). The sentences are
then dealt out in one fixed random order of the sources, each source giving its next
sentence in turn, skipping a source whose last sentence started less than --gap characters ago (2560: an
evaluation window of 2048 and a sentence), so that no evaluation window holds two sentences
of one source; dealing stops when no source can give one. The output is
written as documents of --document-sentences sentences, one per line. Deterministic for a
seed.
"""
import argparse
import os
import random
import re

SENTENCE_END = re.compile(r'(?<=[.?!])\s+(?=[A-Z"])')
TITLE = re.compile(r'(?:\b(?:Mr|Mrs|Ms|Dr|St|Gen|Gov|Sen|Rep|Hon|Jr|Sr|No|Vol)|\b[A-Z])\.$')


def split_sentences(text):
    out = []
    for piece in SENTENCE_END.split(text):
        if out and TITLE.search(out[-1]):
            out[-1] += ' ' + piece  # "Mr. Speaker", "J. Q. Adams": one sentence
        else:
            out.append(piece)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--input', required=True)
    parser.add_argument('--output', required=True)
    parser.add_argument('--max-sentence', type=int, default=511)
    parser.add_argument('--document-sentences', type=int, default=60)
    parser.add_argument('--gap', type=int, default=2560)
    parser.add_argument('--seed', type=int, default=1)
    args = parser.parse_args()
    with open(args.input, encoding='utf-8') as f:
        sources = [line.strip() for line in f if line.strip()]
    sentences = [[s for s in split_sentences(text) if len(s.encode('utf-8')) <= args.max_sentence]
                 for text in sources]
    order = list(range(len(sources)))
    random.Random(args.seed).shuffle(order)
    dealt, taken, last, written = [], [0] * len(sources), [-args.gap] * len(sources), 0
    while True:
        progress = False
        for i in order:
            if taken[i] < len(sentences[i]) and written - last[i] >= args.gap:
                sentence = sentences[i][taken[i]]
                dealt.append(sentence)
                taken[i] += 1
                last[i] = written
                written += len(sentence.encode('utf-8')) + 1
                progress = True
        if not progress:
            break
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output + '.tmp', 'w', encoding='utf-8') as f:
        for start in range(0, len(dealt), args.document_sentences):
            f.write(' '.join(dealt[start:start + args.document_sentences]) + '\n')
    os.replace(args.output + '.tmp', args.output)
    kept = sum(len(s) for s in sentences)
    documents = (len(dealt) + args.document_sentences - 1) // args.document_sentences
    print(f'make_unrelated: {len(sources)} sources, {kept} sentences of at most {args.max_sentence} bytes; '
          f'{len(dealt)} dealt ({written} bytes) into {documents} documents -> {args.output}')


if __name__ == '__main__':
    main()
