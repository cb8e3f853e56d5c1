package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	ecluster "gostachio/engine/cluster"
)

// runReferences runs the worker o with the references ro on rank 0 and
// returns its JSON results, which must be n, and its stderr.
func runReferences(t *testing.T, o ecluster.WorkerOptions, ro ReferenceOptions, n int) ([]workerResult, *bytes.Buffer) {
	t.Helper()
	refs, err := OpenReferences(ro, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer refs.Close()
	o.BetweenQueries = refs.Hook()
	var out, log bytes.Buffer
	if err := ecluster.RunWorker(context.Background(), o, &out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	var res []workerResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res) != n {
		t.Fatalf("%d results (%v), want %d: %s", len(res), err, n, out.String())
	}
	return res, &log
}

// referenceOptions are o's references: every CPU and disk queries, the
// disk's shaped by profile and reading bytes.
func referenceOptions(o ecluster.WorkerOptions, cpu, disk int, profile string, bytes int64) ReferenceOptions {
	return ReferenceOptions{CPUEvery: cpu, DiskEvery: disk, DiskProfile: profile, Data: o.Data, IO: o.IO, Buffered: o.Buffered, diskBytes: bytes}
}

// TestWorkerCPUReference: a worker of a world of one with
// --cpu-reference-every 2 reports the CPU reference's time with every
// second result of its JSON output, and with no other.
func TestWorkerCPUReference(t *testing.T) {
	o := soloWorker(t, "q6,q14,q6")
	res, log := runReferences(t, o, referenceOptions(o, 2, 0, "", 0), 3)
	if res[0].ReferenceNs != 0 || res[1].ReferenceNs <= 0 || res[2].ReferenceNs != 0 {
		t.Errorf("references %d, %d, %d: want one, after the second query", res[0].ReferenceNs, res[1].ReferenceNs, res[2].ReferenceNs)
	}
	if got := strings.Count(log.String(), "cpu reference: "); got != 1 {
		t.Errorf("%d reference lines on stderr, want 1:\n%s", got, log.String())
	}
	if _, err := OpenReferences(referenceOptions(o, -1, 0, "", 0), 0); err == nil || !strings.Contains(err.Error(), "--cpu-reference-every -1") {
		t.Errorf("negative --cpu-reference-every: err %v", err)
	}
}

// TestWorkerDiskReference: with --disk-reference-every 2 rank 0 reads the
// disk reference after the second query, and that query's JSON result
// carries its time; a dataset whose lineitem file cannot hold the
// reference, and flags given without each other or negative, are errors
// naming what is wrong, before any query runs.
func TestWorkerDiskReference(t *testing.T) {
	// The SF0.01 lineitem file is too small for a reference of 128 MiB:
	// this one reads 4 MiB of it.
	o := soloWorker(t, "q6,q14,q6")
	res, log := runReferences(t, o, referenceOptions(o, 0, 2, "devbox-xeon", 4<<20), 3)
	if res[1].DiskReferenceBytes != 4<<20 {
		t.Errorf("the disk reference read %d bytes, want 4 MiB", res[1].DiskReferenceBytes)
	}
	if res[0].DiskReferenceNs != 0 || res[1].DiskReferenceNs <= 0 || res[2].DiskReferenceNs != 0 || res[1].ReferenceNs != 0 {
		t.Errorf("disk references %d, %d, %d (CPU %d): want one, after the second query, and no CPU reference",
			res[0].DiskReferenceNs, res[1].DiskReferenceNs, res[2].DiskReferenceNs, res[1].ReferenceNs)
	}
	if got := strings.Count(log.String(), "disk reference: "); got != 1 {
		t.Errorf("%d disk reference lines on stderr, want 1:\n%s", got, log.String())
	}
	// A reference that is not whole requests (devbox-xeon's are 1 MiB)
	// reads whole requests, and says so.
	o.Query = "q6"
	if res, _ := runReferences(t, o, referenceOptions(o, 0, 1, "devbox-xeon", 4<<20+1), 1); res[0].DiskReferenceBytes != 5<<20 {
		t.Errorf("a reference of 4 MiB + 1 byte read %d bytes, want 5 MiB", res[0].DiskReferenceBytes)
	}
	for _, c := range []struct {
		every   int
		profile string
		bytes   int64
		want    string
	}{
		{-1, "devbox-xeon", 4 << 20, "--disk-reference-every -1"},
		{1, "", 4 << 20, "needs --disk-reference-profile"},
		{0, "devbox-xeon", 4 << 20, "without --disk-reference-every"},
		{1, "no-such-profile", 4 << 20, "--disk-reference-profile"},
		{1, "devbox-xeon", 0, "SF 0.25"}, // the reference's 128 MiB
	} {
		if _, err := OpenReferences(referenceOptions(o, 0, c.every, c.profile, c.bytes), 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("every %d, profile %q, %d bytes: err %v, want it to name %q", c.every, c.profile, c.bytes, err, c.want)
		}
	}
	// The other ranks check the flags and open nothing.
	if r, err := OpenReferences(referenceOptions(o, 1, 1, "devbox-xeon", 0), 1); r != nil || err != nil {
		t.Errorf("rank 1: references %v, err %v: want none and no error", r, err)
	}
	if _, err := OpenReferences(referenceOptions(o, 0, 1, "", 0), 1); err == nil {
		t.Error("rank 1 took --disk-reference-every without a profile")
	}
	var none *References
	if none.Hook() != nil {
		t.Error("no references: a hook")
	}
	none.Close()
}
