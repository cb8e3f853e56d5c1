// Package madvfree makes the Go runtime give freed heap memory back to
// Linux with MADV_FREE instead of MADV_DONTNEED (GODEBUG madvdontneed=0).
//
// Why: the engine's heap swings by hundreds of MB within and between
// queries, and the runtime's scavenger returns what a query freed to the
// kernel. With MADV_DONTNEED the next query's allocations fault those
// pages in again and the kernel clears each one: on the paravirtualized
// dev VM, 32% of the CPU samples of q1 in steady state (runs 3-8 of 14 in
// one process) were clear_page under do_huge_pmd_anonymous_page, the
// filters' gathers writing to memory the heap had just returned. With
// MADV_FREE the kernel takes the pages back only under memory pressure,
// so the heap reuses them as they are: q1,q3,q9 x12 in one process took
// 4.8 K page faults instead of 22-25 K, 0.9-1.4 s of system time instead
// of 2.2-3.7, and their steady-state medians fell 4-11% (2-core development VM, 2026-11).
// The cost is a resident set that stays at its high-water mark until the
// machine needs the memory.
//
// The setting is read once, when the runtime starts, and `//go:debug`
// does not accept it, so Reexec starts the binary again with it.
package madvfree

import (
	"os"
	"strings"
	"syscall"
)

// setting is what Reexec adds to GODEBUG.
const setting = "madvdontneed=0"

// Reexec replaces the process by a fresh run of the same binary with the
// same arguments and GODEBUG madvdontneed=0 added (Env), unless GODEBUG
// already names madvdontneed (the user's choice, or this was the re-run),
// GOSTACHIO_MADV_FREE=0, or this is a re-run already. It returns only where it does nothing or the exec
// fails (the process then runs as it is). Call it first thing in main.
func Reexec() {
	if os.Getenv("GOSTACHIO_MADV_FREE") == "0" {
		return
	}
	godebug := os.Getenv("GODEBUG")
	if Named(godebug) {
		return
	}
	if os.Getenv(reexecMark) != "" {
		return // the re-run did not see the setting: never loop
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	_ = syscall.Exec(exe, os.Args, Env(os.Environ(), godebug))
}

// reexecMark is set in the re-run's environment, so that a re-run that
// still does not see the setting runs as it is instead of again.
const reexecMark = "GOSTACHIO_MADV_FREE_REEXEC"

// Env returns environ with its GODEBUG entries replaced by one holding
// godebug's settings and madvdontneed=0, and the re-run's mark added. A
// process reads the first of duplicate entries, so the old one must go,
// not stay beside the new.
func Env(environ []string, godebug string) []string {
	out := make([]string, 0, len(environ)+2)
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "GODEBUG=") && !strings.HasPrefix(kv, reexecMark+"=") {
			out = append(out, kv)
		}
	}
	return append(out, "GODEBUG="+With(godebug), reexecMark+"=1")
}

// Named reports whether a GODEBUG value sets madvdontneed.
func Named(godebug string) bool {
	for _, kv := range strings.Split(godebug, ",") {
		if k, _, _ := strings.Cut(strings.TrimSpace(kv), "="); k == "madvdontneed" {
			return true
		}
	}
	return false
}

// With returns a GODEBUG value with madvdontneed=0 added to godebug's
// settings.
func With(godebug string) string {
	if strings.TrimSpace(godebug) == "" {
		return setting
	}
	return godebug + "," + setting
}
