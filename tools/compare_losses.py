#!/usr/bin/env python3
"""Compares the losses of two training logs, step by step: a PyTorch run and xtgrad's.

  python3 tools/compare_losses.py TORCH_LOG XTGRAD_LOG [--tol 1e-4]

A loss is the number after "Loss:" on a line (tutorial B's "Epoch: 1, Loss: 8.6751" and the
examples' prints). Each pair must agree within tol plus the rounding of the coarser print
(half a unit in its last printed digit). Prints one line per step and exits 1 on a mismatch,
2 when the logs hold different numbers of losses or none, a log cannot be read or --tol is not a
finite number >= 0. A nan or inf loss (a diverged run) is a mismatch. The fixtures sibling of
build/tools/parity (which compares tensors): no torch needed.
"""
import argparse
import math
import re
import sys

# A number, or a diverged run's nan / inf (as C++ and Python print them): those must be seen, and fail.
LOSS = re.compile(r'Loss:\s*([-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|nan|inf(?:inity)?))', re.IGNORECASE)


def losses(path):
    """[(value, half a unit of its last printed digit)] in the order printed."""
    out = []
    try:
        f = open(path, errors='replace')
    except OSError as e:
        sys.exit('compare_losses: cannot read %s: %s' % (path, e.strerror))  # exit status 2 below
    with f:
        for line in f:
            m = LOSS.search(line)
            if m:
                text = m.group(1)
                decimals = len(text.split('.')[1]) if '.' in text and 'e' not in text.lower() else 0
                out.append((float(text), 0.5 * 10.0 ** -decimals if decimals else 0.0))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('reference', help='the PyTorch log')
    p.add_argument('log', help="xtgrad's log")
    p.add_argument('--tol', type=float, default=1e-4, help='allowed difference per step (default 1e-4)')
    a = p.parse_args(argv)
    if not math.isfinite(a.tol) or a.tol < 0:
        p.error('--tol must be a finite number >= 0, got %g' % a.tol)  # exit 2
    try:
        ref, got = losses(a.reference), losses(a.log)
    except SystemExit as e:
        print(e.code, file=sys.stderr)
        return 2
    if not ref or len(ref) != len(got):
        print('compare_losses: %s holds %d losses, %s holds %d' % (a.reference, len(ref), a.log, len(got)))
        return 2
    bad = 0
    for step, ((r, r_round), (g, g_round)) in enumerate(zip(ref, got), 1):
        diff = abs(r - g)
        ok = math.isfinite(r) and math.isfinite(g) and diff <= a.tol + max(r_round, g_round)  # a nan or inf: never
        bad += not ok
        print('step %3d  torch %-10.6g xtgrad %-10.6g diff %.2e %s' % (step, r, g, diff, 'ok' if ok else 'MISMATCH'))
    print('%d of %d steps within %g' % (len(ref) - bad, len(ref), a.tol))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
