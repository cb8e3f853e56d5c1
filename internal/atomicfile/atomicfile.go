// Package atomicfile writes output files so that a reader (or a run killed
// half-way) sees either the old file or the complete new one, never a
// partial file that looks complete: the content goes to a temporary file
// beside the target, is synced, made world-readable, and renamed over it.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write calls write with a buffered writer on a temporary file in path's
// folder and, if write and the sync succeed, renames the file to path
// (mode 0644). On any error the temporary file is removed and path is left
// as it was. The error names path.
func Write(path string, write func(w io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename: a no-op
	bw := bufio.NewWriterSize(tmp, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// CreateTemp makes the file private; outputs are ordinary files.
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteFile is Write of a byte slice.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// CheckDir reports, before any work that will end in writing path, whether
// its folder exists and takes new files: it creates and removes a
// temporary file there, as Write will. The error names the folder.
func CheckDir(path string) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".check-")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	tmp.Close()
	return os.Remove(tmp.Name())
}
