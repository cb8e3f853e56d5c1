package dataset

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyDir copies the flat folder src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// editManifest rewrites dir's manifest through a generic JSON tree, so the
// edit does not depend on the Manifest struct.
func editManifest(t *testing.T, dir string, f func(m map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, ManifestName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func table(m map[string]any, name string) map[string]any {
	for _, t := range m["tables"].([]any) {
		if t.(map[string]any)["name"] == name {
			return t.(map[string]any)
		}
	}
	panic("test: no table " + name)
}

func column(m map[string]any, tbl string, i int) map[string]any {
	return table(m, tbl)["columns"].([]any)[i].(map[string]any)
}

func TestOpenBadInput(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good")
	writeDataset(t, good, CreateOptions{}, sampleData())
	tests := []struct {
		name    string
		mutate  func(t *testing.T, dir string)
		want    error
		mention string // substring the error must contain
	}{
		{"manifest missing", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, ManifestName)) }, ErrNoManifest, "manifest.json"},
		{"folder missing", func(t *testing.T, dir string) { os.RemoveAll(dir) }, ErrNoManifest, "manifest.json"},
		{"corrupt JSON", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, ManifestName), []byte(`{"format_version": 1, "tables": [`), 0o644)
		}, ErrCorrupt, "manifest.json"},
		{"JSON array", func(t *testing.T, dir string) { os.WriteFile(filepath.Join(dir, ManifestName), []byte(`[]`), 0o644) }, ErrCorrupt, "invalid JSON"},
		{"no format version", func(t *testing.T, dir string) { os.WriteFile(filepath.Join(dir, ManifestName), []byte(`{}`), 0o644) }, ErrCorrupt, "format_version"},
		{"format version 2", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { m["format_version"] = 2 })
		}, ErrFormatVersion, "format_version 2"},
		{"TPC-H column type changed", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { column(m, "nation", 2)["type"] = "int32" })
		}, ErrCorrupt, "n_regionkey"},
		{"TPC-H column renamed", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { column(m, "nation", 1)["name"] = "n_title" })
		}, ErrCorrupt, "TPC-H says n_name"},
		{"unknown type", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { column(m, "alltypes", 0)["type"] = "float16" })
		}, ErrCorrupt, "float16"},
		{"decimal scale", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { column(m, "alltypes", 1)["scale"] = 16 })
		}, ErrCorrupt, "precision/scale"},
		{"unknown checksum", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { m["checksums"] = "md5" })
		}, ErrCorrupt, `checksums "md5"`},
		{"data file missing", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "nation.arrow")) }, fs.ErrNotExist, "nation.arrow"},
		{"data file truncated", func(t *testing.T, dir string) {
			st, _ := os.Stat(filepath.Join(dir, "lineitem.arrow"))
			os.Truncate(filepath.Join(dir, "lineitem.arrow"), st.Size()-4096)
		}, ErrCorrupt, "lineitem.arrow: corrupt dataset: data file has"},
		{"IPC schema disagrees", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { column(m, "alltypes", 0)["name"] = "kk" })
		}, ErrCorrupt, "alltypes.arrow"},
		{"IPC footer smashed", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "region.arrow")
			b, _ := os.ReadFile(p)
			copy(b[len(b)-6:], "XXXXXX")
			os.WriteFile(p, b, 0o644)
		}, ErrCorrupt, "region.arrow"},
		{"IPC footer blocks disagree", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) {
				ch := table(m, "nation")["chunks"].([]any)[0].(map[string]any)
				ch["meta_length"] = ch["meta_length"].(float64) - 8
				ch["offset"] = ch["offset"].(float64) + 8
			})
		}, ErrCorrupt, "nation.arrow"},
		{"misaligned buffer", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) {
				ch := table(m, "lineitem")["chunks"].([]any)[1].(map[string]any)
				buf := ch["columns"].([]any)[0].(map[string]any)["buffers"].([]any)[1].(map[string]any)
				buf["off"] = buf["off"].(float64) + 8
			})
		}, ErrCorrupt, "misaligned"},
		{"wrong buffer length", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) {
				ch := table(m, "lineitem")["chunks"].([]any)[0].(map[string]any)
				buf := ch["columns"].([]any)[3].(map[string]any)["buffers"].([]any)[1].(map[string]any)
				buf["len"] = buf["len"].(float64) + 4
			})
		}, ErrCorrupt, "l_linenumber"},
		{"row count", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { table(m, "nation")["rows"] = 26 })
		}, ErrCorrupt, "26"},
		{"path escapes", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) {
				table(m, "nation")["files"].([]any)[0].(map[string]any)["path"] = "../good/nation.arrow"
			})
		}, ErrCorrupt, "../good"},
		{"statistic kind", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) {
				table(m, "nation")["chunks"].([]any)[0].(map[string]any)["columns"].([]any)[1].(map[string]any)["min"] = 3
			})
		}, ErrCorrupt, "n_name"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ds")
			copyDir(t, good, dir)
			tc.mutate(t, dir)
			_, err := Open(dir)
			if err == nil {
				t.Fatalf("case %d: Open accepted it", i)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v is not %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
	if _, err := Open(good); err != nil {
		t.Fatalf("the unmodified dataset: %v", err)
	}
}
