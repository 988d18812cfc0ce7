#!/usr/bin/python3
"""Writes the PyTorch fixtures of xtgrad's higher-order autograd (docs/higher_order.md) as .npy files.

  /usr/bin/python3 tools/make_higher_order_fixtures.py --out tests/fixtures/higher_order

Each case is a folder of float32 inputs and the float64-computed results torch gives with
create_graph=True, torch.autograd.functional and torch.autograd.forward_ad, rounded to float32:

  mlp_hessian/       the full Hessian of a 2-layer tanh MLP's MSE loss in its 4 parameters (flattened)
  gradient_penalty/  an MLP critic's mean |dD/dx|^2 over a batch, and its gradient in the critic's weights
  maml_sine/         one MAML step on sine regression: inner SGD step, outer loss and its gradient in the initial weights
  layer_norm_a_hvp/  tutorial A's LayerNorm (a_2 (x - mean) / (std + eps) + b_2, unbiased std): H v of sum(LN(x) * r)
  jvp_*/             jvp (forward_ad) and the Jacobian (jacrev) of softmax, layer_norm, scaled dot-product attention
                     and multi-head self-attention (F.multi_head_attention_forward, 2 heads, its 5 weights inputs too)
  transformer_c_hvp/ tutorial C's Transformer in the state of tests/fixtures/small/transformer_c: H v of sum(logits * R)

PyTorch is needed only here; the suite reads the committed files (tests/higher_order/parity_test.cpp).
"""
import argparse
import os
import sys

os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')
sys.dont_write_bytecode = True

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.autograd.forward_ad as fwAD  # noqa: E402
from torch.autograd.functional import hessian, hvp, jacobian  # noqa: E402

torch.set_default_dtype(torch.float64)


def rand(gen, *shape, scale=1.0):
    return (torch.randn(*shape, generator=gen, dtype=torch.float32) * scale).double()


def save(folder, **arrays):
    os.makedirs(folder, exist_ok=True)
    for name, a in arrays.items():
        np.save(os.path.join(folder, name + '.npy'), a.detach().numpy().astype(np.float32))


def mlp(params, x):
    w1, b1, w2, b2 = params
    return torch.tanh(x @ w1.T + b1) @ w2.T + b2


def mlp_hessian(out, gen):
    x, target = rand(gen, 5, 3), rand(gen, 5, 2)
    params = [rand(gen, 4, 3, scale=0.5), rand(gen, 4, scale=0.5), rand(gen, 2, 4, scale=0.5), rand(gen, 2, scale=0.5)]
    sizes = [p.numel() for p in params]

    def loss_of_flat(flat):
        ps, at = [], 0
        for p, n in zip(params, sizes):
            ps.append(flat[at:at + n].view_as(p))
            at += n
        return ((mlp(ps, x) - target) ** 2).mean()

    flat = torch.cat([p.reshape(-1) for p in params])
    save(out, x=x, target=target, w1=params[0], b1=params[1], w2=params[2], b2=params[3],
         loss=loss_of_flat(flat), hessian=hessian(loss_of_flat, flat))


def gradient_penalty(out, gen):
    x = rand(gen, 6, 3)
    params = [rand(gen, 8, 3, scale=0.7), rand(gen, 8, scale=0.7), rand(gen, 1, 8, scale=0.7), rand(gen, 1, scale=0.7)]
    for p in params:
        p.requires_grad_(True)
    xr = x.clone().requires_grad_(True)
    d = mlp(params, xr).sum()
    (gx,) = torch.autograd.grad(d, xr, create_graph=True)
    penalty = (gx ** 2).sum(dim=1).mean()
    # the output bias does not reach dD/dx: its gradient is zero (allow_unused)
    grads = [torch.zeros_like(p) if g is None else g
             for p, g in zip(params, torch.autograd.grad(penalty, params, allow_unused=True))]
    save(out, x=x, w1=params[0], b1=params[1], w2=params[2], b2=params[3], penalty=penalty,
         grad_w1=grads[0], grad_b1=grads[1], grad_w2=grads[2], grad_b2=grads[3])


def maml_sine(out, gen, inner_lr=0.1):
    # support and query points of one sine task y = a sin(x + phase)
    amplitude, phase = 1.7, 0.4
    xs = torch.linspace(-3, 3, 7).double().float().double().reshape(7, 1)
    xq = torch.linspace(-2.5, 2.8, 9).double().float().double().reshape(9, 1)
    ys, yq = amplitude * torch.sin(xs + phase), amplitude * torch.sin(xq + phase)
    params = [rand(gen, 16, 1, scale=0.8), rand(gen, 16, scale=0.5), rand(gen, 1, 16, scale=0.3), rand(gen, 1, scale=0.1)]
    for p in params:
        p.requires_grad_(True)
    inner = ((mlp(params, xs) - ys) ** 2).mean()
    grads = torch.autograd.grad(inner, params, create_graph=True)
    adapted = [p - inner_lr * g for p, g in zip(params, grads)]
    outer = ((mlp(adapted, xq) - yq) ** 2).mean()
    outer_grads = torch.autograd.grad(outer, params)
    save(out, xs=xs, ys=ys, xq=xq, yq=yq, w1=params[0], b1=params[1], w2=params[2], b2=params[3],
         inner_loss=inner, outer_loss=outer, grad_w1=outer_grads[0], grad_b1=outer_grads[1],
         grad_w2=outer_grads[2], grad_b2=outer_grads[3])


