#!/usr/bin/env python3
"""Re-price the launches of this folder two ways, from the repository root:

  python3 docs/validate/xeon-2026-11-27-fabric-curve/reprice_curve.py [--sub 'REGEX=>REPL']

V0, one fabric efficiency (bench-sim's default): each launch's own profile
as bench-sim wrote it, run by `gostachio sim` with the launch's disk ratio.
V1, the efficiency by the exchange's size: the same profile at the link's
full payload rate, plus nic_efficiency fitted to the bursts timed just
before the launch (`gostachio cluster bench-fabric --from SWEEP --profile
FULL --json`). --sub rewrites every profile first (a what-if: e.g.
'device_qd: 32=>device_qd: 4').
"""
import glob, json, os, re, statistics, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get('GOSTACHIO', './bin/gostachio')
subs = [a.split('=>', 1) for a in sys.argv[2::2]] if '--sub' in sys.argv else []
tmp = tempfile.mkdtemp(prefix='reprice-curve-')


def sim(profile, query, disk):
    out = subprocess.run([BIN, 'sim', '--profile', profile, '--nodes', '4', '--data', 'out/data/sf1', '--query', query,
                          '--policy', 'overlap', '--json', '--disk-speedup', str(disk)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)['makespan_ns'] / 1e9


def write(name, text):
    path = os.path.join(tmp, name)
    with open(path, 'w') as f:
        f.write(text)
    return path


totals = {}
for launch in sorted(glob.glob(os.path.join(HERE, 'launch-*.json'))):
    base = launch[:-5]
    name = os.path.basename(base)[len('launch-'):]
    rows = json.load(open(launch))
    y = open(base + '.yaml').read()
    for a, b in subs:
        y = re.sub(a, b, y)
    m = re.search(r'\n  bandwidth: (\d+)  # the TCP payload rate', y)
    full = round(int(m.group(1)) / rows[0]['fabric_efficiency'])
    yfull = y[:m.start(1)] + str(full) + y[m.end(1):]
    pfull = write(name + '-full.yaml', yfull)
    fits = json.loads(subprocess.run([BIN, '--json', 'cluster', 'bench-fabric', '--from', base.replace('launch-', 'sweeps-') + '-before.json',
                                      '--profile', pfull], capture_output=True, text=True, check=True).stdout)
    curve = 'nic_efficiency:\n' + ''.join('  - {pair_bytes: %d, efficiency: %.4g}\n' % (p['pair_bytes'], p['fit']['efficiency']) for p in fits)
    profiles = {'V0': write(name + '-V0.yaml', y), 'V1': write(name + '-V1.yaml', yfull.rstrip('\n') + '\n' + curve)}
    print('%-26s curve %s' % (name, ' '.join('%dK:%.2f' % (p['pair_bytes'] >> 10, p['fit']['efficiency']) for p in fits)))
    for v, p in profiles.items():
        errs = []
        for r in rows:
            med = r['engine_median_ci95']['median']
            errs.append((r['query'], (sim(p, r['query'], r['disk_ratio']) - med) / med))
        print('   %s %s' % (v, '  '.join('%s %+5.1f%%' % (q, 100 * e) for q, e in errs)))
        totals.setdefault((rows[0]['link'], v), []).append(errs)
print()
for (link, v), launches in sorted(totals.items()):
    flat = [abs(e) for errs in launches for _, e in errs]
    print('%-24s %s: %d of %d cases within 10%%, every query in %d of %d launches, median |error| %.1f%%' % (
        link, v, sum(e <= 0.1 for e in flat), len(flat), sum(all(abs(e) <= 0.1 for _, e in errs) for errs in launches),
        len(launches), 100 * statistics.median(flat)))
