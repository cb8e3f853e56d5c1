package sim

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"gostachio/costmodel"
	"gostachio/scheduler"
	"gostachio/tpch/queries"
	"gostachio/traces"
)

// A replay of a simulated trace with its own (estimated) sizes reproduces
// the run; with every kernel's rows scaled to zero it finishes sooner.
func TestReplayUsesTraceSizes(t *testing.T) {
	prof, err := LoadProfileLog("devbox", nil)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := queries.Stats(0.1, 1<<17)
	if err != nil {
		t.Fatal(err)
	}
	p, err := queries.Build("q3", 0.1, tables)
	if err != nil {
		t.Fatal(err)
	}
	pol, _ := scheduler.NewPolicy("overlap", "")
	rec := &traces.Recorder{Run: "q3/overlap"}
	base, err := Simulate(context.Background(), p, prof, 1, pol, rec, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	pol2, _ := scheduler.NewPolicy("overlap", "")
	same, matched, err := Replay(context.Background(), p, prof, pol2, rec.Events)
	if err != nil {
		t.Fatal(err)
	}
	if matched == 0 {
		t.Fatal("no kernel matched a recorded size")
	}
	if same.MakespanNs != base.MakespanNs {
		t.Errorf("replay with the run's own sizes: %d ns, recorded %d ns", same.MakespanNs, base.MakespanNs)
	}
	zero := append([]traces.Event(nil), rec.Events...)
	for i := range zero {
		if zero[i].Kind == scheduler.TaskKernel {
			zero[i].Rows = 0
		}
	}
	pol3, _ := scheduler.NewPolicy("overlap", "")
	less, _, err := Replay(context.Background(), p, prof, pol3, zero)
	if err != nil {
		t.Fatal(err)
	}
	if less.MakespanNs >= base.MakespanNs {
		t.Errorf("kernels that output nothing: %d ns, not below %d ns", less.MakespanNs, base.MakespanNs)
	}
	q, pol4, dir, err := TraceRun(rec.Events, traces.Meta{Title: "engine q3 overlap on /data/sf1"})
	if err != nil || q != "q3" || pol4 != "overlap" || dir != "/data/sf1" {
		t.Errorf("TraceRun = %q %q %q %v", q, pol4, dir, err)
	}
}

func TestProvenanceWarning(t *testing.T) {
	data, err := profileFS.ReadFile("profiles/devbox.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseProfile("devbox", data)
	if err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	WarnProvenance(p, &w)
	if w.Len() != 0 {
		t.Errorf("a profile without provenance warned: %s", w.String())
	}
	here := costmodel.HostProvenance()
	p.Provenance = &here
	WarnProvenance(p, &w)
	if w.Len() != 0 {
		t.Errorf("this machine's own provenance warned: %s", w.String())
	}
	other := here
	other.CPU, other.Engine = "Elsewhere CPU 9000", "gostachio-cpu-engine/0"
	p.Provenance = &other
	WarnProvenance(p, &w)
	if s := w.String(); !strings.Contains(s, "Elsewhere CPU 9000") || !strings.Contains(s, "engine") {
		t.Errorf("warning %q does not name the differences", s)
	}
	// Through the YAML: provenance is a known key.
	yml := string(data) + "provenance:\n  hostname: other-host\n  cores: 1\n  engine: gostachio-cpu-engine/0\n"
	q, err := ParseProfile("devbox+prov", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	w.Reset()
	WarnProvenance(q, &w)
	if !strings.Contains(w.String(), "other-host") {
		t.Errorf("warning %q does not name the host", w.String())
	}
}
