package cuda

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// The PTX of the kernels (ptx/<name>.ptx for <name>.cu) is built by
// `make ptx` on a machine with nvcc and checked in; ptx/SOURCES.sha256
// records, in sha256sum's format, the hash of every CUDA source (*.cu,
// *.cuh) and of every PTX file it was built into, so a test (`make
// ptx-check`) catches sources edited without rebuilding the PTX, and PTX
// edited by hand.
//
//go:embed ptx
var ptxFS embed.FS

// ManifestName is the manifest's path inside the package directory.
const ManifestName = "ptx/SOURCES.sha256"

// PTX returns the embedded PTX built from <name>.cu ("filter" for
// filter.cu), or false when there is none.
func PTX(name string) ([]byte, bool) {
	b, err := ptxFS.ReadFile(path.Join("ptx", name+".ptx"))
	if err != nil {
		return nil, false
	}
	return b, true
}

// PTXNames lists the embedded PTX modules by source name, sorted (empty
// until PTX has been built on a GPU machine).
func PTXNames() []string {
	ents, err := fs.ReadDir(ptxFS, "ptx")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".ptx"); ok && !e.IsDir() {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Manifest is the embedded ptx/SOURCES.sha256: file path (relative to the
// package directory: "filter.cu", "ptx/filter.ptx") to hex sha256. It is
// empty while no PTX has been built.
func Manifest() (map[string]string, error) {
	b, err := ptxFS.ReadFile(ManifestName)
	if err != nil {
		return nil, fmt.Errorf("cuda: %s: %w", ManifestName, err)
	}
	return ParseManifest(b)
}

// ParseManifest parses sha256sum output ("<64 hex>  <path>" lines; a '*'
// before the path, binary mode, is accepted; '#' lines are comments).
func ParseManifest(b []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, file, ok := strings.Cut(line, " ")
		file = strings.TrimPrefix(strings.TrimSpace(file), "*")
		if !ok || len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" || file == "" {
			return nil, fmt.Errorf("cuda: %s line %d: %q is not \"<sha256>  <file>\"", ManifestName, ln, line)
		}
		if _, dup := out[file]; dup {
			return nil, fmt.Errorf("cuda: %s line %d: %s listed twice", ManifestName, ln, file)
		}
		out[file] = sum
	}
	return out, sc.Err()
}

// Kernels lists the .entry (kernel) names of a PTX module.
func Kernels(ptx []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(ptx))
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		for i := 0; i+1 < len(f); i++ {
			if f[i] == ".entry" {
				out = append(out, strings.TrimRight(f[i+1], "("))
				break
			}
		}
	}
	return out
}

// PTXDirEnv names a folder of freshly built PTX (`make ptx` on a GPU
// machine, before it is checked in): LoadPTX, the GPU tests and the GPU
// backend read <name>.ptx from there instead of the embedded copy.
const PTXDirEnv = "GOSTACHIO_PTX_DIR"

// LoadPTX returns module name's PTX: PTXDirEnv's file when that variable is
// set, else the embedded one.
func LoadPTX(name string) ([]byte, error) {
	if dir := os.Getenv(PTXDirEnv); dir != "" {
		b, err := os.ReadFile(filepath.Join(dir, name+".ptx"))
		if err != nil {
			return nil, fmt.Errorf("cuda: %s=%s: %w", PTXDirEnv, dir, err)
		}
		return b, nil
	}
	b, ok := PTX(name)
	if !ok {
		return nil, fmt.Errorf("cuda: no embedded %s.ptx: run `make ptx` on a machine with nvcc", name)
	}
	return b, nil
}
