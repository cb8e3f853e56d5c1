package calibrate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gostachio/experiments"
)

// TestRepriceBadInput: every way a folder or the options can be wrong
// gets an error naming what and where, before anything is priced.
func TestRepriceBadInput(t *testing.T) {
	ctx := context.Background()
	data := testData(t)
	const started = "2026-01-01T00:00:00Z"
	folder := func(t *testing.T, records string, sf float64) string {
		dir := t.TempDir()
		r := experiments.Result{Key: "k1", Spec: "validate", Backend: "engine", Profile: "devbox", Nodes: 1, SF: sf,
			Query: "q6", Policy: "overlap", Seconds: 0.01, Started: started}
		if err := experiments.AppendResult(dir, r); err != nil {
			t.Fatal(err)
		}
		if records != "" {
			if err := os.WriteFile(filepath.Join(dir, RecordFile), []byte(records), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	good := `{"started":"` + started + `","profile":"devbox","data":"x","sf":0.01,"rescale_cpu":false,"rescale_disk":false}` + "\n"
	for _, tc := range []struct {
		name string
		o    RepriceOptions
		want string
	}{
		{"no folders", RepriceOptions{Data: data, Profiles: []string{"devbox"}}, "no validate --out folders"},
		{"no profiles", RepriceOptions{Data: data, Dirs: []string{folder(t, good, 0.01)}}, "no profiles"},
		{"no records", RepriceOptions{Data: data, Profiles: []string{"devbox"}, Dirs: []string{folder(t, "", 0.01)}}, RecordFile + ": not found"},
		{"corrupt record", RepriceOptions{Data: data, Profiles: []string{"devbox"}, Dirs: []string{folder(t, good+"{\"started\": 3\n", 0.01)}}, "line 2"},
		{"unknown field", RepriceOptions{Data: data, Profiles: []string{"devbox"}, Dirs: []string{folder(t, `{"started":"x","sf":1,"cpu_ratio":2}`, 0.01)}}, "line 1"},
		{"rescale without reference", RepriceOptions{Data: data, Profiles: []string{"devbox"}, Dirs: []string{folder(t, `{"started":"x","sf":1,"rescale_cpu":true}`, 0.01)}}, "rescale_cpu without a CPU reference"},
		{"another validation's record", RepriceOptions{Data: data, Profiles: []string{"devbox"}, Dirs: []string{folder(t, strings.Replace(good, started, "2026-02-02T00:00:00Z", 1), 0.01)}}, "no record of the validation started " + started},
		{"rows at another SF", RepriceOptions{Data: data, Profiles: []string{"devbox"}, Dirs: []string{folder(t, good, 1)}}, "SF 1"},
		{"dataset at another SF", RepriceOptions{Data: data, Profiles: []string{"devbox"}, Dirs: []string{folder(t, strings.Replace(good, `"sf":0.01`, `"sf":1`, 1), 1)}}, "is SF 0.01"},
		{"GPU profile for a CPU run", RepriceOptions{Data: data, Profiles: []string{"h100-gpu-calibrated"}, Dirs: []string{folder(t, good, 0.01)}}, "GPU backend"},
		{"no such profile", RepriceOptions{Data: data, Profiles: []string{"nonesuch"}, Dirs: []string{folder(t, good, 0.01)}}, "nonesuch"},
	} {
		_, err := Reprice(ctx, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	// The good folder prices.
	rp, err := Reprice(ctx, RepriceOptions{Data: data, Profiles: []string{"devbox"}, Dirs: []string{folder(t, good, 0.01)}})
	if err != nil || len(rp.Rows) != 1 || rp.Rows[0].Cases != 1 || !(rp.Rows[0].Sims[0] > 0) || rp.Rows[0].CPURatio != 0 {
		t.Fatalf("good folder: %+v, %v", rp, err)
	}
}

// appendRecord keeps the earlier records and reads back what it wrote.
func TestAppendRecord(t *testing.T) {
	dir := t.TempDir()
	a := ValidationRecord{Started: "a", SF: 1, RescaleCPU: true, CPURefNs: 5.5e6, CPURefN: 3}
	b := ValidationRecord{Started: "b", SF: 1, RescaleDisk: true, DiskBps: 1.5e9, DiskReads: 2}
	for _, r := range []ValidationRecord{a, b} {
		if err := appendRecord(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["a"] != a || got["b"] != b {
		t.Errorf("records %+v, want %+v and %+v", got, a, b)
	}
}