def layer_norm_a_hvp(out, gen, eps=1e-6):
    x, a2, b2 = rand(gen, 3, 5), 1 + rand(gen, 5, scale=0.3), rand(gen, 5, scale=0.3)
    r = rand(gen, 3, 5)
    vx, va, vb = rand(gen, 3, 5), rand(gen, 5), rand(gen, 5)

    def f(x, a2, b2):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return ((a2 * (x - mean) / (std + eps) + b2) * r).sum()

    value, (hx, ha, hb) = hvp(f, (x, a2, b2), (vx, va, vb))
    save(out, x=x, a_2=a2, b_2=b2, r=r, v_x=vx, v_a=va, v_b=vb, value=value, hvp_x=hx, hvp_a=ha, hvp_b=hb)


def jvp_case(out, f, inputs, gen):
    tangents = [rand(gen, *t.shape) for t in inputs]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(p, t) for p, t in zip(inputs, tangents)]
        y, jv = fwAD.unpack_dual(f(*duals))
    jac = jacobian(f, tuple(inputs))
    arrays = {'output': y, 'jvp': jv}
    for i, (p, t, j) in enumerate(zip(inputs, tangents, jac)):
        arrays[f'input{i}'] = p
        arrays[f'tangent{i}'] = t
        arrays[f'jacobian{i}'] = j
    save(out, **arrays)


def jvp_multihead_attention(out, gen):
    # self-attention of x (L 3, N 2, E 4), 2 heads, no mask or dropout; the weights are inputs too
    def mha(x, in_w, in_b, out_w, out_b):
        y, _ = torch.nn.functional.multi_head_attention_forward(
            x, x, x, 4, 2, in_w, in_b, None, None, False, 0.0, out_w, out_b, training=False, need_weights=False)
        return y

    inputs = [rand(gen, 3, 2, 4), rand(gen, 12, 4, scale=0.5), rand(gen, 12, scale=0.1), rand(gen, 4, 4, scale=0.5),
              rand(gen, 4, scale=0.1)]
    jvp_case(out, mha, inputs, gen)


def jvp_cases(out_root, gen):
    def attention(q, k, v):
        scores = q @ k.transpose(-2, -1) / np.sqrt(q.shape[-1])
        mask = torch.triu(torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool), diagonal=1)
        return torch.softmax(scores.masked_fill(mask, float('-inf')), -1) @ v

    cases = {
        'jvp_softmax': (lambda x: torch.softmax(x, -1), [rand(gen, 2, 5)]),
        'jvp_layer_norm': (lambda x, w, b: torch.nn.functional.layer_norm(x, (4,), w, b), [rand(gen, 3, 4), rand(gen, 4), rand(gen, 4)]),
        'jvp_attention': (attention, [rand(gen, 2, 3, 4), rand(gen, 2, 3, 4), rand(gen, 2, 3, 2)]),
    }
    for name, (f, inputs) in cases.items():
        jvp_case(os.path.join(out_root, name), f, inputs, gen)


def transformer_c_hvp(out, gen, fixture):
    # tutorial C's Transformer at the suite's small sizes, in the state of its parity fixture: H v
    # of loss = sum(logits * R) in every trainable parameter, along a random v
    import json
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from fixtures import modules
    meta = json.load(open(os.path.join(fixture, 'meta.json')))
    torch.set_default_dtype(torch.float32)
    model, call = modules.build(meta['module'], meta['config'], meta.get('options'))
    arrays = {f[len('param.'):-4]: np.load(os.path.join(fixture, f)) for f in os.listdir(fixture)
              if f.startswith('param.') and f.endswith('.npy')}
    modules.load_state(model, arrays)
    model = model.double()
    inputs = {f[len('input.'):-4]: torch.from_numpy(np.load(os.path.join(fixture, f)))
              for f in os.listdir(fixture) if f.startswith('input.')}
    R = torch.from_numpy(np.load(os.path.join(fixture, 'R.npy'))).double()
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    params = [p for _, p in named]
    v = [rand(gen, *p.shape) for p in params]
    logits, _ = call(model, inputs)
    grads = torch.autograd.grad((logits * R).sum(), params, create_graph=True)
    hv = torch.autograd.grad(grads, params, grad_outputs=v, allow_unused=True)
    hv = [torch.zeros_like(p) if h is None else h for p, h in zip(params, hv)]
    arrays = {}
    for (name, _), vi, hi in zip(named, v, hv):
        arrays['v.' + name] = vi
        arrays['hvp.' + name] = hi
    save(out, **arrays)
    torch.set_default_dtype(torch.float64)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--out', required=True, help='the fixtures folder (tests/fixtures/higher_order)')
    p.add_argument('--seed', type=int, default=0)
    a = p.parse_args()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(a.seed)
    mlp_hessian(os.path.join(a.out, 'mlp_hessian'), gen)
    gradient_penalty(os.path.join(a.out, 'gradient_penalty'), gen)
    maml_sine(os.path.join(a.out, 'maml_sine'), gen)
    layer_norm_a_hvp(os.path.join(a.out, 'layer_norm_a_hvp'), gen)
    jvp_cases(a.out, gen)
    transformer_c_hvp(os.path.join(a.out, 'transformer_c_hvp'), gen,
                      os.path.join(os.path.dirname(os.path.abspath(a.out)), 'small', 'transformer_c'))
    # its own generator, so adding it left every fixture above as it was
    jvp_multihead_attention(os.path.join(a.out, 'jvp_multihead_attention'), torch.Generator().manual_seed(a.seed + 1))


if __name__ == '__main__':
    main()
