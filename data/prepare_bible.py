#!/usr/bin/env python3
"""Builds the English-Spanish Bible corpus: World English Bible (engWEB2015eb) against
Reina-Valera 1909 (spaRV1909eb), both public domain, from Debian's SWORD modules.

    python3 data/prepare_bible.py [--out data/corpora/bible]

Writes {train,valid,test}.{en,es} (line-aligned) and keys.{train,valid,test}. Verses are
joined on their key ("Genesis 1:1"), chapter headings (C:0) skipped, in canonical order;
with 0-based index i over the matched verses: test = i % 50 == 0, valid = i % 50 == 25,
train = the rest.

For language models over long documents (data.documents) it also writes books/{train,valid,
test}.{en,es}: one book per line, each language's verses of the book in order, for the books
both translations have; with 0-based index b over those books in canonical order, test =
b % 10 == 0 (Genesis, 1 Kings, Ecclesiastes, Obadiah, Mark, Colossians, 2 Peter), valid =
b % 10 == 5, train = the rest. Deterministic and idempotent: output is rebuilt only when
missing.
Needs `mod2imp` (libsword-utils) and the two modules (sword-text-web, sword-text-sparv).
"""
import argparse
import html
import os
import re
import subprocess
import sys

# back-matter (the WEB glossary) follows the closing tag of the last book
BOOK_END = re.compile(r'<div\b(?=[^>]*\beID=)(?=[^>]*\btype="book")[^>]*/>')
NOTE = re.compile(r'<note\b[^>]*>.*?</note>', re.S)
TAG = re.compile(r'<[^>]+>')
SPACE = re.compile(r'\s+')
SPACE_BEFORE_PUNCT = re.compile(r'\s+([,.;:!?»”’)])')
KEY = re.compile(r'^\$\$\$(.+) (\d+):(\d+)$')


def read_module(name):
    """Returns [(key, text)] in module order; text is the cleaned verse."""
    try:
        raw = subprocess.run(['mod2imp', name], check=True, capture_output=True).stdout.decode('utf-8')
    except FileNotFoundError:
        sys.exit('prepare_bible: mod2imp not found (apt-get install libsword-utils)')
    except subprocess.CalledProcessError as e:
        sys.exit(f'prepare_bible: mod2imp {name} failed: {e.stderr.decode(errors="replace").strip()}')
    verses, key, lines = [], None, []

    def flush():
        if key is not None:
            verses.append((key, clean(' '.join(lines))))

    for line in raw.split('\n'):
        if line.startswith('$$$'):
            flush()
            m = KEY.match(line)
            key = f'{m.group(1)} {m.group(2)}:{m.group(3)}' if m and m.group(3) != '0' and m.group(2) != '0' else None
            lines = []
        else:
            lines.append(line)
    flush()
    return verses


def clean(text):
    end = BOOK_END.search(text)
    if end:
        text = text[:end.start()]
    text = NOTE.sub(' ', text)  # footnotes sit between words: leave a space
    text = TAG.sub('', text)
    text = html.unescape(text)
    text = SPACE.sub(' ', text).strip()
    return SPACE_BEFORE_PUNCT.sub(r'\1', text)


