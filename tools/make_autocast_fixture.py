#!/usr/bin/python3
"""Writes tests/fixtures/autocast/: how far PyTorch's bf16 autocast moves tutorial B's training
losses from its own fp32 run, the yardstick of xtgrad's autocast (tests/autocast_test.cpp).

  /usr/bin/python3 tools/make_autocast_fixture.py --out tests/fixtures/autocast

  train_b__seed{S}/  tutorial B's random-data run (tools/make_rng_fixtures.py's train_b: manual_seed(S),
                     the model, src then tgt = randint(1, V, (B, L)), dropout 0.1, Adam(1e-4, (0.9, 0.98),
                     1e-9)) at CONFIG's size, 10 steps, twice: losses_fp32.npy in fp32 and
                     losses_bf16.npy with the forward and loss under torch.autocast("cpu",
                     dtype=torch.bfloat16); meta.json holds the config and torch's version.

CONFIG is larger than make_rng_fixtures.py's TRAIN so that the Linear products (256 rows of 128)
reach oneDNN's bf16 matmul in both libraries, not only small kernels. xtgrad builds the same model
and data from the same seed (its initial weights, data and dropout masks equal torch's:
tests/fixtures/rng), so the two fp32 runs agree to ~1e-5 and the test compares each library's
autocast run with its own fp32 run. PyTorch is needed only here.
"""
import argparse
import json
import os
import sys

os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')
os.environ.setdefault('OMP_NUM_THREADS', '1')
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from make_rng_fixtures import train_b  # noqa: E402

SEEDS = (0, 1, 1234)
CONFIG = dict(src_vocab_size=200, tgt_vocab_size=200, d_model=128, num_heads=4, num_layers=2, d_ff=256,
              max_seq_length=32, batch=8, dropout=0.1, lr=1e-4, steps=10)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--out', metavar='DIR', required=True, help='write the fixtures here (tests/fixtures/autocast)')
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    for seed in SEEDS:
        folder = os.path.join(a.out, 'train_b__seed%d' % seed)
        os.makedirs(folder, exist_ok=True)
        fp32 = train_b(seed, CONFIG, log=lambda s: None)[0]
        bf16 = train_b(seed, CONFIG, log=lambda s: None, autocast=True)[0]
        np.save(os.path.join(folder, 'losses_fp32.npy'), fp32)
        np.save(os.path.join(folder, 'losses_bf16.npy'), bf16)
        with open(os.path.join(folder, 'meta.json'), 'w') as f:
            json.dump(dict(case='train_b_autocast', seed=seed, config=CONFIG, torch_version=torch.__version__,
                           doc="tutorial B's run in fp32 and under torch.autocast('cpu', dtype=torch.bfloat16); "
                               "losses = loss.item() per step"), f, indent=1, sort_keys=True)
            f.write('\n')
        print('seed %d: max |bf16 - fp32| over %d steps = %.2e' % (seed, len(fp32), np.max(np.abs(bf16 - fp32))))
    return 0


if __name__ == '__main__':
    sys.exit(main())
