#!/usr/bin/python3
"""Regenerate the timing/ test fixtures (run from timing/testdata/).

Our own synthetic data, not measurements: a small profiler results folder in
the two layouts the converter accepts, the mocker-format profile that the
conversion of mocker.md §6.3 must produce from it (computed here with numpy,
independently of the Go code), and small hand-checkable .npz grids for the
interpolation tests.

Requires Debian's python3-numpy (/usr/bin/python3). Deterministic: no
randomness, so re-running gives byte-identical arrays.
"""
import json
import os

import numpy as np

RES = 100


def write_profiler(dirname):
    # Prefill: TTFT grows linearly with ISL plus a small deterministic wiggle
    # so the least-squares fit is not trivial.
    isl = np.array([128, 256, 512, 1024, 2048, 4096, 8192], dtype=np.float64)
    wiggle = np.array([0.4, -0.3, 0.2, -0.5, 0.6, -0.2, 0.1])
    ttft = 14.0 + 0.021 * isl + wiggle  # ms
    thpt = isl / (ttft / 1000.0)
    # Decode: ITL rises with KV usage and mildly with concurrency.
    max_kv = 200000
    xs, ys, zs = [], [], []
    for ctx in [512, 1024, 2048, 4096, 8192]:
        for usage in [0.05, 0.2, 0.4, 0.6, 0.8, 0.95]:
            kv = usage * max_kv
            n = kv / ctx
            itl = 6.5 + 0.01 * n + 4.0e-5 * kv + 0.05 * np.sin(ctx + usage * 10)
            xs.append(usage)
            ys.append(ctx)
            zs.append(itl)
    x, y, z = np.array(xs), np.array(ys, dtype=np.float64), np.array(zs)
    zt = (x * max_kv / y) / (z / 1000.0)
    pre = dict(prefill_isl=isl, prefill_ttft=ttft, prefill_thpt_per_gpu=thpt)
    dec = dict(x_kv_usage=x, y_context_length=y, z_itl=z, z_thpt_per_gpu=zt,
               max_kv_tokens=np.array([max_kv]))
    # Layout 1: selected_*_interpolation/raw_data.npz
    for sub, arrs in [("selected_prefill_interpolation", pre), ("selected_decode_interpolation", dec)]:
        os.makedirs(os.path.join(dirname, sub), exist_ok=True)
        np.savez(os.path.join(dirname, sub, "raw_data.npz"), **arrs)
    # Layout 2: the JSON fallbacks (ConfigMap form).
    jdir = dirname + "_json"
    os.makedirs(jdir, exist_ok=True)
    with open(os.path.join(jdir, "prefill_raw_data.json"), "w") as f:
        json.dump({k: v.tolist() for k, v in pre.items()}, f, indent=1)
    jd = {k: v.tolist() for k, v in dec.items()}
    jd["max_kv_tokens"] = max_kv
    with open(os.path.join(jdir, "decode_raw_data.json"), "w") as f:
        json.dump(jd, f, indent=1)
    return pre, dec


def convert(pre, dec, res=RES):
    """mocker.md §6.3 conversion, written independently of the Go code."""
    T = pre["prefill_isl"]
    w = pre["prefill_ttft"] / 1000.0
    A = np.stack([np.ones_like(T), T], axis=1)
    (pa, pb), *_ = np.linalg.lstsq(A, w, rcond=None)
    isl = np.linspace(T.min(), T.max(), res)
    ttft = 1000.0 * np.maximum(pa + pb * isl, 1e-6)

    kv = dec["x_kv_usage"] * dec["max_kv_tokens"][0]
    ctx = dec["y_context_length"]
    n = kv / ctx
    wd = dec["z_itl"] / 1000.0
    A = np.stack([np.ones_like(kv), n, kv], axis=1)
    (da, db, dc), *_ = np.linalg.lstsq(A, wd, rcond=None)
    assert dc >= 0 and db >= 0, (db, dc)  # the fixture needs no clamp
    akv = np.linspace(0, kv.max(), res)
    actx = np.linspace(1, ctx.max(), res)
    bs = np.maximum(1.0, akv[:, None] / actx[None, :])
    itl = 1000.0 * np.maximum(da + db * bs + dc * akv[:, None], 1e-6)
    return dict(prefill_isl=isl, prefill_ttft_ms=ttft, decode_active_kv_tokens=akv,
                decode_context_length=actx, decode_itl=itl)


def small():
    # Hand-checkable grid for the interpolation table tests.
    base = dict(
        prefill_isl=np.array([100.0, 200.0, 400.0]),
        prefill_ttft_ms=np.array([10.0, 20.0, 30.0]),
        decode_active_kv_tokens=np.array([0.0, 1000.0, 3000.0]),
        decode_context_length=np.array([100.0, 200.0]),
        # rows: active KV; cols: context. z = 5 + 0.002*kv + 0.01*ctx + 1e-5*kv*ctx/100 on the grid
        decode_itl=np.array([[6.0, 7.0], [8.0, 9.5], [12.0, 14.5]]),
    )
    np.savez("small.npz", **base)
    # Same data, decode_itl stored Fortran-ordered and axes as float32/int64.
    f = dict(base)
    f["decode_itl"] = np.asfortranarray(base["decode_itl"])
    f["prefill_isl"] = base["prefill_isl"].astype(np.int64)
    f["decode_context_length"] = base["decode_context_length"].astype(np.float32)
    np.savez_compressed("small_fortran.npz", **f)
    bad = dict(base)
    bad["decode_itl"] = np.zeros((3, 4))
    np.savez("bad_shape.npz", **bad)
    bad = dict(base)
    bad["prefill_ttft_ms"] = np.array([10.0, np.nan, 30.0])
    np.savez("nan.npz", **bad)
    bad = dict(base)
    bad["decode_context_length"] = np.array([200.0, 100.0])
    np.savez("decreasing.npz", **bad)
    bad = dict(base)
    del bad["decode_itl"]
    np.savez("missing.npz", **bad)


if __name__ == "__main__":
    pre, dec = write_profiler("profiler")
    np.savez("perf_data.npz", **convert(pre, dec))
    small()
