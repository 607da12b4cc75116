#!/usr/bin/env python3
"""What else was tried to raise Fashion-MNIST's pseudo-labels at 1% labels (issue 15), in numpy.

Spreading over the 10-NN cosine graph of the square roots of the pixels, PCA-200 whitened, labels
82.9% of the unlabelled rows right (inca, seed 0); inca's default now (--ssl auto -> sgc, SIGN's
hops 0, 1, 2, 4, 8, 16 over the same graph) 83.9%, and SGC then Correct and Smooth (--ssl cs)
84.2%. The issue asks for 84%. This
script measures the alternatives on the same graph, so the figures in the README and the issue's
note can be reproduced: edge weights, alpha, class mass normalisation, within-class whitening from
the visible labels, seed expansion, harmonic (clamped) propagation, Poisson learning, SGC (a
softmax regression on features smoothed K hops over the graph, Wu et al. 2019), SIGN-style hops
side by side (inca's --ssl sgc), SIGN then Correct and Smooth (Huang et al. 2021, inca's --ssl
cs), SGC and spreading averaged, and the ceiling:
leave-one-out kNN votes on the same graph with every label visible. Three labelled draws (60 per
class, numpy's seeds 0-2, not inca's draw) for the main rows.

Usage: python3 bench/labelprop_variants.py [FMNIST_DIR] (numpy and scipy in a venv). About 10
minutes on 2 cores."""
import os
import sys

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from labelprop_ref import idx, pca  # noqa: E402

C = 10


def knn(z, k):
    """k nearest by cosine, nearest first, with their similarities"""
    z = z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-12)
    n = len(z)
    nb = np.empty((n, k), np.int64)
    sv = np.empty((n, k), np.float32)
    for i in range(0, n, 4096):
        s = z[i:i + 4096] @ z.T
        s[np.arange(s.shape[0]), np.arange(i, i + s.shape[0])] = -9
        p = np.argpartition(-s, k, axis=1)[:, :k]
        ps = np.take_along_axis(s, p, 1)
        o = np.argsort(-ps, 1)
        nb[i:i + 4096] = np.take_along_axis(p, o, 1)
        sv[i:i + 4096] = np.take_along_axis(ps, o, 1)
    return nb, sv


def graph(nb, sv, gamma):
    """W = A ∪ Aᵀ, edges weighted cos^gamma (gamma 0: the pattern inca spreads over)"""
    n, k = nb.shape
    w = np.ones(n * k) if gamma == 0 else np.maximum(sv.ravel(), 0) ** gamma
    W = sp.csr_matrix((w, (np.repeat(np.arange(n), k), nb.ravel())), shape=(n, n))
    return W.maximum(W.T).tocsr()


def sym(W):
    d = 1 / np.sqrt(np.maximum(np.asarray(W.sum(1)).ravel(), 1e-12))
    return sp.diags(d) @ W @ sp.diags(d)


def onehot(y, lab, n):
    y0 = np.zeros((n, C))
    y0[lab, y[lab]] = 1
    return y0


def spread(S, y0, alpha=0.9, iters=50):
    f = y0.copy()
    for _ in range(iters):
        f = alpha * (S @ f) + (1 - alpha) * y0
    return f


def norm(f):
    f = np.maximum(f, 0)
    return f / np.maximum(f.sum(1, keepdims=True), 1e-12)


