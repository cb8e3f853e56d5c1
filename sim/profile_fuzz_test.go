package sim

import (
	"strings"
	"testing"
)

// FuzzParseProfile parses arbitrary bytes as a hardware profile: it must
// return a profile or an error naming the file, never panic, and a profile
// it accepts must pass Validate. Seeds: every shipped profile.
func FuzzParseProfile(f *testing.F) {
	for _, name := range ProfileNames() {
		data, err := profileFS.ReadFile("profiles/" + name + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProfile("fuzz.yaml", data)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("ParseProfile accepted a profile Validate refuses: %v", err)
		}
	})
}
