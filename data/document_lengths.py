#!/usr/bin/env python3
"""Which evaluation contexts a corpus of documents can fill (data.documents): for each
context C, how many of its documents hold a whole window of C tokens, and how many whole
windows of C there are in all.

    python3 data/document_lengths.py FILE [FILE ...] [--spm MODEL] [--contexts 512,1024,...]

Each line of a FILE is a document. A document of n tokens is read as EOS, its tokens, EOS
(as ropelab cuts it), so it holds floor(n / C) whole windows of C predicted tokens (its last
window may be shorter). Tokens are UTF-8 bytes (the byte tokenizer), or with --spm MODEL the
pieces `spm_encode` (Debian's sentencepiece package) gives with that SentencePiece model.
Prints a Markdown table per file.
"""
import argparse
import subprocess


def token_counts(path, spm):
    with open(path, encoding='utf-8') as f:
        lines = [line.rstrip('\n') for line in f if line.strip()]
    if not spm:
        return [len(line.encode('utf-8')) + 1 for line in lines]  # the bytes and the closing EOS
    out = subprocess.run(['spm_encode', '--model', spm, '--output_format', 'id'], input='\n'.join(lines) + '\n',
                         capture_output=True, text=True, check=True).stdout
    return [len(ids.split()) + 1 for ids in out.split('\n')[:len(lines)]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('files', nargs='+')
    parser.add_argument('--spm', help='a SentencePiece model: count its pieces instead of bytes')
    parser.add_argument('--contexts', default='512,1024,2048,4096,8192,16384,32768')
    args = parser.parse_args()
    contexts = [int(c) for c in args.contexts.split(',')]
    unit = 'pieces' if args.spm else 'bytes'
    for path in args.files:
        counts = token_counts(path, args.spm)
        print(f'\n{path}: {len(counts)} documents, {sum(counts)} {unit} (longest {max(counts)})\n')
        print('| context | documents with a whole window | whole windows | tokens in them |')
        print('|---|---|---|---|')
        for c in contexts:
            windows = [n // c for n in counts]
            print(f'| {c} | {sum(1 for w in windows if w)} | {sum(windows)} | {c * sum(windows)} |')


if __name__ == '__main__':
    main()
