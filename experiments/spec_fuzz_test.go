package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseSpec parses arbitrary bytes as an experiment spec: it must
// return a spec or an error naming the file, never panic, and a spec it
// accepts must have what a run needs (queries, policies, repetitions).
// Seeds: every spec under specs/ and testdata/.
func FuzzParseSpec(f *testing.F) {
	for _, glob := range []string{"specs/*.yaml", "testdata/*.yaml"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseSpec("fuzz.yaml", data)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(s.Queries) == 0 || len(s.Policies) == 0 || s.Reps <= 0 {
			t.Fatalf("accepted a spec without queries, policies or repetitions: %+v", s)
		}
	})
}
