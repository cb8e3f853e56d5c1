package peer

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// DropCache evicts the Parquet files of parquetDir from the page cache
// (fsync, then posix_fadvise DONTNEED), so the next query reads them from
// the device: a cold run without root's drop_caches.
func DropCache(parquetDir string) error {
	for _, t := range Tables {
		path := filepath.Join(parquetDir, t+".parquet")
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("peer: drop cache: %w", err)
		}
		err = f.Sync()
		if err == nil {
			err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("peer: drop cache of %s: %w", path, err)
		}
	}
	return nil
}
