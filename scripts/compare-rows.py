#!/usr/bin/env python3
"""Compare gostachio's query CSVs with the PyTorch peer's result rows.

Usage: compare-rows.py TORCH_JSON CSV... (each CSV named QUERY-*.csv, as
scripts/gpu-validate.sh writes them). Numbers match within 0.01 (the
answers' two decimals; the peer prints sums exactly and rounds only
averages), strings exactly. Exit status 1 on any difference.
"""
import csv
import json
import os
import sys
from decimal import Decimal, InvalidOperation


def same(a, b):
    try:
        return abs(Decimal(a) - Decimal(b)) <= Decimal("0.01")
    except InvalidOperation:
        return a == b


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    peer = {r["query"]: r["rows"] for r in json.load(open(sys.argv[1]))}
    bad = 0
    for path in sys.argv[2:]:
        q = os.path.basename(path).split("-")[0]
        rows = list(csv.reader(open(path)))[1:]
        want = peer.get(q)
        ok = want is not None and len(rows) == len(want) and all(
            len(r) == len(w) and all(same(a, b) for a, b in zip(r, w)) for r, w in zip(rows, want))
        print("%s: %s" % (path, "matches the PyTorch peer" if ok else "DIFFERS from the PyTorch peer"))
        bad += not ok
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
