package cluster

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
	"time"

	"gostachio/engine"
	ecluster "gostachio/engine/cluster"
	"gostachio/tpch"
	"gostachio/tpch/queries"
)

var (
	dataOnce sync.Once
	dataDir  string
	dataErr  error
	tmpRoot  string

	binOnce sync.Once
	binPath string
	binErr  error
)

// testData generates the SF0.01 dataset once per test binary, in small
// chunks (lineitem: about 15) so that every table spreads over the workers.
func testData(t testing.TB) string {
	t.Helper()
	dataOnce.Do(func() {
		tmpRoot, dataErr = os.MkdirTemp("", "gostachio-calibrate-cluster-test-")
		if dataErr != nil {
			return
		}
		dataDir = filepath.Join(tmpRoot, "data")
		dataErr = tpch.Gen(context.Background(), tpch.GenOptions{ScaleFactor: 0.01, Out: dataDir, ChunkRows: 4096}, io.Discard, io.Discard)
	})
	if dataErr != nil {
		t.Fatalf("generate SF0.01: %v", dataErr)
	}
	return dataDir
}

func TestMain(m *testing.M) {
	// Received memory is poisoned when released: a peer that read a frame
	// after releasing it fails.
	os.Setenv("GOSTACHIO_POISON_RECV", "1")
	code := m.Run()
	if tmpRoot != "" {
		os.RemoveAll(tmpRoot)
	}
	os.Exit(code)
}

// gostachioBin builds the gostachio binary once per test binary.
func gostachioBin(t *testing.T) string {
	t.Helper()
	testData(t) // makes tmpRoot, removed by TestMain
	binOnce.Do(func() {
		binPath = filepath.Join(tmpRoot, "gostachio")
		cmd := exec.Command("go", "build", "-o", binPath, "gostachio/cmd/gostachio")
		cmd.Env = os.Environ()
		if !strings.Contains(os.Getenv("GOFLAGS"), "checklinkname") {
			cmd.Env = append(cmd.Env, "GOFLAGS=-ldflags=-checklinkname=0")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// needNetns skips a test that cannot make network namespaces here.
func needNetns(t *testing.T) {
	t.Helper()
	if err := ecluster.CheckNetns(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	probe := fmt.Sprintf("%sprobe-%d", ecluster.NetnsPrefix, os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		t.Skipf("skipping: cannot make a network namespace: %v: %s", err, out)
	}
	exec.Command("ip", "netns", "del", probe).Run()
}

// soloWorker is the options of a worker of a world of one on the SF0.01
// test data, rank 0 at a free loopback port, running queries with JSON
// output.
func soloWorker(t *testing.T, qs string) ecluster.WorkerOptions {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	env := map[string]string{"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
	return ecluster.WorkerOptions{RunOptions: engine.RunOptions{Data: testData(t), Query: qs, Catalog: queries.Catalog(), Format: "json", QueryOptions: engine.QueryOptions{Devices: 1, Mem: 1 << 30}},
		Timeout: 5 * time.Second, Getenv: func(k string) string { return env[k] }}
}
