#!/usr/bin/env python3
"""Variants of a qdsl-generated stencil kernel for the timing harness (harness.cu).

A generated kernel body is a sequence of top-level blocks: the terms (`{ // term k: ...`)
and, before each, an `#if QDSL_PREFETCH` block asking L2 for the next term's records.
The transforms below rebuild that sequence in another form; each keeps the kernel's
signature, so harness.cu launches every variant the same way.

    python3 variants.py KERNEL.cu OUT_DIR

writes OUT_DIR/<name>.cu for every variant of VARIANTS (names: spec, prefetch distance,
term orders, loads only, cache hints).
"""
import os
import re
import sys


def split_body(src):
    """(head, blocks, tail): blocks = [('P' | 'T', term number, text)] in source order."""
    lines = src.split('\n')
    start = next(i for i, l in enumerate(lines)
                 if l.startswith('#if QDSL_PREFETCH') or l.startswith('    { // term '))
    blocks, i = [], start
    while True:
        l = lines[i]
        if l.startswith('#if QDSL_PREFETCH'):
            k = int(re.match(r"    \{ // term (\d+)'s records", lines[i + 1]).group(1))
            j = i + 1
            while not (lines[j] == '#endif' and lines[j - 1] == '    }'):
                j += 1
        elif l.startswith('    { // term '):
            k = int(re.match(r'    \{ // term (\d+):', l).group(1))
            j = i + 1
            while lines[j] != '    }':
                j += 1
        else:
            break
        blocks.append(('P' if l.startswith('#if') else 'T', k, '\n'.join(lines[i:j + 1])))
        i = j + 1
    return '\n'.join(lines[:start]), blocks, '\n'.join(lines[i:])


def assemble(src, order=None, distance=1, prefetch=True):
    """The terms in `order` (default: as in `src`), each term's prefetch block `distance`
    terms ahead of it (`'all'`: every prefetch first); `prefetch=False` drops them."""
    head, blocks, tail = split_body(src)
    P = {k: t for kind, k, t in blocks if kind == 'P'}
    order = order or [k for kind, k, _ in blocks if kind == 'T']
    T = {k: t for kind, k, t in blocks if kind == 'T'}
    out = [head]
    if not prefetch:
        out += [T[k] for k in order]
    elif distance == 'all':
        out += [P[k] for k in order if k in P] + [T[k] for k in order]
    else:
        out += [P[k] for k in order[:distance + 1] if k in P]
        for pos, k in enumerate(order):
            out.append(T[k])
            ahead = pos + distance + 1
            if ahead < len(order) and order[ahead] in P:
                out.append(P[order[ahead]])
    return '\n'.join(out + [tail])


def loads_only(src):
    """Every link's unpack and transport replaced by a sum of its loaded reals into v:
    the loads stay, the arithmetic goes (the access pattern's own floor)."""
    out, lines, i = [], src.split('\n'), 0
    while i < len(lines):
        m = re.match(r'(\s*)real g\[(\d+)\];', lines[i])
        out.append(lines[i])
        i += 1
        if not m:
            continue
        while 'cplx m[3][3];' not in lines[i]:
            out.append(lines[i])
            i += 1
        while 'transport<' not in lines[i]:
            i += 1
        i += 1
        out.append(m.group(1) + 'v[0][0].re += ' + ' + '.join(f'g[{k}]' for k in range(int(m.group(2)))) + ';')
    return '\n'.join(out)


LD = 'template <bool STREAM, typename V> __device__ __forceinline__ V ld(const V* __restrict__ p) { return STREAM ? __ldcs(p) : *p; }'


def cache_hints(src, source='*p', links='__ldcs(p)'):
    """Other load instructions for the sources (`*p`: ld.global.nc) and the links."""
    assert LD in src, 'the generated load helper changed'
    return src.replace(LD, LD.replace('__ldcs(p)', links).replace(': *p;', ': ' + source + ';'))


def improved_staggered_orders(src):
    """Term orders of the improved staggered hop (terms 4μ + {0: fat+, 1: fat−, 2: long+,
    3: long−}): spec order, long terms first, by kind, forward first, μ reversed."""
    mu = lambda ks: [4 * m + k for m in range(4) for k in ks]
    return {
        'spec_order': list(range(16)),
        'long_first': mu([2, 3]) + mu([0, 1]),
        'by_kind': mu([0]) + mu([2]) + mu([1]) + mu([3]),
        'forward_first': mu([0, 2]) + mu([1, 3]),
        'mu_reversed': [4 * m + k for m in reversed(range(4)) for k in range(4)],
    }


def variants(src):
    """The variants timed by default: for the improved staggered hop its term orders with
    and without arithmetic, the cache hints; for the others the prefetch distances."""
    v = {'as_emitted': src}
    if '// term 15:' in src and 'long[' in src:
        for name, order in improved_staggered_orders(src).items():
            v[name] = assemble(src, order, prefetch=False)
            v[name + '_loads_only'] = loads_only(v[name])
    else:
        v['prefetch_distance2'] = assemble(src, distance=2)
        v['prefetch_all_first'] = assemble(src, distance='all')
    v['source_ldcg'] = cache_hints(src, source='__ldcg(p)')
    v['links_ldlu'] = cache_hints(src, links='__ldlu(p)')
    v['links_plain'] = cache_hints(src, links='*p')
    return v


if __name__ == '__main__':
    kernel, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    for name, text in variants(open(kernel).read()).items():
        open(os.path.join(out_dir, name + '.cu'), 'w').write(text)
        print(name)
