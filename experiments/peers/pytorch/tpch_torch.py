#!/usr/bin/env python3
"""TPC-H Q1 and Q6 written plainly in PyTorch: the peer of gostachio's GPU
backend (PystachIO is built on PyTorch).

It reads the same files as the engine: a dataset made by `gostachio gen`
(lineitem.arrow, an Arrow IPC file with one record batch per stored chunk,
decimals as int64 scaled by 100, dates as date32), memory-mapped by
pyarrow, only the query's columns touched. Each chunk's columns become
tensors, go to the GPU and are filtered and aggregated there with exact
int64 arithmetic; the per-chunk partial sums accumulate on the GPU.

Two loaders:
  serial    read a chunk, copy it, compute, then the next chunk;
  prefetch  a thread reads and pins the next chunks (queue of --depth)
            while the GPU computes, copies are non_blocking.

Every run starts cold: the file's pages are dropped from the page cache
(posix_fadvise DONTNEED), as the engine reads with O_DIRECT. The results
are checked against the official answers (tpch/answers/sf1) when the data
is SF1. Output: one line per run, and with --json a JSON list.
"""
import argparse
import json
import os
import queue
import statistics
import sys
import threading
import time

import numpy as np
import pyarrow as pa
import torch

DAY0 = np.datetime64("1970-01-01")


def days(s):
    return int((np.datetime64(s) - DAY0).astype(int))


Q6_LO, Q6_HI = days("1994-01-01"), days("1995-01-01")
Q1_CUT = days("1998-09-02")  # 1998-12-01 - 90 days

COLUMNS = {
    "q1": ["l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_returnflag", "l_linestatus", "l_shipdate"],
    "q6": ["l_quantity", "l_extendedprice", "l_discount", "l_shipdate"],
}


def column_array(arr):
    """A numpy view of a fixed-width column, or the byte codes of a column
    of one-byte strings."""
    t = arr.type
    if pa.types.is_string(t):
        offs = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=len(arr) + 1, offset=4 * arr.offset)
        if offs[-1] - offs[0] != len(arr):
            raise SystemExit("tpch_torch: %s: strings longer than one byte" % arr)
        return np.frombuffer(arr.buffers()[2], dtype=np.uint8, count=len(arr), offset=int(offs[0]))
    width = {pa.int64(): (np.int64, 8), pa.int32(): (np.int32, 4), pa.date32(): (np.int32, 4)}[t]
    return np.frombuffer(arr.buffers()[1], dtype=width[0], count=len(arr), offset=width[1] * arr.offset)


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def chunks(path, cols):
    """Yields each record batch's columns as numpy arrays (read through the
    memory map: only the touched pages come from storage)."""
    with pa.memory_map(path) as src:
        reader = pa.ipc.open_file(src)
        names = reader.schema.names
        idx = [names.index(c) for c in cols]
        for i in range(reader.num_record_batches):
            b = reader.get_batch(i)
            # Copy out of the map: the pages are read here, not in the copy
            # to the GPU (a pageable copy would read them anyway).
            yield [np.array(column_array(b.column(k)), copy=True) for k in idx]


def q6_partial(t, acc):
    qty, price, disc, ship = t
    m = (ship >= Q6_LO) & (ship < Q6_HI) & (disc >= 5) & (disc <= 7) & (qty < 2400)
    acc += (price[m] * disc[m]).sum()


def q1_partial(t, acc):
    qty, price, disc, tax, rf, ls, ship = t
    m = ship <= Q1_CUT
    k = (rf[m].long() << 8) | ls[m].long()
    price, disc, tax, qty = price[m], disc[m], tax[m], qty[m]
    dp = price * (100 - disc)
    vals = torch.stack([qty, price, dp, dp * (100 + tax), disc, torch.ones_like(qty)])
    acc.index_add_(1, k, vals)