def normalise_chapter_capitals(key, text, forms):
    """RV1909 prints a chapter's opening words in capitals ("EN el principio", "Y FUERON
    acabados", "LA SEGUNDA suerte", "Salmo de David. JEHOVÁ es mi pastor"). The first run
    of such words (two or more letters, all capitals, among the first six words) takes the
    case each word has elsewhere in the text: "Jehová" if capitalised more often than not,
    else lower case; a word that starts a sentence is then capitalised."""
    if not key.endswith(':1'):
        return text
    words = list(re.finditer(r'\w+', text))[:6]
    run = [m for m in words if len(m.group(0)) > 1 and m.group(0).isupper()]
    if not run:
        return text
    first = words.index(run[0])
    run = [m for m in words[first:first + 2] if len(m.group(0)) > 1 and m.group(0).isupper()]
    for m in reversed(run):  # right to left keeps earlier offsets valid
        word = m.group(0)
        lower, title = word.lower(), word[0] + word[1:].lower()
        fixed = title if forms.get(title, 0) > forms.get(lower, 0) else lower
        if re.fullmatch(r'\W*', text[:m.start()]) or re.search(r'[.!?]\s*$', text[:m.start()]):
            fixed = fixed[0].upper() + fixed[1:]
        text = text[:m.start()] + fixed + text[m.end():]
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--out', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'corpora', 'bible'))
    parser.add_argument('--force', action='store_true', help='rebuild even if the files exist')
    args = parser.parse_args()
    outputs = [os.path.join(args.out, d, f'{s}.{l}') for d in ('', 'books') for s in ('train', 'valid', 'test')
               for l in ('en', 'es')]
    if not args.force and all(os.path.exists(p) for p in outputs):
        print(f'prepare_bible: {args.out} is up to date')
        return
    english = dict(read_module('engWEB2015eb'))
    spanish = read_module('spaRV1909eb')
    forms = {}
    for _, es in spanish:
        for word in re.findall(r'\w+', es):
            forms[word] = forms.get(word, 0) + 1
    pairs, empty = [], 0
    for key, es in spanish:  # canonical order, Genesis 1:1 first
        en = english.get(key)
        if en is None:
            continue
        if not en or not es:  # a verse one translation omits (text-critical gaps): not matched
            empty += 1
            continue
        pairs.append((key, en, normalise_chapter_capitals(key, es, forms)))
    matched = len(pairs)
    splits = {'train': [], 'valid': [], 'test': []}
    for i, (key, en, es) in enumerate(pairs):
        split = 'test' if i % 50 == 0 else 'valid' if i % 50 == 25 else 'train'
        splits[split].append((key, en, es))
    os.makedirs(args.out, exist_ok=True)
    for split, rows in splits.items():
        for lang, column in (('en', 1), ('es', 2), ('keys', 0)):
            name = f'keys.{split}' if lang == 'keys' else f'{split}.{lang}'
            with open(os.path.join(args.out, name), 'w', encoding='utf-8') as f:
                for row in rows:
                    f.write(row[column] + '\n')
    print(f'prepare_bible: {matched} matched verses ({empty} keys skipped: empty on one side); '
          f'train {len(splits["train"])}, valid {len(splits["valid"])}, test {len(splits["test"])} -> {args.out}')
    write_books(args.out, english, spanish, forms)


def book_of(key):
    return key.rsplit(' ', 1)[0]


def write_books(out, english, spanish, forms):
    """books/{split}.{en,es}: one line per book both translations have (see the module doc)."""
    order, texts = [], {'en': {}, 'es': {}}
    for key, es in spanish:
        book = book_of(key)
        if book not in order:
            order.append(book)
        if es:
            texts['es'].setdefault(book, []).append(normalise_chapter_capitals(key, es, forms))
    for key, en in english.items():  # module order: canonical
        if en:
            texts['en'].setdefault(book_of(key), []).append(en)
    books = [b for b in order if b in texts['en'] and b in texts['es']]
    directory = os.path.join(out, 'books')
    os.makedirs(directory, exist_ok=True)
    splits = {'train': [], 'valid': [], 'test': []}
    for b, book in enumerate(books):
        splits['test' if b % 10 == 0 else 'valid' if b % 10 == 5 else 'train'].append(book)
    for split, names in splits.items():
        for lang in ('en', 'es'):
            with open(os.path.join(directory, f'{split}.{lang}'), 'w', encoding='utf-8') as f:
                for book in names:
                    f.write(' '.join(texts[lang][book]) + '\n')
    print(f'prepare_bible: {len(books)} books -> {directory}: ' +
          ', '.join(f'{s} {len(n)} ({", ".join(n) if s == "test" else "..."})' for s, n in splits.items()))


if __name__ == '__main__':
    main()
