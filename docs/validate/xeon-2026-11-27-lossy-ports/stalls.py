import sys,glob,re
d=sys.argv[1]
tot=0
for f in sorted(glob.glob(d+'/*.ss')):
    ts=None; prev={}; cur={}; events=[]
    for line in open(f):
        if line.startswith('TS'):
            prev,cur=cur,{}
            ts=float(line.split()[1]); continue
        m=re.search(r'^\S+\s+(\d+)\s+(\S+)\s+(\S+).*timer:\(persist,(\d+)ms', line)
        if m:
            key=(m.group(2),m.group(3)); t=int(m.group(4))
            if key not in prev or t > prev[key]:
                events.append((ts,key,t,int(m.group(1))))
            cur[key]=t
    tot+=len(events)
    print(f.split('/')[-1], len(events), ' '.join('%.2f:%s(q=%dK,t=%d)'%(e[0]%1000,e[1][1].split(':')[0].split('.')[-1],e[3]//1024,e[2]) for e in events))
print('total', tot)