def softmax_reg(X, y, lab, lam, iters=300, lr=0.01):
    """multinomial logistic regression on the labelled rows, Adam, L2 lam; logits for every row"""
    Y = np.zeros((len(lab), C))
    Y[np.arange(len(lab)), y[lab]] = 1
    Xl = X[lab]
    Wt = np.zeros((X.shape[1], C))
    m1 = np.zeros_like(Wt)
    m2 = np.zeros_like(Wt)
    for t in range(1, iters + 1):
        s = Xl @ Wt
        s -= s.max(1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(1, keepdims=True)
        g = Xl.T @ (p - Y) / len(lab) + lam * Wt
        m1 = 0.9 * m1 + 0.1 * g
        m2 = 0.999 * m2 + 0.001 * g * g
        Wt -= lr * (m1 / (1 - 0.9 ** t)) / (np.sqrt(m2 / (1 - 0.999 ** t)) + 1e-8)
    return X @ Wt


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/datasets/fashion-mnist"
    x = idx(d + "/train-images-idx3-ubyte.gz").reshape(60000, -1).astype(np.float32)
    y = idx(d + "/train-labels-idx1-ubyte.gz").astype(np.int64)
    n = len(y)
    draws = []
    for seed in (0, 1, 2):
        rng = np.random.default_rng(seed)
        lab = np.concatenate([rng.choice(np.where(y == k)[0], 60, replace=False) for k in range(C)])
        m = np.ones(n, bool)
        m[lab] = False
        draws.append((lab, m))

    def acc(f, m):
        return (f.argmax(1)[m] == y[m]).mean()

    def row(name, fn):
        a = [acc(fn(lab), m) for lab, m in draws]
        print(f"{name:58s} {' '.join(f'{v:.4f}' for v in a)}  mean {np.mean(a):.4f}", flush=True)

    print(f"{'variant (accuracy on the unlabelled rows)':58s} seed0  seed1  seed2", flush=True)
    z = pca(np.sqrt(x), 200, True).astype(np.float32)
    nb, sv = knn(z, 10)
    S0, S3 = sym(graph(nb, sv, 0)), sym(graph(nb, sv, 3))
    row("spreading, sqrt PCA-200 whitened", lambda lab: spread(S0, onehot(y, lab, n)))
    zw = pca(x, 200, True).astype(np.float32)
    nbw, svw = knn(zw, 10)
    Sw = sym(graph(nbw, svw, 0))
    row("spreading, PCA-200 whitened", lambda lab: spread(Sw, onehot(y, lab, n)))
    row("ensemble of the two", lambda lab: norm(spread(S0, onehot(y, lab, n))) + norm(spread(Sw, onehot(y, lab, n))))
    row("spreading, edges cos^3", lambda lab: spread(S3, onehot(y, lab, n)))
    for a in (0.8, 0.99):
        row(f"spreading, alpha {a}", lambda lab: spread(S0, onehot(y, lab, n), alpha=a))

    def cmn(lab):
        q = norm(spread(S0, onehot(y, lab, n)))
        return q * ((np.bincount(y[lab], minlength=C) / len(lab)) / q.sum(0))
    row("class mass normalisation", cmn)

    def within(lab, s=0.5):
        zl, yl = z[lab], y[lab]
        r = zl - np.stack([zl[yl == k].mean(0) for k in range(C)])[yl]
        Swc = r.T @ r / len(zl)
        M = (1 - s) * Swc + s * np.eye(z.shape[1]) * np.trace(Swc) / z.shape[1]
        e, U = np.linalg.eigh(M)
        a, b = knn((z @ U / np.sqrt(e)).astype(np.float32), 10)
        return spread(sym(graph(a, b, 0)), onehot(y, lab, n))
    row("within-class whitening from the labels (shrink 0.5)", within)

    def expand(lab, share=0.5):
        f = norm(spread(S0, onehot(y, lab, n)))
        c, lbl = f.max(1), f.argmax(1)
        y1 = onehot(y, lab, n)
        for k in range(C):
            ik = np.where(lbl == k)[0]
            y1[ik[np.argsort(-c[ik])[:int(share * len(ik))]], k] = 1
        return spread(S0, y1)
    row("seed expansion (top 50% per class re-seeded)", expand)

    W0 = graph(nb, sv, 0)
    deg = np.asarray(W0.sum(1)).ravel()

    def harmonic(lab, iters=100):
        y0 = onehot(y, lab, n)
        P = sp.diags(1 / deg) @ W0
        f = y0.copy()
        for _ in range(iters):
            f = P @ f
            f[lab] = y0[lab]
        return f
    row("harmonic, clamped (100 iterations)", harmonic)

    def poisson(lab, iters=50):
        y0 = onehot(y, lab, n)
        b = np.zeros((n, C))
        b[lab] = y0[lab] - y0[lab].mean(0)
        u = np.zeros((n, C))
        for _ in range(iters):
            u = u + (b - (deg[:, None] * u - W0 @ u)) / deg[:, None]
        return u
    row("Poisson learning (50 iterations)", poisson)

    Sl = sym(W0 + sp.eye(n))   # SGC's operator: self-loops, then symmetric normalisation
    X = z.astype(np.float64)
    hops = {0: X}
    for K in range(1, 9):
        X = Sl @ X
        hops[K] = X

    def unit(a):
        return 10 * a / np.linalg.norm(a, axis=1, keepdims=True)
    X4, X8 = unit(hops[4]), unit(hops[8])
    row("SGC, K = 4, L2 0.03", lambda lab: softmax_reg(X4, y, lab, 0.03))
    row("SGC, K = 8, L2 0.03", lambda lab: softmax_reg(X8, y, lab, 0.03))
    sign = np.concatenate([unit(hops[k]) for k in (0, 2, 4, 8)], 1) / 2
    row("SIGN: hops 0, 2, 4, 8 side by side", lambda lab: softmax_reg(sign, y, lab, 0.03))
    X = hops[8]
    for K in range(9, 17):
        X = Sl @ X
    sign6 = np.concatenate([unit(hops[k]) for k in (0, 1, 2, 4, 8)] + [unit(X)], 1) / np.sqrt(6)
    row("SIGN: hops 0, 1, 2, 4, 8, 16 side by side (inca's --ssl sgc)", lambda lab: softmax_reg(sign6, y, lab, 0.03))
    S0 = sym(W0)

    def correct_smooth(lab, a_c=0.8, a_s=0.8):
        """Correct and Smooth (Huang et al. 2021) on SIGN's probabilities, autoscaled (inca's --ssl cs)"""
        s = softmax_reg(sign6, y, lab, 0.03)
        p = np.exp(s - s.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        y0 = onehot(y, lab, n)
        e = np.zeros((n, C))
        e[lab] = y0[lab] - p[lab]
        f = spread(S0, e, alpha=a_c)
        l1 = np.abs(f).sum(1, keepdims=True)
        scale = np.abs(e[lab]).sum(1).mean() / np.maximum(l1, 1e-300)
        scale[(l1 == 0) | (scale > 1000)] = 1.0   # as the authors' code: a faint residual stays as it is
        z = p + scale * f
        z[lab] = y0[lab]
        return spread(S0, z, alpha=a_s)
    row("SIGN, then Correct and Smooth (inca's --ssl cs)", correct_smooth)

    def probs(s):
        p = np.exp(s - s.max(1, keepdims=True))
        return p / p.sum(1, keepdims=True)
    row("SGC + spreading, probabilities averaged",
        lambda lab: probs(softmax_reg(X8, y, lab, 0.03)) + norm(spread(S0, onehot(y, lab, n))))
    votes = np.zeros((n, C))
    for j in range(10):
        np.add.at(votes, (np.arange(n), y[nb[:, j]]), 1.0)
    print(f"{'ceiling: leave-one-out 10-NN vote, every label visible':58s} {(votes.argmax(1) == y).mean():.4f}")


if __name__ == "__main__":
    main()