def run_query(q, path, device, loader, depth):
    cols = COLUMNS[q]
    if q == "q6":
        acc = torch.zeros((), dtype=torch.int64, device=device)
        fn = q6_partial
    else:
        acc = torch.zeros((6, 1 << 16), dtype=torch.int64, device=device)
        fn = q1_partial
    torch.cuda.synchronize()
    drop_cache(path)
    start = time.perf_counter()
    if loader == "serial":
        for arrays in chunks(path, cols):
            fn([torch.from_numpy(a).to(device) for a in arrays], acc)
            torch.cuda.synchronize()
    else:
        q_ = queue.Queue(maxsize=depth)

        def produce():
            try:
                for arrays in chunks(path, cols):
                    q_.put([torch.from_numpy(a).pin_memory() for a in arrays])
            finally:
                q_.put(None)

        th = threading.Thread(target=produce, daemon=True)
        th.start()
        while True:
            host = q_.get()
            if host is None:
                break
            fn([h.to(device, non_blocking=True) for h in host], acc)
        th.join()
    torch.cuda.synchronize()
    secs = time.perf_counter() - start
    return secs, acc.cpu()


def fmt_dec(v, scale, places=2):
    """v / 10^scale rounded half away from zero to places."""
    q = 10 ** (scale - places)
    r = (abs(v) + q // 2) // q
    s = "-" if v < 0 else ""
    return "%s%d.%0*d" % (s, r // 10**places, places, r % 10**places)


def result_rows(q, acc):
    if q == "q6":
        return [[fmt_dec(int(acc), 4, 4)]]
    rows = []
    for k in torch.nonzero(acc[5]).flatten().tolist():
        qty, price, dp, ch, disc, n = [int(x) for x in acc[:, k]]
        rows.append([chr(k >> 8), chr(k & 255), fmt_dec(qty, 2), fmt_dec(price, 2), fmt_dec(dp, 4),
                     fmt_dec(ch, 6), "%.2f" % (qty / 100 / n), "%.2f" % (price / 100 / n), "%.2f" % (disc / 100 / n), str(n)])
    rows.sort()
    return rows


def check(q, rows, answers):
    """Compares with the official answer: numbers to 2 places (Q6: 4)."""
    path = os.path.join(answers, "q%02d.csv" % int(q[1:]))
    if not os.path.exists(path):
        return None
    with open(path) as f:
        want = [line.rstrip("\n").split("|") for line in f][1:]
    want = [w for w in want if w != [""]]
    if len(want) != len(rows):
        return False
    for g, w in zip(rows, want):
        for a, b in zip(g, w):
            try:
                if abs(float(a) - float(b)) > 0.011:
                    return False
            except ValueError:
                if a != b:
                    return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="dataset directory (gostachio gen)")
    ap.add_argument("--queries", default="q1,q6")
    ap.add_argument("--loaders", default="serial,prefetch")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--depth", type=int, default=4, help="prefetch queue depth (chunks)")
    ap.add_argument("--answers", default="", help="official answers folder (checked when given)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    path = os.path.join(a.data, "lineitem.arrow")
    if not os.path.exists(path):
        sys.exit("tpch_torch: no %s (make the dataset with gostachio gen)" % path)
    if not torch.cuda.is_available():
        sys.exit("tpch_torch: PyTorch sees no GPU")
    device = torch.device("cuda", 0)
    name = torch.cuda.get_device_name(device)
    out = []
    for q in a.queries.split(","):
        for loader in a.loaders.split(","):
            run_query(q, path, device, loader, a.depth)  # warm-up (CUDA init, kernels)
            times = []
            rows = None
            for _ in range(a.rounds):
                secs, acc = run_query(q, path, device, loader, a.depth)
                times.append(secs)
                rows = result_rows(q, acc)
            ok = check(q, rows, a.answers) if a.answers else None
            rec = {"query": q, "loader": loader, "device": name, "seconds": statistics.median(times),
                   "all_seconds": times, "answer_ok": ok, "rows": rows, "torch": torch.__version__, "pyarrow": pa.__version__}
            out.append(rec)
            print("%s %s: median %.3f s over %d rounds (%s), answer %s" % (
                q, loader, rec["seconds"], a.rounds, ", ".join("%.3f" % t for t in times),
                {None: "not checked", True: "matches", False: "DIFFERS"}[ok]), file=sys.stderr)
            if ok is False:
                print("  got %s" % rows, file=sys.stderr)
    if a.json:
        json.dump(out, sys.stdout, indent=2)
        print()


if __name__ == "__main__":
    main()
