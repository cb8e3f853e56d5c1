#!/bin/bash
# usage: sswatch.sh OUTDIR QUERYLIST
out=$1; q=$2; mkdir -p $out; rm -f $out/*
cd /work/main
./bin/gostachio cluster --nodes 4 --netns --link ${LINK:-100Mbit} -- query --data out/data/sf1 --query $q --devices 1 --trace $out/t.json > $out/run.log 2>&1 &
pid=$!
started=""
while kill -0 $pid 2>/dev/null; do
  nss=$(ip netns list 2>/dev/null | awk '{print $1}' | grep '^gst-')
  if [ $(echo $nss | wc -w) -ge 4 ] && [ -z "$started" ]; then
    started=1
    for ns in $nss; do
      ( ip netns exec $ns bash -c 'while :; do echo "TS $(date +%s.%N)"; ss -tinoH state established "( sport >= :1024 )" 2>/dev/null; sleep 0.002; done' > $out/$ns.ss 2>/dev/null ) &
    done
  fi
  sleep 0.05
done
wait $pid
pkill -f "ss -tinoH" ; sleep 0.2; kill $(jobs -p) 2>/dev/null
