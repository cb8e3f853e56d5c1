#!/usr/bin/env python3
"""Re-price the 45 saved launches of issue 9 (launches/: each launch's rows
and the profile bench-sim derived for it) with this checkout's simulator,
from the repository root:

  python3 docs/validate/xeon-2026-11-27-faithful/reprice.py [--bin BIN]
      [--completion batch] [--tax own,10Gbit=0.30,1Gbit=0.40,100Mbit=0.165,queue=0.16]
      [--only new|old] [--ports] [--more DIR,...] [--pooled-fabric DIR,...]

Every launch is priced as bench-sim priced it by default (its profile,
its disk ratio alone, the network CPU from the interrupt figure), with
nvme.completion and node.cpu_tax taken out, and two what-ifs:
--completion sets nvme.completion in every profile; --tax sets
node.cpu_tax by link ('queue' names the 100 Mbit/s launches under a 2.5
MB port buffer), 'own' first: a launch that measured its own
(cpu_tax in its rows, the twenty-second session's) keeps it. --only new
keeps the launches that measured a tax, old the others. --ports adds
nic_line_rate and nic_port as bench-sim now derives them from the link
(engine/cluster/port.go) and refits the fabric's share to the launch's
own burst with them (cluster bench-fabric --from), or with
--pooled-fabric to the median of the burst rounds of every launch in
those folders at the same link (bench-sim --fabric-from). --more adds
the launches of other folders (the twenty-third session's). Prints every
launch's errors and, per link, the cases within 10%. About 10 s on 2
cores.
"""
import glob, json, os, re, statistics, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]


def opt(name, default=None):
    return args[args.index(name) + 1] if name in args else default


BIN = opt('--bin', './bin/gostachio')
completion = opt('--completion')
taxes = dict(kv.split('=') if '=' in kv else (kv, '') for kv in (opt('--tax') or '').split(',') if kv)
only = opt('--only')
pooled = opt('--pooled-fabric')  # DIR,...: fit the fabric share to the median of every launch's burst rounds at the same link
ports = '--ports' in args  # nic_line_rate and nic_port as bench-sim derives them, the fabric's share refitted
tmp = tempfile.mkdtemp(prefix='reprice-faithful-')


def link_key(link):
    return 'queue' if 'queue' in link else link.split(',')[0]


def sim(profile, query, disk):
    out = subprocess.run([BIN, 'sim', '--profile', profile, '--nodes', '4', '--data', 'out/data/sf1', '--query', query,
                          '--policy', 'overlap', '--json', '--disk-speedup', str(disk)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)['makespan_ns'] / 1e9


def with_ports(y, row, path):
    """y with bench-sim's port lines for row's link (engine/cluster/port.go)
    and its nic.bandwidth at the link's payload rate times the fabric's
    share fitted with them to the launch's own burst (or the pooled
    rounds, --pooled-fabric)."""
    link = row['link']
    rate = {'100Mbit': 100e6, '1Gbit': 1e9, '10Gbit': 10e9}[link.split(',')[0]] / 8
    m = re.search(r'queue=([0-9.]+)MiB', link)
    limit = round(float(m.group(1)) * 2**20) if m else int(rate * 0.020) + max(int(rate / 1000), 128 << 10)
    full = round(rate * 1448 / 1514)
    y = re.sub(r'(\nnic:[^\n]*\n  bandwidth: )[0-9.e+]+', lambda m: m.group(1) + str(full), y)
    y += 'nic_line_rate: %d\n' % full
    buffer, window = limit + (64 << 10), 256 << 10
    if 2 * window >= buffer:
        y += 'nic_port:\n  buffer: %d\n  window: %d\n  stall: %dms\n' % (buffer, window, round(200 + 1000 * limit / rate))
    if not row.get('fabric'):
        return y
    open(path, 'w').write(y)
    fb = path[:-5] + '-fabric.json'
    fabric = row['fabric']
    if pooled:
        fabric = json.loads(json.dumps(fabric))
        fabric['burst']['rounds_s'] = pool[link]
        fabric['burst']['median_s'] = statistics.median(pool[link])
    json.dump(fabric, open(fb, 'w'))
    out = subprocess.run([BIN, '--json', 'cluster', 'bench-fabric', '--link', link, '--from', fb, '--profile', path],
                         capture_output=True, text=True, check=True)
    e = json.loads(out.stdout)[0]['fit']['efficiency']
    return re.sub(r'(\nnic:[^\n]*\n  bandwidth: )[0-9.e+]+', lambda m: m.group(1) + str(round(full * e)), y)


def launch(path):
    name = os.path.basename(path)[:-5]
    rows = json.load(open(path))
    y = open(path[:-5] + '.yaml').read()
    if rows[0].get('net_cpu_cost_softirq'):
        y = re.sub(r'net_cpu_cost: [0-9.e+-]+', 'net_cpu_cost: %g' % rows[0]['net_cpu_cost_softirq'], y)
    y = re.sub(r'\n  completion: \w+[^\n]*', '', y)
    y = re.sub(r'\n  cpu_tax: [^\n]*', '', y)
    y = re.sub(r'\nnic_line_rate:[^\n]*', '', y)
    y = re.sub(r'\nnic_port:[^\n]*(\n  [^\n]*)*', '', y)
    if completion:
        y = re.sub(r'(\n  task_qd: \d+[^\n]*)', r'\1\n  completion: ' + completion, y)
    tax = taxes.get(link_key(rows[0]['link']))
    if 'own' in taxes and rows[0].get('cpu_tax'):
        tax = '%g' % rows[0]['cpu_tax']
    if tax:
        y = y.replace('\n  shared_machine: true', '\n  cpu_tax: %s\n  shared_machine: true' % tax)
    p = os.path.join(tmp, name + '.yaml')
    open(p, 'w').write(y)
    if ports:
        y = with_ports(y, rows[0], p)
        open(p, 'w').write(y)
    errs = [(r['query'], (sim(p, r['query'], r['disk_ratio']) - r['engine_median_ci95']['median']) / r['engine_median_ci95']['median'])
            for r in rows]
    return name, rows[0]['link'], errs


def measured(path):
    return 'cpu_tax_runs' in json.load(open(path))[0]


paths = sorted(glob.glob(os.path.join(HERE, 'launches', '*.json')))
for d in (opt('--more') or '').split(','):
    paths += sorted(glob.glob(os.path.join(d, '*.json'))) if d else []
pool = {}
for d in (pooled or '').split(','):
    for f in glob.glob(os.path.join(d, '*.json')) if d else []:
        r = json.load(open(f))[0]
        if r.get('fabric'):
            pool.setdefault(r['link'], []).extend(r['fabric']['burst']['rounds_s'])
if only:
    paths = [p for p in paths if measured(p) == (only == 'new')]
with ThreadPoolExecutor(2) as ex:
    results = list(ex.map(launch, paths))
by = {}
for name, link, errs in results:
    print('%-16s %-24s %s' % (name, link, '  '.join('%s %+6.1f%%' % (q, 100 * e) for q, e in errs)))
    by.setdefault(link_key(link), []).append(errs)
print()
for link, launches in by.items():
    flat = [abs(e) for errs in launches for _, e in errs]
    print('%-8s %d of %d cases within 10%%, every query in %d of %d launches, median |error| %.1f%%' % (
        link, sum(e <= 0.1 for e in flat), len(flat), sum(all(abs(e) <= 0.1 for _, e in errs) for errs in launches),
        len(launches), 100 * statistics.median(flat)))
