#!/usr/bin/python3
"""Writes xtgrad's PyTorch parity fixtures (docs/fixtures.md) and checks fixture folders.

  /usr/bin/python3 tools/make_fixtures.py --out tests/fixtures/small            # the suite: seed 0, small preset
  /usr/bin/python3 tools/make_fixtures.py --case mha_d__self --out /tmp/fx      # one case folder
  /usr/bin/python3 tools/make_fixtures.py --check tests/fixtures/small          # recompute and compare
  /usr/bin/python3 tools/make_fixtures.py --list

PyTorch is needed only here, to regenerate or check; building and testing xtgrad never needs it.
"""
import os
import sys

os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')       # one thread, before torch loads its BLAS
os.environ.setdefault('OMP_NUM_THREADS', '1')
sys.dont_write_bytecode = True                           # keep tools/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import argparse  # noqa: E402

import torch  # noqa: E402

from fixtures import check, writer  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--out', metavar='DIR', help='suite folder, or the case folder with --case')
    p.add_argument('--case', help='write only this case (see --list), also the ones not in the suite')
    p.add_argument('--seed', type=int, default=0, help='default 0')
    p.add_argument('--preset', choices=sorted(writer.PRESETS), default='small', help='default small')
    p.add_argument('--f64', action='store_true', help='also write the float64 copy f64/ (off by default)')
    p.add_argument('--list', action='store_true', help='list the cases')
    p.add_argument('--check', metavar='DIR', help='recompute a case folder or a suite of them and compare')
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    if a.list:
        for name, c in writer.CASES.items():
            print('%-42s %-9s %-8s %s%s' % (name, c.kind, c.tutorial, '' if c.in_suite else '(not in suite) ',
                                            c.summary))
        return 0
    if a.check:
        return 0 if check.run_check(a.check) else 1
    if not a.out:
        p.error('--out DIR is required (or --list, --check DIR)')
    if a.case:
        if a.case not in writer.CASES:
            p.error('unknown case %r (see --list)' % a.case)
        meta = writer.write_case(a.case, a.out, a.seed, a.preset, a.f64)
        print('%s: %d files -> %s' % (a.case, len(meta['files']), a.out))
    else:
        writer.write_suite(a.out, a.seed, a.preset, a.f64)
    return 0


if __name__ == '__main__':
    sys.exit(main())
