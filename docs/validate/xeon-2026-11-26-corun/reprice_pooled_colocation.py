# Re-prices the saved bench-sim launches with their own and with a pooled (leave-one-out) co-location; see colocation-pooled-reprice.txt.
import sys
LINK=sys.argv[1]
import json,glob,re,subprocess,statistics as st
tmpl=open('docs/validate/xeon-2026-11-26-corun/launch-profile-1g-1-with-corun.yaml').read()
tmpl='\n'.join(l for l in tmpl.split('\n') if not l.startswith('  corun:'))  # bench-sim leaves it out
files=sorted(glob.glob('docs/validate/*/bench-sim-*.json'))
launches=[]  # (file, ratios, rows)
for f in files:
    d=json.load(open(f))
    by={}
    for r in d:
        if not r.get('colocation_ratios'): continue
        by.setdefault(tuple(r['colocation_ratios']),[]).append(r)
    for k,rows in by.items(): launches.append((f,list(k),rows))
print(len(launches),'launches')
def profile(r,coloc,path):
    global RATE
    y=re.sub(r'\n  colocation: [0-9.]+', f'\n  colocation: {coloc:.4f}', tmpl)
    y=re.sub(r'\n  net_cpu_cost: [0-9.]+', f"\n  net_cpu_cost: {r['net_cpu_cost']:.4f}", y)
    bw=RATE/8*1448/1514*(r.get('fabric_efficiency') or 1)
    y=re.sub(r'\nnic:(.*)\n  bandwidth: [0-9]+', lambda m: f"\nnic:{m.group(1)}\n  bandwidth: {round(bw)}", y)
    open(path,'w').write(y)
def sim(path,q):
    j=json.loads(subprocess.run(['./bin/gostachio','sim','--profile',path,'--nodes','4','--data','out/data/sf1','--query',q,'--policy','overlap','--json'],capture_output=True,text=True).stdout)
    return j['makespan_ns']/1e9
res={'own':[], 'pool':[]}
for i,(f,ratios,rows) in enumerate(launches):
    fn=f.split('/')[-1].lower()
    RATE=1e10 if 'bench-sim-10g' in fn else (1e8 if '100m' in fn else 1e9)
    if LINK not in fn: continue
    others=[x for j,l in enumerate(launches) if j!=i for x in l[1]]
    pooled=min(st.median(others+ratios),1)
    own=rows[0]['colocation']
    line=[]
    for name,c in (('own',own),('pool',pooled)):
        profile(rows[0],c,'/tmp/reprice-launch.yaml')
        for r in rows:
            m=r['engine_median_ci95']['median']; s=sim('/tmp/reprice-launch.yaml',r['query'])
            res[name].append((s/m-1)); line.append(f"{r['query']}:{(s/m-1)*100:+.1f}")
    print(f.split('/')[-2][-8:], f.split('/')[-1][:24], f"own {own:.3f} pooled {pooled:.3f}", ' '.join(line), 'orig', ' '.join(f"{r['error']*100:+.1f}" for r in rows))
for k,v in res.items():
    print(k, 'n',len(v),'within10', sum(abs(x)<=0.10 for x in v), 'median|e| %.1f%%'%(st.median(abs(x) for x in v)*100), 'median e %+.1f%%'%(st.median(v)*100))
