package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gostachio/engine/storage/alloc"
)

// BenchmarkRead measures the reader at QD 32 on a 64 MiB file (O_DIRECT: the page cache does not
// help; on a filesystem refusing O_DIRECT the figures are page-cache figures, and say so).
// Run: go test -ldflags=-checklinkname=0 -bench Read -run '^$' ./engine/storage/
func BenchmarkRead(b *testing.B) {
	const fileSize = 64 << 20
	path, _ := writeRandom(b, fileSize, 11)
	for _, io := range []string{IOUring, IOPread} {
		for _, w := range []struct {
			name string
			bs   int64
			rand bool
		}{{"seq1MiB", 1 << 20, false}, {"rand4KiB", 4096, true}} {
			b.Run(io+"/"+w.name, func(b *testing.B) {
				pool, _ := alloc.NewPool(alloc.Options{ArenaBytes: 32 * alloc.ClassSize(w.bs)})
				defer pool.Close()
				r, err := NewReader(Options{IO: io, QueueDepth: 32, Combine: CombineOptions{MaxRequest: w.bs}, FixedBuffers: true, RegisteredFiles: 1, Allocator: pool})
				if err != nil {
					b.Skip(err)
				}
				defer r.Close()
				f, err := r.Open(path, Expect{})
				if err != nil {
					b.Fatal(err)
				}
				if !f.Direct {
					b.Logf("%s refuses O_DIRECT: page-cache figures", path)
				}
				rng := rand.New(rand.NewPCG(1, 2))
				blocks, next := int64(fileSize)/w.bs, int64(0)
				req := func() Request {
					k := next
					if w.rand {
						k = rng.Int64N(blocks)
					} else if next++; next == blocks {
						next = 0
					}
					return Request{Ranges: []Range{{File: f, Offset: k * w.bs, Length: w.bs}}}
				}
				b.SetBytes(w.bs)
				b.ResetTimer()
				submitted := 0
				var reqs []Request
				for ; submitted < min(32, b.N); submitted++ {
					reqs = append(reqs, req())
				}
				if err := r.Submit(reqs...); err != nil {
					b.Fatal(err)
				}
				var cs []Completion
				var lat time.Duration
				for done := 0; done < b.N; {
					if cs, err = r.Wait(context.Background(), cs[:0]); err != nil {
						b.Fatal(err)
					}
					reqs = reqs[:0]
					for i := range cs {
						if cs[i].Err != nil {
							b.Fatal(cs[i].Err)
						}
						lat += cs[i].End - cs[i].Submit
						cs[i].Buffer.Release()
						done++
						if submitted < b.N {
							reqs = append(reqs, req())
							submitted++
						}
					}
					if len(reqs) > 0 {
						if err := r.Submit(reqs...); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "IOPS")
				b.ReportMetric(float64(lat.Microseconds())/float64(b.N), "µs/lat")
			})
		}
	}
}

// TestBenchIOSmoke runs the bench command briefly on a small file and checks its accounting.
func TestBenchIOSmoke(t *testing.T) {
	path, _ := writeRandom(t, 8<<20, 12)
	var out, errOut bytes.Buffer
	err := BenchIO(context.Background(), BenchOptions{Data: filepath.Dir(path), IO: IOPread, QD: 4, BlockSize: 64 << 10,
		Pattern: "rand", Duration: 200 * time.Millisecond, JSON: true}, &out, &errOut)
	if err != nil {
		if strings.Contains(err.Error(), "refuses O_DIRECT") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	var rep BenchReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	o := rep.Ours
	if rep.File != path || o.IO != IOPread || o.Bytes <= 0 || o.Bytes%(64<<10) != 0 || o.Seconds < 0.2 {
		t.Fatalf("report %+v", rep)
	}
	if got := float64(o.Bytes) / o.Seconds / 1e9; got != o.GBps {
		t.Errorf("GB/s %v, bytes/seconds gives %v", o.GBps, got)
	}
	if got := float64(o.Bytes/(64<<10)) / o.Seconds; got != o.IOPS {
		t.Errorf("IOPS %v, requests/seconds gives %v", o.IOPS, got)
	}
	if o.P50us <= 0 || o.P99us < o.P50us {
		t.Errorf("latency p50 %v p99 %v", o.P50us, o.P99us)
	}
}

func TestBenchIOOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		opts BenchOptions
		want string
	}{
		{BenchOptions{Data: "/nonexistent/x"}, "no such file"},
		{BenchOptions{Data: "/etc/hostname", Pattern: "zigzag"}, "pattern"},
		{BenchOptions{Data: "/etc/hostname", BlockSize: 1000}, "multiple of 4096"},
		{BenchOptions{}, "no --data"},
		{BenchOptions{Data: t.TempDir()}, "no regular file"},
	} {
		err := BenchIO(context.Background(), tc.opts, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opts, err, tc.want)
		}
	}
}

