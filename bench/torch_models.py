"""The PyTorch models bench/torch_bench.py times: tutorial C (the Winter Games translation) at its
size, tutorial B at its size with its dropout, and tutorial D's torch.nn.Transformer with the
tutorial's positional encoding. C and B are the fixtures' references (tools/fixtures/reference_c.py,
reference_b.py: the modules xtgrad's parity tests compare against), so both sides of bench/run.sh
do the same work. Import it after the thread settings are in the environment (torch_bench.py sets
them before torch loads OpenBLAS).
"""
import os
import sys

import torch
import torch.nn as nn

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from fixtures import reference_b, reference_c  # noqa: E402  (tools/fixtures: the fixtures' PyTorch references)


# ---------------------------------------------------------------- tutorial C (Winter Games)
class C:
    d_model, d_ff, d_k, d_v, n_layers, n_heads = 512, 2048, 64, 64, 6, 8
    src_vocab, tgt_vocab, src_len, tgt_len = 8, 9, 7, 7  # PAD = 0, one id per word (the errata fix)


def CTransformer():
    """Tutorial C at its size, its errata fixed: the fixtures' reference (tools/fixtures/reference_c.py)."""
    return reference_c.Transformer(C.src_vocab, C.tgt_vocab, C.d_model, C.d_ff, C.d_k, C.d_v, C.n_layers, C.n_heads,
                                   C.src_len, C.tgt_len)


# ---------------------------------------------------------------- tutorial B
def BTransformer(vocab=5000, d_model=512, num_heads=8, num_layers=6, d_ff=2048, max_len=100, dropout=0.1):
    """Tutorial B at its size with its dropout: the fixtures' reference (tools/fixtures/reference_b.py),
    the model tests/fixtures/rng trains."""
    return reference_b.Transformer(vocab, vocab, d_model, num_heads, num_layers, d_ff, max_len, dropout)


# ---------------------------------------------------------------- tutorial D
def positional_table(length, E):
    # the tutorial's: angle[pos, i] = pos / 10000^(2i/E), sin on even, cos on odd columns
    pos = torch.arange(length, dtype=torch.float32).reshape(-1, 1)
    angle = pos / torch.pow(10000, torch.arange(0, E, 2, dtype=torch.float32) / E)
    P = torch.zeros(length, E)
    P[:, 0::2], P[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return P


class DTransformer(nn.Module):
    """torch.nn.Transformer + the tutorial's positional encoding, once, on src (S, N, E)."""

    def __init__(self, nhead, num_encoder_layers, d_model=512, dropout=0.1):
        super().__init__()
        self.transformer = nn.Transformer(d_model=d_model, nhead=nhead, num_encoder_layers=num_encoder_layers,
                                          num_decoder_layers=6, dim_feedforward=2048, dropout=dropout)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("P", positional_table(512, d_model))

    def forward(self, src, tgt):
        src = self.dropout(src + self.P[: src.size(0)].unsqueeze(1))
        return self.transformer(src, tgt)
