#!/usr/bin/env python3
"""How far Winograd's transforms amplify bfloat16 rounding, at NET's conv2 shape.

One 32-channel 26x26 input (ReLU outputs of unit normals) and 64 He-scaled 3x3 filters,
convolved in float64 (the reference) and three ways with bfloat16 operands and float32
products: directly (the inputs and filters rounded), through Winograd F(2x2, 3x3) (what
tinynet runs: the transformed tiles and filters rounded) and through F(4x4, 3x3) (Lavin and
Gray's matrices). Prints each one's RMS and largest error relative to the output's RMS.
numpy only: python3 bench/winograd_bf16_error.py
"""
import numpy as np


def bf16(x):
    """x rounded to bfloat16 (nearest, ties to even), as float32."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)


F23 = (np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], float),
       np.array([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]], float),
       np.array([[1, 1, 1, 0], [0, 1, -1, -1]], float), 2)
F43 = (np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
                 [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], float),
       np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
                 [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], float),
       np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], float), 4)


def direct(x, w):
    c, h, _ = x.shape
    out = np.zeros((w.shape[0], h - 2, h - 2))
    for i in range(3):
        for j in range(3):
            out += np.einsum('oc,chw->ohw', w[:, :, i, j], x[:, i:i + h - 2, j:j + h - 2])
    return out


def winograd(x, w, matrices):
    bt, g, at, m = matrices
    c, h, _ = x.shape
    u = bf16(np.einsum('ak,ockl,bl->ocab', g, w.astype(float), g)).astype(float)
    tiles = (h - 2) // m
    out = np.zeros((w.shape[0], tiles * m, tiles * m))
    for ty in range(tiles):
        for tx in range(tiles):
            d = x[:, ty * m:ty * m + m + 2, tx * m:tx * m + m + 2]
            v = bf16(np.einsum('ak,ckl,bl->cab', bt, d.astype(np.float32), bt)).astype(float)
            prod = np.einsum('ocab,cab->oab', u, v).astype(np.float32).astype(float)
            out[:, ty * m:ty * m + m, tx * m:tx * m + m] = np.einsum('ia,oab,jb->oij', at, prod, at)
    return out


def main():
    rng = np.random.default_rng(0)
    x = np.maximum(rng.standard_normal((32, 26, 26)), 0).astype(np.float32)
    w = (rng.standard_normal((64, 32, 3, 3)) * np.sqrt(2 / (32 * 9))).astype(np.float32)
    ref = direct(x.astype(float), w.astype(float))
    scale = np.sqrt(np.mean(ref**2))
    runs = [('direct, bf16 operands', direct(bf16(x).astype(float), bf16(w).astype(float))),
            ('Winograd F(2x2, 3x3), bf16 tiles', winograd(x, w, F23)),
            ('Winograd F(4x4, 3x3), bf16 tiles', winograd(x, w, F43)[:, :24, :24])]
    for name, y in runs:
        err = y - ref
        print(f'{name:34s} RMS error {np.sqrt(np.mean(err**2)) / scale:.2e}, '
              f'largest {np.max(np.abs(err)) / scale:.2e} (of the output RMS)')


if __name__ == '__main__':
    main()
