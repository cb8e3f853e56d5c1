#!/usr/bin/env python3
"""Price new launches (their rows and derived profiles) with an older
binary: the profile without nic_line_rate / nic_port, the NIC at the
payload rate times the fabric share the old binary fits to the launch's
own burst; the disk rescale alone, as the defaults. Usage:
  ab.py OLD_BIN LAUNCH.json...
"""
import json, os, re, subprocess, sys, tempfile
old = sys.argv[1]
tmp = tempfile.mkdtemp(prefix='ab-')
for path in sys.argv[2:]:
    rows = json.load(open(path))
    y = open(path[:-5] + '.yaml').read()
    y = re.sub(r'\nnic_line_rate:[^\n]*', '', y)
    y = re.sub(r'\nnic_port:[^\n]*(\n  [^\n]*)*', '', y)
    rate = {'100Mbit': 100e6, '1Gbit': 1e9, '10Gbit': 10e9}[rows[0]['link'].split(',')[0]] / 8
    full = round(rate * 1448 / 1514)
    yfull = re.sub(r'(\nnic:[^\n]*\n  bandwidth: )[0-9.e+]+', lambda m: m.group(1) + str(full), y)
    p = os.path.join(tmp, os.path.basename(path)[:-5] + '.yaml')
    open(p, 'w').write(yfull)
    fb = p[:-5] + '-fabric.json'
    json.dump(rows[0]['fabric'], open(fb, 'w'))
    out = subprocess.run([old, '--json', 'cluster', 'bench-fabric', '--link', rows[0]['link'], '--from', fb, '--profile', p], capture_output=True, text=True, check=True)
    e = json.loads(out.stdout)[0]['fit']['efficiency']
    open(p, 'w').write(re.sub(r'(\nnic:[^\n]*\n  bandwidth: )[0-9.e+]+', lambda m: m.group(1) + str(round(full * e)), y))
    errs_old, errs_new = [], []
    for r in rows:
        eng = r['engine_median_ci95']['median']
        o = subprocess.run([old, 'sim', '--profile', p, '--nodes', '4', '--data', 'out/data/sf1', '--query', r['query'], '--policy', 'overlap', '--json', '--disk-speedup', str(r['disk_ratio'])], capture_output=True, text=True, check=True)
        s_old = json.loads(o.stdout)['makespan_ns'] / 1e9
        errs_old.append('%s %+.1f%%' % (r['query'], 100 * (s_old - eng) / eng))
        errs_new.append('%s %+.1f%%' % (r['query'], 100 * (r['sim_disk_only_s'] - eng) / eng))
    print('%-28s %-22s new: %s | old (e %.3f): %s' % (os.path.basename(path)[:-5], rows[0]['link'], '  '.join(errs_new), e, '  '.join(errs_old)))
