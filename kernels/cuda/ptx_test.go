package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestPTXManifest is `make ptx-check`: the checked-in PTX was built from
// the current CUDA sources. With no PTX yet it only checks that the
// manifest is empty (GPU validation pending).
func TestPTXManifest(t *testing.T) {
	man, err := Manifest()
	if err != nil {
		t.Fatal(err)
	}
	sources, err := filepath.Glob("*.cu")
	if err != nil {
		t.Fatal(err)
	}
	headers, _ := filepath.Glob("*.cuh")
	sources = append(sources, headers...)
	if len(sources) == 0 {
		t.Fatal("no CUDA sources (*.cu) in kernels/cuda")
	}
	names := PTXNames()
	if len(names) == 0 {
		if len(man) != 0 {
			t.Fatalf("%s lists %d files but no PTX is checked in: run `make ptx` on a machine with nvcc", ManifestName, len(man))
		}
		t.Log("no PTX built yet (GPU validation pending)")
		return
	}
	want := map[string]bool{}
	for _, f := range sources {
		want[f] = true
		if strings.HasSuffix(f, ".cu") {
			want["ptx/"+strings.TrimSuffix(f, ".cu")+".ptx"] = true
		}
	}
	for _, n := range names {
		if !want["ptx/"+n+".ptx"] {
			t.Errorf("ptx/%s.ptx has no source %s.cu: delete it or run `make ptx`", n, n)
		}
	}
	var files []string
	for f := range want {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Errorf("%s: %v (run `make ptx` on a machine with nvcc)", f, err)
			continue
		}
		sum := sha256.Sum256(b)
		got := hex.EncodeToString(sum[:])
		switch rec, ok := man[f]; {
		case !ok:
			t.Errorf("%s is not in %s: run `make ptx` on a machine with nvcc", f, ManifestName)
		case rec != got:
			t.Errorf("%s changed since the PTX was built (sha256 %s, manifest %s): run `make ptx` on a machine with nvcc", f, got[:12], rec[:12])
		}
	}
	for f := range man {
		if !want[f] {
			t.Errorf("%s lists %s, which is not a current source or PTX file", ManifestName, f)
		}
	}
	// The embedded copy is the file on disk.
	for _, n := range names {
		emb, _ := PTX(n)
		disk, err := os.ReadFile(filepath.Join("ptx", n+".ptx"))
		if err != nil || string(disk) != string(emb) {
			t.Errorf("embedded ptx/%s.ptx differs from the file (%v)", n, err)
		}
		if len(Kernels(emb)) == 0 {
			t.Errorf("ptx/%s.ptx declares no kernels", n)
		}
	}
}

func TestParseManifest(t *testing.T) {
	h := strings.Repeat("ab", 32)
	m, err := ParseManifest([]byte("# built by make ptx\n" + h + "  filter.cu\n" + h + " *ptx/filter.ptx\n\n"))
	if err != nil || len(m) != 2 || m["filter.cu"] != h || m["ptx/filter.ptx"] != h {
		t.Fatalf("ParseManifest = %v, %v", m, err)
	}
	for _, bad := range []string{"xyz  filter.cu\n", h + "\n", h + "  a.cu\n" + h + "  a.cu\n", strings.ToUpper(h) + "  a.cu\n"} {
		if _, err := ParseManifest([]byte(bad)); err == nil {
			t.Errorf("ParseManifest(%q) succeeded", bad)
		}
	}
}

func TestKernels(t *testing.T) {
	ptx := "//\n.version 7.0\n.target sm_70\n.visible .entry filter_cmp_i64(\n\t.param .u64 a\n)\n{\n}\n.visible .entry compact_write (\n"
	got := Kernels([]byte(ptx))
	if len(got) != 2 || got[0] != "filter_cmp_i64" || got[1] != "compact_write" {
		t.Fatalf("Kernels = %v", got)
	}
}

// TestGPUModulesLoad JIT-compiles every embedded PTX module on the device
// and looks up each of its kernels.
func TestGPUModulesLoad(t *testing.T) {
	names := testPTXNames(t)
	if len(names) == 0 {
		t.Skip("no PTX built yet (GPU validation pending)")
	}
	c := gpu(t)
	for _, n := range names {
		ptx := testPTX(t, n)
		m, err := c.LoadModule(n+".ptx", ptx)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range Kernels(ptx) {
			if _, err := m.Function(k); err != nil {
				t.Error(err)
			}
		}
		if err := m.Unload(); err != nil {
			t.Fatal(err)
		}
	}
}

const ptxDirEnv = PTXDirEnv

// testPTXNames lists the modules the GPU tests load (ptxDirEnv's, else the
// embedded ones).
func testPTXNames(t *testing.T) []string {
	t.Helper()
	dir := os.Getenv(ptxDirEnv)
	if dir == "" {
		return PTXNames()
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.ptx"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".ptx"))
	}
	sort.Strings(names)
	return names
}

// testPTX is module name's PTX (ptxDirEnv's, else the embedded); the test
// is skipped when there is none.
func testPTX(t *testing.T, name string) []byte {
	t.Helper()
	if dir := os.Getenv(ptxDirEnv); dir != "" {
		b, err := os.ReadFile(filepath.Join(dir, name+".ptx"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b, ok := PTX(name)
	if !ok {
		t.Skipf("no %s.ptx built yet (GPU validation pending)", name)
	}
	return b
}
