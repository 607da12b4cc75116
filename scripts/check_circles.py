#!/usr/bin/env python3
"""No circle of files (issue 26): a module is a source file with its header (loaders/ingest.c and
loaders/ingest.h are "loaders/ingest"); a -> b when a's source or header includes b's header, or
when a's object file uses a symbol b's object file defines (nm on the library's objects in
BUILD). Prints every strongly connected component of more than one module and exits 1 if there
is any.   usage: python3 scripts/check_circles.py [BUILD]   (default build/)"""
import collections, os, re, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ['core', 'graph', 'memory', 'kernels', 'loaders', 'pruning', 'nn', 'bench', 'cli']
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, 'build')
g = collections.defaultdict(set)

def module(path):   # repository-relative path without the extension
    return os.path.relpath(path, ROOT).rsplit('.', 1)[0]

for d in DIRS:
    for dp, _, fs in os.walk(os.path.join(ROOT, d)):
        for f in fs:
            if not re.search(r'\.(c|h|cu|cuh|cpp|inc)$', f):
                continue
            p = os.path.join(dp, f)
            for m in re.finditer(r'#include "([^"]+)"', open(p, errors='replace').read()):
                if os.path.exists(os.path.join(ROOT, m.group(1))) and module(os.path.join(ROOT, m.group(1))) != module(p):
                    g[module(p)].add(module(os.path.join(ROOT, m.group(1))))

objdir = os.path.join(build, 'CMakeFiles')
defs, uses = {}, collections.defaultdict(set)
nobj = 0
# every target's objects of the sources in DIRS: the library's (inca_core.dir) and the
# executable's (inca.dir: cli/ and bench/, which the library's objects alone never showed)
for dp, _, fs in os.walk(objdir):
    for f in fs:
        m = re.search(r'[\\/]([^\\/]+)\.dir[\\/](.*)$', os.path.join(dp, f))
        if not f.endswith('.o') or not m:
            continue
        mod = re.sub(r'\.(c|cpp|cu)\.o$', '', m.group(2).replace(os.sep, '/'))
        if mod.split('/')[0] not in DIRS or not any(os.path.exists(os.path.join(ROOT, mod + e)) for e in ('.c', '.cpp', '.cu')):
            continue
        nobj += 1
        out = subprocess.run(['nm', '-g', os.path.join(dp, f)], capture_output=True, text=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 2 and p[0] == 'U':
                uses[mod].add(p[1])
            elif len(p) == 3 and p[1] in 'TDBRWV':
                defs[p[2]] = mod
if nobj == 0:
    sys.exit(f'check_circles: no object files of inca_core under {objdir} (build first)')
for a, syms in uses.items():
    for s in syms:
        b = defs.get(s)
        if b and b != a:
            g[a].add(b)

index, low, stack, on, comps = {}, {}, [], set(), []
sys.setrecursionlimit(100000)
def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v); on.add(v)
    for w in sorted(g[v]):
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            comps.append(sorted(comp))
for v in sorted(g):
    if v not in index:
        visit(v)
for c in comps:
    print('circle of files:', ' '.join(c))
print(f'check_circles: {len(g)} modules, {nobj} objects, {len(comps)} circles')
sys.exit(1 if comps else 0)
