package dataset

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ownerFile, inside a temporary folder, holds the id of the process
// writing it, so that a later run can tell a folder left by a killed
// process (removed) from one another process is still writing (kept).
const ownerFile = ".owner"

// makeTempDir creates the temporary folder .<base>.tmp-XXXX in parent that
// a dataset or export named base is written into before it is renamed into
// place, and records this process as its owner.
func makeTempDir(parent, base string) (string, error) {
	tmp, err := os.MkdirTemp(parent, "."+base+".tmp-")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, ownerFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return tmp, nil
}

// removeStale removes the temporary folders of base in parent that no live
// process owns: what a killed or crashed writer of a dataset or an export
// left behind (.<base>.tmp-* and the .<base>.old-* holders of a
// replacement). A folder without an owner file was left by a build that
// did not record one and is removed too. It returns the folders removed.
func removeStale(parent, base string) ([]string, error) {
	ents, err := os.ReadDir(parent)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dataset: %s: %w", parent, err)
	}
	var removed []string
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || !(strings.HasPrefix(name, "."+base+".tmp-") || strings.HasPrefix(name, "."+base+".old-")) {
			continue
		}
		p := filepath.Join(parent, name)
		if ownerAlive(p) {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return removed, fmt.Errorf("dataset: remove the stale temporary folder %s: %w", p, err)
		}
		removed = append(removed, p)
	}
	return removed, nil
}

// ownerAlive reports whether the process recorded in dir's owner file (or,
// for a replacement holder, in the folder it holds) is still running.
func ownerAlive(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return false
	}
	if pid == os.Getpid() {
		return true
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
