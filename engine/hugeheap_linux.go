package engine

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// madvHugepage is MADV_HUGEPAGE (linux/mman.h).
const madvHugepage = 14

// adviseHuge marks the 2 MiB-aligned interior of b for transparent huge
// pages. b must not have been touched (the kernel backs a page when it is
// first written).
func adviseHuge(b []byte) {
	const huge = 2 << 20
	if len(b) < 2*huge {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (start + huge - 1) &^ (huge - 1)
	hi := (start + uintptr(len(b))) &^ (huge - 1)
	if hi <= lo {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, madvHugepage)
}

// adviseHeapLimit is the most AdviseHeap may allocate here: 0 unless
// transparent huge pages are in "madvise" mode (with "always" the heap
// gets them anyway, with "never" not at all) and overcommit is not strict
// (mode 2 charges the whole reservation); else half of MemTotal.
func adviseHeapLimit() int64 {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !bytes.Contains(mode, []byte("[madvise]")) {
		return 0
	}
	if oc, err := os.ReadFile("/proc/sys/vm/overcommit_memory"); err != nil || strings.TrimSpace(string(oc)) == "2" {
		return 0
	}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 2 && fs[0] == "MemTotal:" {
			kib, err := strconv.ParseInt(fs[1], 10, 64)
			if err != nil {
				return 0
			}
			return kib << 10 / 2
		}
	}
	return 0
}