func TestFioMissingSaysHowToInstall(t *testing.T) {
	_, err := runFio(context.Background(), BenchOptions{FioPath: "fio-not-installed-here"}, "/dev/null", 1)
	if err == nil || !strings.Contains(err.Error(), "apt-get install -y fio") {
		t.Fatalf("err %v", err)
	}
}

func TestParseFio(t *testing.T) {
	raw, err := os.ReadFile("testdata/fio-randread.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseFio(raw)
	if err != nil {
		t.Fatal(err)
	}
	// Figures copied from the file (a real fio 3.33 randread run): io_bytes, bw_bytes, iops,
	// runtime (ms) and lat_ns percentiles 50/99.
	want := BenchResult{Tool: "fio", IO: "uring", Seconds: 2.001, Bytes: 800198656, GBps: 0.399899378, IOPS: 97631.684158, P50us: 325.632, P99us: 456.704}
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if _, err := parseFio([]byte("fio: engine io_uring not loadable")); err == nil {
		t.Fatal("no error for output without JSON")
	}
	if _, err := parseFio([]byte(`{"jobs":[]}`)); err == nil || !strings.Contains(err.Error(), "0 jobs") {
		t.Fatalf("no jobs: %v", err)
	}
}

// TestBenchIORounds runs --vs-fio rounds against a stand-in fio (a script printing a recorded fio
// JSON result, 0.399899378 GB/s and 97631.684158 IOPS) and checks the warm-up, the order of the
// sides in each round against the progress log, the per-round ratios and their summary.
func TestBenchIORounds(t *testing.T) {
	const size, bs = 4 << 20, 64 << 10
	path, _ := writeRandom(t, size, 13)
	dir := t.TempDir()
	fake := filepath.Join(dir, "fio")
	abs, err := filepath.Abs("testdata/fio-randread.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fake, []byte("#!/bin/sh\ncat '"+abs+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err = BenchIO(context.Background(), BenchOptions{Data: path, IO: IOPread, QD: 4, BlockSize: bs, Pattern: "rand",
		Duration: 50 * time.Millisecond, VsFio: true, FioPath: fake, Rounds: 8, Seed: 7, JSON: true}, &out, &errOut)
	if err != nil {
		if strings.Contains(err.Error(), "refuses O_DIRECT") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	var rep BenchReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if rep.Warmup == nil || rep.Warmup.Bytes != size {
		t.Fatalf("warm-up %+v, want one pass of %d bytes", rep.Warmup, size)
	}
	if len(rep.Rounds) != 8 {
		t.Fatalf("%d rounds, want 8", len(rep.Rounds))
	}
	// The progress log names the sides in the order they ran.
	var order []string
	for _, l := range strings.Split(errOut.String(), "\n") {
		if i := strings.Index(l, ": round "); i >= 0 {
			order = append(order, l[strings.LastIndex(l, " ")+1:])
		}
	}
	if len(order) != 16 {
		t.Fatalf("progress log has %d round lines, want 16:\n%s", len(order), errOut.String())
	}
	fioFirst := 0
	var ratios []float64
	for i, rd := range rep.Rounds {
		want := []string{"gostachio", "fio"}
		if rd.FioFirst {
			want = []string{"fio", "gostachio"}
			fioFirst++
		}
		if order[2*i] != want[0] || order[2*i+1] != want[1] {
			t.Errorf("round %d ran %v, report says fio_first=%v", rd.Round, order[2*i:2*i+2], rd.FioFirst)
		}
		if rd.Fio.GBps != 0.399899378 || rd.Ours.Bytes <= 0 {
			t.Fatalf("round %d: %+v", rd.Round, rd)
		}
		if want := rd.Ours.GBps / 0.399899378; rd.RatioGBps != want {
			t.Errorf("round %d ratio %v want %v", rd.Round, rd.RatioGBps, want)
		}
		ratios = append(ratios, rd.RatioGBps)
	}
	if fioFirst == 0 || fioFirst == 8 {
		t.Errorf("fio ran first in %d of 8 rounds: the order is not randomized", fioFirst)
	}
	// Median of 8 ratios: mean of the 4th and 5th smallest; 95% CI ranks 2 and 8.
	slices.Sort(ratios)
	st := rep.RatioGBpsStats
	if st == nil || !st.CI || st.Median != (ratios[3]+ratios[4])/2 || st.Lo != ratios[1] || st.Hi != ratios[7] || rep.RatioGBps != st.Median {
		t.Fatalf("stats %+v for sorted ratios %v", st, ratios)
	}
}
