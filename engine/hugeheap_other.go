//go:build !linux

package engine

// adviseHuge does nothing where transparent huge pages are not advised by
// madvise.
func adviseHuge([]byte) {}

// adviseHeapLimit is 0: nothing to advise.
func adviseHeapLimit() int64 { return 0 }
