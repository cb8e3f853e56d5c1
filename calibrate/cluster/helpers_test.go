package cluster

import (
	"gostachio/internal/testfixture"
	"os"
	"testing"
	"time"

	"gostachio/engine"
	ecluster "gostachio/engine/cluster"
	"gostachio/tpch/queries"
)

// fixture is the test binary's SF0.01 dataset, in small chunks (lineitem:
// about 15) so that every table spreads over the workers, and its
// gostachio binary.
var fixture = &testfixture.Fixture{Prefix: "gostachio-calibrate-cluster-test-", ChunkRows: 4096}

func testData(t testing.TB) string { return fixture.TPCH(t) }

func gostachioBin(t *testing.T) string { return fixture.Binary(t) }

func TestMain(m *testing.M) {
	// Received memory is poisoned when released: a peer that read a frame
	// after releasing it fails.
	os.Setenv("GOSTACHIO_POISON_RECV", "1")
	code := m.Run()
	fixture.Cleanup()
	os.Exit(code)
}

// needNetns skips a test that cannot make network namespaces here.
func needNetns(t *testing.T) { testfixture.NeedNetns(t, ecluster.CheckNetns, ecluster.NetnsPrefix) }

// soloWorker is the options of a worker of a world of one on the SF0.01
// test data, rank 0 at a free loopback port, running queries with JSON
// output.
func soloWorker(t *testing.T, qs string) ecluster.WorkerOptions {
	t.Helper()
	return ecluster.WorkerOptions{RunOptions: engine.RunOptions{Data: testData(t), Query: qs, Catalog: queries.Catalog(), Format: "json", QueryOptions: engine.QueryOptions{Devices: 1, Mem: 1 << 30}},
		Timeout: 5 * time.Second, Getenv: testfixture.SoloEnv(t)}
}
