package traces

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestStats(t *testing.T) {
	dir := t.TempDir()
	events := slowReads()
	jsonPath, csvPath, pqPath := filepath.Join(dir, "t.json"), filepath.Join(dir, "t.csv"), filepath.Join(dir, "t.parquet")
	var b bytes.Buffer
	if err := WriteChrome(&b, events, Meta{Title: "slow reads", Backend: "sim", Profile: "p"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jsonPath, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := WriteCSV(&b, events); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(csvPath, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := WriteParquet(&b, events, Meta{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pqPath, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, p := range []string{jsonPath, csvPath, pqPath} {
		var out bytes.Buffer
		if err := Stats(p, StatsOptions{}, &out); err != nil {
			t.Fatal(err)
		}
		s := out.String()
		for _, want := range []string{"makespan   330ns (9 tasks)", "nvme[0.0]", "gpu[0.0]",
			"kernel starved by read (through h2d) 70.5% of its span", "critical path:"} {
			if !strings.Contains(s, want) {
				t.Fatalf("%s: no %q in\n%s", p, want, s)
			}
		}
		texts = append(texts, s[strings.IndexByte(s, '\n'):]) // past the title line
	}
	if texts[0] != texts[1] || texts[0] != texts[2] {
		t.Fatalf("json, csv and parquet stats differ:\n%s\n---\n%s\n---\n%s", texts[0], texts[1], texts[2])
	}
	var out bytes.Buffer
	if err := Stats(jsonPath, StatsOptions{JSON: true, Slots: 2}, &out); err != nil {
		t.Fatal(err)
	}
	var rep StatsReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	r := rep.Runs[0]
	// io 300 (reads back to back), cpu (3×10 + 3×20) / 2 = 45, bound 300,
	// efficiency 300/330.
	if rep.Meta.Title != "slow reads" || len(rep.Runs) != 1 || r.Makespan != 330 || r.Slots != 2 ||
		r.Overlap != (OverlapStat{Makespan: 330, IOBusy: 300, CPUWork: 45, Bound: 300, Efficiency: 300.0 / 330}) ||
		len(r.Starvation) != 2 || r.Starvation[1].Starved != 155 || r.Critical.End != 330 {
		t.Fatalf("report %+v", rep)
	}
	for _, p := range []string{filepath.Join(dir, "t.txt"), filepath.Join(dir, "missing.json")} {
		if err := Stats(p, StatsOptions{}, &out); err == nil {
			t.Errorf("%s: no error", p)
		}
	}
}

func TestConvert(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "legacy.json")
	if err := os.WriteFile(in, []byte(legacyTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	want, wantMeta, err := Load(in)
	if err != nil {
		t.Fatal(err)
	}
	prev := in
	for _, ext := range []string{".parquet", ".csv", ".json"} {
		out := filepath.Join(dir, "out"+ext)
		if _, err := Convert(prev, out); err != nil {
			t.Fatal(err)
		}
		got, meta, err := Load(out)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: events differ\n got %+v\nwant %+v", ext, got, want)
		}
		if ext == ".parquet" && meta != wantMeta {
			t.Fatalf("parquet meta %+v", meta)
		}
		prev = out
	}
	if _, err := Convert(in, filepath.Join(dir, "x.txt")); err == nil {
		t.Fatal("unknown output format accepted")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 4 {
		t.Fatalf("files left: %v", ents)
	}
}
