#!/usr/bin/python3
"""Writes tests/fixtures/rng/: what torch.manual_seed(s) makes PyTorch 1.13 draw on the CPU.

  /usr/bin/python3 tools/make_rng_fixtures.py --out tests/fixtures/rng
  /usr/bin/python3 tools/make_rng_fixtures.py --train-log --seed 0 --steps 10   # print a tutorial B run's losses

  distributions__seed{S}/   after manual_seed(S), in this order: each distribution's tensor
                            (NN_<name>.npy, NN = draw order) and dropout outputs on ones;
                            draws.json (not a parity fixture: tests/random_test.cpp draws them)
  init_transformer_{a,b,c,d}__seed{S}/
                            the trainable parameters of the reference model (tools/fixtures/
                            reference_*.py; torch.nn.Transformer for D) built right after
                            manual_seed(S); meta.json as a parity fixture (kind "init")
  train_b_dropout__seed{S}/ tutorial B's random-data run at a small size with dropout 0.1:
                            manual_seed(S), the model, src then tgt = randint(1, V, (B, L)),
                            Adam(1e-4, (0.9, 0.98), 1e-9), losses.npy and torch.log (its prints)

PyTorch is needed only here; the C++ tests read the committed files (tests/random_test.cpp), and
build/tools/parity --all tests/fixtures/rng checks the init and train_log folders.
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
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from fixtures import modules, reference_b  # noqa: E402
from fixtures.writer import PRESETS, resolve  # noqa: E402

SEEDS = (0, 1, 1234)
# The init models: the 'small' preset made smaller, to keep the committed files small.
PRESETS['rng'] = dict(PRESETS['small'], d_model=8, heads=2, d_ff=12)
INIT_CASES = ('transformer_a', 'transformer_b', 'transformer_c', 'transformer_d')
TRAIN = dict(src_vocab_size=40, tgt_vocab_size=40, d_model=32, num_heads=4, num_layers=2, d_ff=64,
             max_seq_length=12, batch=8, dropout=0.1, lr=1e-4, steps=10)


def distributions():
    """(name, tensor) in draw order; the names say what the C++ test calls."""
    out = []
    out.append(('uniform_37_m0.3_0.7', torch.empty(37).uniform_(-0.3, 0.7)))
    out.append(('randn_5', torch.randn(5)))            # scalar path: leaves a cached normal
    out.append(('randn_3', torch.randn(3)))            # starts with the cached one
    out.append(('randn_37', torch.randn(37)))          # blocks of 16, the last 16 redrawn
    out.append(('randn_64', torch.randn(64)))
    out.append(('normal_48_0.5_2', torch.empty(48).normal_(0.5, 2.0)))
    out.append(('normal_7_0.5_2', torch.empty(7).normal_(0.5, 2.0)))
    out.append(('randint_1_5000_4x9', torch.randint(1, 5000, (4, 9))))
    out.append(('randint_0_2p40_6', torch.randint(0, 2 ** 40, (6,))))
    out.append(('rand_10', torch.rand(10)))
    out.append(('dropout_0.1_3x40', F.dropout(torch.ones(3, 40), 0.1, True)))
    out.append(('dropout_0.5_50', F.dropout(torch.ones(50), 0.5, True)))
    out.append(('randn_500', torch.randn(500)))
    return out


def write_npy(folder, name, t):
    a = t.detach().numpy()
    a = a.astype(np.float32) if a.dtype.kind == 'f' else a.astype(np.int64)
    np.save(os.path.join(folder, name + '.npy'), np.ascontiguousarray(a))


def write_distributions(root, seed):
    folder = os.path.join(root, 'distributions__seed%d' % seed)
    os.makedirs(folder, exist_ok=True)
    torch.manual_seed(seed)
    names = []
    for i, (name, t) in enumerate(distributions()):
        key = '%02d_%s' % (i, name)
        write_npy(folder, key, t)
        names.append(key)
    dump(dict(seed=seed, torch_version=torch.__version__, draws=names,
              doc='torch.manual_seed(seed), then each draw in this order'), os.path.join(folder, 'draws.json'))


def build_init_model(cdef, cfg):
    """The tutorials' models as tools/fixtures builds them, except D: torch.nn.Transformer itself,
    whose encoder and decoder deep-copy one layer (the reference builds independent layers)."""
    if cdef.module != 'transformer_d':
        return modules.FACTORIES[cdef.module](cfg, cdef.options)[0]
    return nn.Transformer(cfg['d_model'], cfg['nhead'], cfg['num_encoder_layers'], cfg['num_decoder_layers'],
                          cfg['dim_feedforward'], 0.0, cfg['activation'], layer_norm_eps=cfg['layer_norm_eps'],
                          batch_first=cfg['batch_first'], norm_first=cfg['norm_first'])


def write_init(root, case, seed):
    cdef, spec = resolve(case, seed, 'rng')
    torch.manual_seed(seed)
    model = build_init_model(cdef, spec.config)
    folder = os.path.join(root, 'init_%s__seed%d' % (case, seed))
    os.makedirs(folder, exist_ok=True)
    # The trainable parameters: what the seed draws (or sets to constants). Frozen tables and
    # buffers are computed, not drawn; tests/fixtures/small covers them.
    normal_filled = {n + '.weight' for n, m in model.named_modules() if isinstance(m, nn.Embedding)}
    ulps, params = {}, []
    for name, t in model.named_parameters():
        if not t.requires_grad:
            continue
        write_npy(folder, 'param.' + name, t)
        params.append(dict(name=name, shape=list(t.shape)))
        if name in normal_filled and t.numel() >= 16:
            ulps['param.' + name] = 4       # torch's AVX2 normal_ fill (random/random.hpp)
    dump(dict(case=case, module=cdef.module, kind='init', seed=seed, config=spec.config, options=cdef.options,
              torch_version=torch.__version__, ulps=ulps, params=params,
              doc='trainable parameters of the model built right after torch.manual_seed(seed); exact except '
                  'the float32 ulps given in ulps'),
         os.path.join(folder, 'meta.json'))


def train_b(seed, cfg, log=print, autocast=False):
    """Tutorial B's training loop; returns the losses (float) and the printed lines. autocast: the
    forward and loss under torch.autocast("cpu", dtype=torch.bfloat16) (tools/make_autocast_fixture.py)."""
    torch.manual_seed(seed)
    model = reference_b.Transformer(cfg['src_vocab_size'], cfg['tgt_vocab_size'], cfg['d_model'], cfg['num_heads'],
                                    cfg['num_layers'], cfg['d_ff'], cfg['max_seq_length'], cfg['dropout'])
    shape = (cfg['batch'], cfg['max_seq_length'])
    src = torch.randint(1, cfg['src_vocab_size'], shape)
    tgt = torch.randint(1, cfg['tgt_vocab_size'], shape)
    criterion = nn.CrossEntropyLoss(ignore_index=0)
    opt = torch.optim.Adam(model.parameters(), lr=cfg['lr'], betas=(0.9, 0.98), eps=1e-9)
    model.train()
    losses, lines = [], []
    for step in range(1, cfg['steps'] + 1):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = model(src, tgt[:, :-1])
            loss = criterion(out.contiguous().view(-1, cfg['tgt_vocab_size']), tgt[:, 1:].contiguous().view(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
        lines.append('Epoch: %d, Loss: %.6f' % (step, loss.item()))
        log(lines[-1])
    return np.array(losses, dtype=np.float32), lines, src, tgt


def write_train(root, seed):
    folder = os.path.join(root, 'train_b_dropout__seed%d' % seed)
    os.makedirs(folder, exist_ok=True)
    losses, lines, src, tgt = train_b(seed, TRAIN, log=lambda s: None)
    np.save(os.path.join(folder, 'losses.npy'), losses)
    write_npy(folder, 'input.src', src)
    write_npy(folder, 'input.tgt', tgt)
    with open(os.path.join(folder, 'torch.log'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    dump(dict(case='train_b_dropout', module='transformer_b', kind='train_log', seed=seed, config=TRAIN,
              torch_version=torch.__version__,
              doc="tutorial B's training run: manual_seed(seed), model, src and tgt = randint(1, V, (batch, "
                  "max_seq_length)), train() with dropout, Adam; losses.npy = loss.item() per step"),
         os.path.join(folder, 'meta.json'))


def dump(obj, path):
    with open(path, 'w') as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write('\n')


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--out', metavar='DIR', help='write the fixtures here (tests/fixtures/rng)')
    p.add_argument('--train-log', action='store_true', help="print tutorial B's run (TRAIN sizes unless given)")
    p.add_argument('--seed', type=int, default=0)
    for key in ('batch', 'steps', 'src_vocab_size', 'd_model', 'num_heads', 'num_layers', 'd_ff', 'max_seq_length'):
        p.add_argument('--' + key.replace('_', '-'), type=int, dest=key)
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    if a.train_log:
        cfg = dict(TRAIN)
        for key in TRAIN:
            if getattr(a, key, None) is not None:
                cfg[key] = getattr(a, key)
        cfg['tgt_vocab_size'] = cfg['src_vocab_size']
        train_b(a.seed, cfg)
        return 0
    if not a.out:
        p.error('--out DIR or --train-log')
    for seed in SEEDS:
        write_distributions(a.out, seed)
        for case in INIT_CASES:
            write_init(a.out, case, seed)
        write_train(a.out, seed)
    return 0


if __name__ == '__main__':
    sys.exit(main())
