#!/usr/bin/python3
"""Move a state dict between xtgrad and PyTorch through a safetensors file.

Debian 12 has no python3-safetensors, so this reads and writes the format directly (an
8-byte little-endian header length, a JSON header, raw little-endian data): a dozen lines.

    import torch, safetensors_torch as st
    model.load_state_dict(st.load("winter_games.safetensors"))   # xtgrad -> PyTorch
    st.save(model.state_dict(), "from_torch.safetensors")        # PyTorch -> xtgrad: nn::load(model, path)

`python3 tools/safetensors_torch.py CHECKPOINT` prints the tensors of a checkpoint.
"""
import json
import struct
import sys

import numpy as np
import torch

DTYPES = {'F32': np.float32, 'F64': np.float64, 'I64': np.int64}


def load(path):
    """The checkpoint as an ordered dict of name -> torch.Tensor."""
    with open(path, 'rb') as f:
        (n,) = struct.unpack('<Q', f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    header.pop('__metadata__', None)
    out = {}
    for name, e in sorted(header.items(), key=lambda kv: kv[1]['data_offsets'][0]):
        begin, end = e['data_offsets']
        array = np.frombuffer(data[begin:end], dtype=DTYPES[e['dtype']]).reshape(e['shape'])
        out[name] = torch.from_numpy(array.copy())
    return out


def save(state_dict, path, metadata=None):
    """Writes float32 tensors as xtgrad's nn::load reads them."""
    header, chunks, offset = {}, [], 0
    for name, t in state_dict.items():
        raw = t.detach().to(torch.float32).contiguous().cpu().numpy().tobytes()
        header[name] = {'dtype': 'F32', 'shape': list(t.shape), 'data_offsets': [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    header['__metadata__'] = dict(metadata or {'format': 'pt'})
    text = json.dumps(header).encode()
    text += b' ' * (-len(text) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(text)) + text + b''.join(chunks))


if __name__ == '__main__':
    for name, t in load(sys.argv[1]).items():
        print(f'{name:60s} {tuple(t.shape)}')
