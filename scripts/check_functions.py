#!/usr/bin/env python3
"""No function over MAX lines (default 80) outside tests (issue 26): the library, cli/ and
bench/ sources, each top-level function from the first line of its signature to its closing
brace. Prints the offenders and exits 1 if there is any.
    usage: python3 scripts/check_functions.py [MAX]"""
import os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ['core', 'graph', 'memory', 'kernels', 'loaders', 'pruning', 'nn', 'bench', 'cli']
MAX = int(sys.argv[1]) if len(sys.argv) > 1 else 80

def strip(text):
    """Comments, string and character literals blanked (newlines kept), so braces count true."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2); j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif text.startswith('//', i):
            j = text.find('\n', i); j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + ' ' * (j - i - 1) + c); i = j + 1
        else:
            out.append(c); i += 1
    return ''.join(out)

def functions(path):
    lines = strip(open(path, errors='replace').read()).split('\n')
    depth, start, cand, res = 0, None, None, []
    for k, line in enumerate(lines):
        head = line.split('(')[0]
        # a signature: words and stars up to the function's name, then '(' (no '=' or '{' before);
        # the name may start its line (GNU style), an attribute or indentation may come first
        if depth == 0 and '(' in line and re.fullmatch(r'[ \t]*[A-Za-z_][\w \t*]*', head) \
                and not head.startswith(('typedef', 'struct', 'enum', 'union')) and not line.rstrip().endswith(';'):
            cand = k
        for ch in line:
            if ch == '{':
                if depth == 0:
                    start = cand   # None: an initializer or a type, not a function
                depth += 1
            elif ch == '}':
                depth -= 1
                if depth == 0 and start is not None:
                    names = [w for w in re.findall(r'(\w+)\s*\(', lines[start]) if w != '__attribute__']
                    res.append((k - start + 1, start + 1, names[0] if names else '?'))
                if depth == 0:
                    start, cand = None, None
        if depth == 0 and line.rstrip().endswith(';'):
            cand = None
    return res

bad = []
for d in DIRS:
    for dp, _, fs in os.walk(os.path.join(ROOT, d)):
        for f in sorted(fs):
            if f.endswith(('.c', '.cpp', '.cu', '.h', '.cuh', '.inc')):   # static inline bodies in headers too
                p = os.path.join(dp, f)
                for n, line, name in functions(p):
                    if n > MAX:
                        bad.append((n, f'{os.path.relpath(p, ROOT)}:{line}', name))
for n, where, name in sorted(bad, reverse=True):
    print(f'function over {MAX} lines: {where} {name} ({n} lines)')
print(f'check_functions: {len(bad)} functions over {MAX} lines')
sys.exit(1 if bad else 0)
