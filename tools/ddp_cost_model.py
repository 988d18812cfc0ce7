#!/usr/bin/env python3
"""The allreduce cost model of docs/distributed.md, applied to the tutorials' models.

    python3 tools/ddp_cost_model.py [--step-seconds S ...] [--backward-share F]
    python3 tools/ddp_cost_model.py --wire-bytes PARAMETERS --hosts N [--zero]

--wire-bytes prints the bytes all N hosts together send per step for a model of PARAMETERS
float32 parameters: the ring allreduce of the gradients, 2 (N - 1) x 4 P (each host sends
2 (N - 1) / N of them), and with --zero (ZeroRedundancyOptimizer) the broadcast of every updated
parameter from its owner to the N - 1 others, (N - 1) x 4 P. Payload only: the headers of
TCP/IP and Ethernet come on top (a few percent).

Ring allreduce of S bytes over N hosts on links of bandwidth BW (bytes/s) with per-message
latency a, in k buckets (each bucket is its own ring of 2 (N - 1) messages):

    T(N) = 2 (N - 1) / N * S / BW  +  2 (N - 1) * k * a

Strong scaling of a fixed global batch whose step takes `step` seconds on one host: each of
N hosts computes step / N; the allreduce adds T(N), minus what overlaps backward: at most the
backward-share of the compute, and at most the hidden-share of T(N) (what the overlap was
measured to hide). Prints markdown tables.
"""
import argparse
import math

MB = 1024 * 1024
# Parameters (float32 gradients) of the tutorials' models at their sizes (docs/tutorial_*.md).
MODELS = [('tutorial B (seed-b, vocab 5000)', 51.8e6), ('tutorial C (winter)', 44.2e6),
          ('tutorial D (torch defaults)', 44.1e6), ('tutorial A, examples/reverse', 0.2e6)]
# Link: (name, bits per second, latency per message in seconds) — typical TCP/Ethernet numbers,
# RDMA for 100 Gbit/s.
LINKS = [('1 Gbit/s', 1e9, 50e-6), ('10 Gbit/s', 10e9, 20e-6), ('25 Gbit/s', 25e9, 10e-6), ('100 Gbit/s', 100e9, 3e-6)]
HOSTS = [2, 4, 8, 16, 32, 64]


def allreduce_seconds(nbytes, hosts, bits_per_s, latency, bucket_bytes=25 * MB):
    buckets = max(1, math.ceil(nbytes / bucket_bytes))
    bandwidth_term = 2 * (hosts - 1) / hosts * nbytes / (bits_per_s / 8)
    return bandwidth_term + 2 * (hosts - 1) * buckets * latency


def wire_bytes(params, hosts, zero=False):
    allreduce = 2 * (hosts - 1) * 4 * params
    return allreduce + ((hosts - 1) * 4 * params if zero else 0)


def fmt_s(s):
    return f'{s * 1e3:.0f} ms' if s >= 0.01 else f'{s * 1e3:.1f} ms' if s >= 1e-4 else f'{s * 1e6:.0f} us'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--step-seconds', type=float, nargs='+', default=[14.3, 0.3],
                    help="one host's step at the global batch: seed-b batch 64 on this machine at 2 threads "
                         "(docs/performance.md), and a host ~50x faster (a GPU)")
    ap.add_argument('--backward-share', type=float, default=0.6, help='share of the step that is backward')
    ap.add_argument('--hidden-share', type=float, default=1.0,
                    help='the largest share of the allreduce the overlap hides (1: all of it, if backward is long '
                         'enough; docs/distributed.md measured 0.04-0.87 on a loaded 2-core machine)')
    ap.add_argument('--wire-bytes', type=float, metavar='PARAMETERS', help='print the bytes sent per step and stop')
    ap.add_argument('--hosts', type=int, default=2)
    ap.add_argument('--zero', action='store_true', help='with --wire-bytes: ZeroRedundancyOptimizer')
    a = ap.parse_args()
    if not 0 <= a.hidden_share <= 1:
        ap.error(f'--hidden-share must be in [0, 1], got {a.hidden_share}')
    if a.wire_bytes is not None:
        if a.hosts < 1 or not a.wire_bytes >= 0:
            ap.error(f'--wire-bytes needs PARAMETERS >= 0 and --hosts >= 1, got {a.wire_bytes} and {a.hosts}')
        print(f'{wire_bytes(a.wire_bytes, a.hosts, a.zero):.0f}')
        return

    print('Allreduce time per step (ring, 25 MB buckets):\n')
    print('| model | gradients | link | ' + ' | '.join(f'N = {n}' for n in HOSTS) + ' |')
    print('|---|---|---|' + '---|' * len(HOSTS))
    for name, params in MODELS:
        for link, bps, lat in LINKS:
            cells = [fmt_s(allreduce_seconds(params * 4, n, bps, lat)) for n in HOSTS]
            print(f'| {name} | {params * 4 / 1e6:.1f} MB | {link} | ' + ' | '.join(cells) + ' |')

    params = MODELS[0][1]
    for step in a.step_seconds:
        print(f'\nStrong scaling of tutorial B at a global batch whose step takes {step} s on one host: speedup '
              f'over 1 host (overlap hides up to the backward share {a.backward_share} of the compute), and the '
              f'largest N still at 50 % efficiency (speedup >= N / 2), where it stops scaling:\n')
        print('| link | ' + ' | '.join(f'N = {n}' for n in HOSTS) + ' | stops scaling after |')
        print('|---|' + '---|' * len(HOSTS) + '---|')
        for link, bps, lat in LINKS:
            cells, last_efficient = [], 1
            for n in [2 ** i for i in range(1, 13)]:
                compute = step / n
                t = allreduce_seconds(params * 4, n, bps, lat)
                exposed = max(0.0, t - min(a.backward_share * compute, a.hidden_share * t))
                speedup = step / (compute + exposed)
                if speedup >= n / 2:
                    last_efficient = n
                if n in HOSTS:
                    cells.append(f'{speedup:.1f}x')
            print(f'| {link} | ' + ' | '.join(cells) + f' | N = {last_efficient} |')

if __name__ == '__main__':
    main()
