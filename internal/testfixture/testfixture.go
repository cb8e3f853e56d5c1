// Package testfixture holds what the tests of several packages share: a
// small TPC-H dataset generated once per test binary, the gostachio binary
// built once per test binary, and the skip of tests that need network
// namespaces. Only tests import it.
package testfixture

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gostachio/tpch"
)

// Fixture is one test binary's shared files, under one temporary folder
// that Cleanup removes (call it from TestMain after m.Run).
type Fixture struct {
	// Prefix names the temporary folder (os.MkdirTemp's pattern).
	Prefix string
	// ChunkRows is the generated dataset's rows per stored chunk: small,
	// so that every table spreads over several units and workers.
	ChunkRows int

	rootOnce sync.Once
	root     string
	rootErr  error

	dataOnce sync.Once
	data     string
	dataErr  error

	binOnce sync.Once
	bin     string
	binErr  error
}

func (f *Fixture) dir(t testing.TB) string {
	t.Helper()
	f.rootOnce.Do(func() { f.root, f.rootErr = os.MkdirTemp("", f.Prefix) })
	if f.rootErr != nil {
		t.Fatalf("temporary folder: %v", f.rootErr)
	}
	return f.root
}

// TPCH returns the folder of a TPC-H SF0.01 dataset, generated on the first
// call.
func (f *Fixture) TPCH(t testing.TB) string {
	t.Helper()
	root := f.dir(t)
	f.dataOnce.Do(func() {
		f.data = filepath.Join(root, "data")
		f.dataErr = tpch.Gen(context.Background(), tpch.GenOptions{ScaleFactor: 0.01, Out: f.data, ChunkRows: f.ChunkRows}, io.Discard, io.Discard)
	})
	if f.dataErr != nil {
		t.Fatalf("generate SF0.01: %v", f.dataErr)
	}
	return f.data
}

// Binary returns the path of the gostachio binary, built on the first call
// (with -checklinkname=0, which the io_uring binding needs).
func (f *Fixture) Binary(t testing.TB) string {
	t.Helper()
	root := f.dir(t)
	f.binOnce.Do(func() {
		f.bin = filepath.Join(root, "gostachio")
		cmd := exec.Command("go", "build", "-o", f.bin, "gostachio/cmd/gostachio")
		cmd.Env = os.Environ()
		if !strings.Contains(os.Getenv("GOFLAGS"), "checklinkname") {
			cmd.Env = append(cmd.Env, "GOFLAGS=-ldflags=-checklinkname=0")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			f.binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if f.binErr != nil {
		t.Fatal(f.binErr)
	}
	return f.bin
}

// Cleanup removes the fixture's folder.
func (f *Fixture) Cleanup() {
	if f.root != "" {
		os.RemoveAll(f.root)
	}
}

// NeedNetns skips a test that cannot make network namespaces here: check
// (the cluster's own precondition check) fails, or `ip netns add` of a
// probe named probePrefix-PID does.
func NeedNetns(t testing.TB, check func() error, probePrefix string) {
	t.Helper()
	if err := check(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	probe := fmt.Sprintf("%sprobe-%d", probePrefix, os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		t.Skipf("skipping: cannot make a network namespace: %v: %s", err, out)
	}
	exec.Command("ip", "netns", "del", probe).Run()
}

// SoloEnv is the launcher environment of a worker of a world of one: rank
// 0, its rendezvous at a free loopback port (torchrun's variables).
func SoloEnv(t testing.TB) func(string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	env := map[string]string{"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
	return func(k string) string { return env[k] }
}
