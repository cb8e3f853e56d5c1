package dataset

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// deadPid returns the id of a process that has exited.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run a child process: %v", err)
	}
	return cmd.Process.Pid
}

// TestExportInterruptedLeavesNothingComplete: a source whose data fails its
// checksum half-way through the tables makes Export fail with no output
// folder and no temporary folder left; before, the folder held the tables
// exported so far and looked complete.
func TestExportInterruptedLeavesNothingComplete(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	writeDataset(t, dir, CreateOptions{}, sampleData())
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Corrupt the last table's data: the earlier tables export first.
	last := ds.Manifest.Tables[len(ds.Manifest.Tables)-1]
	ref := last.Chunks[0].Columns[0].Buffers[1]
	p := ds.filePath(&last, 0)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	f.ReadAt(b, ref.Off)
	b[0] ^= 0xff
	f.WriteAt(b, ref.Off)
	f.Close()

	out := filepath.Join(t.TempDir(), "pq")
	err = Export(ds, out, ExportOptions{}, nil)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("Export of a corrupt source = %v, want ErrCorrupt naming the checksum mismatch", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed export left %s (%v)", out, err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 0 {
		t.Errorf("a failed export left %d entries beside its target: %v", len(ents), ents)
	}
}

// TestExportAfterKill: the temporary folder of a killed export (its owner
// process gone) is removed by the next export, which says so; a folder
// another live process is writing is kept.
func TestExportAfterKill(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	writeDataset(t, dir, CreateOptions{}, sampleData())
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	out := filepath.Join(parent, "pq")
	stale := filepath.Join(parent, ".pq.tmp-killed")
	live := filepath.Join(parent, ".pq.tmp-live")
	for d, pid := range map[string]int{stale: deadPid(t), live: os.Getppid()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "lineitem.parquet"), []byte("partial"), 0o644)
		os.WriteFile(filepath.Join(d, ownerFile), []byte(strconv.Itoa(pid)), 0o644)
	}
	var log bytes.Buffer
	if err := Export(ds, out, ExportOptions{}, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "removed "+stale) {
		t.Errorf("the export did not report removing %s:\n%s", stale, log.String())
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale folder kept: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live process's folder was removed: %v", err)
	}
	m, err := ReadExport(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tables) != len(ds.Manifest.Tables) || m.ManifestDigest != ds.Manifest.Digest {
		t.Errorf("marker %+v", m)
	}
	for _, tb := range m.Tables {
		st, err := os.Stat(filepath.Join(out, tb.File))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o644 {
			t.Errorf("%s has mode %v, the dataset's files 0644", tb.File, st.Mode().Perm())
		}
	}
}

// TestExportTargetMessages: an existing folder is replaced only with
// Force, and the refusal says whether it holds a complete export.
func TestExportTargetMessages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	writeDataset(t, dir, CreateOptions{}, sampleData())
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "pq")
	if err := Export(ds, out, ExportOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	err = Export(ds, out, ExportOptions{}, nil)
	if !errors.Is(err, os.ErrExist) || !strings.Contains(err.Error(), "complete export") {
		t.Errorf("second export = %v, want os.ErrExist saying it holds a complete export", err)
	}
	os.Remove(filepath.Join(out, ExportMarkerName))
	err = Export(ds, out, ExportOptions{}, nil)
	if !errors.Is(err, os.ErrExist) || !strings.Contains(err.Error(), "not a complete export") {
		t.Errorf("export over a partial folder = %v, want os.ErrExist saying it is not a complete export", err)
	}
	if _, err := ReadExport(out); err == nil || !strings.Contains(err.Error(), "lineitem.parquet") {
		t.Errorf("ReadExport of a folder without marker = %v, want it to list what it holds", err)
	}
	if err := Export(ds, out, ExportOptions{Force: true}, nil); err != nil {
		t.Fatalf("forced export: %v", err)
	}
	if _, err := ReadExport(out); err != nil {
		t.Errorf("after the forced export: %v", err)
	}
}

// TestGenTempFoldersOfKilledRunsRemoved: Create removes the temporary
// folders a killed writer of the same dataset left beside it.
func TestGenTempFoldersOfKilledRunsRemoved(t *testing.T) {
	parent := t.TempDir()
	stale := filepath.Join(parent, ".ds.tmp-12345")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(stale, ownerFile), []byte(strconv.Itoa(deadPid(t))), 0o644)
	var log bytes.Buffer
	w, err := Create(filepath.Join(parent, "ds"), CreateOptions{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale folder kept: %v", err)
	}
	if !strings.Contains(log.String(), "removed "+stale) {
		t.Errorf("log %q does not name the removed folder", log.String())
	}
	writeDataset(t, filepath.Join(parent, "ds"), CreateOptions{}, sampleData())
	if _, err := os.Stat(filepath.Join(parent, "ds", ownerFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a committed dataset holds the owner file: %v", err)
	}
}
