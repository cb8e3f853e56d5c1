//go:build !linux

package engine

// adviseHuge does nothing where transparent huge pages are not advised by
// madvise.
func adviseHuge([]byte) {}
