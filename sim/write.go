package sim

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"gostachio/internal/atomicfile"
)

// MarshalProfile writes p as a profile file: header, each of its lines
// made a comment ("# " added where it lacks one), then p's YAML, every
// rate, duration and size with its unit. ParseProfile reads the result
// back as a Profile equal to p. It refuses a p that does not validate.
func MarshalProfile(p *Profile, header string) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("sim: marshal profile %s: %w", p.Name, err)
	}
	var b bytes.Buffer
	if h := strings.TrimRight(header, "\n"); h != "" {
		for _, line := range strings.Split(h, "\n") {
			switch {
			case line == "":
				b.WriteString("#\n")
			case strings.HasPrefix(line, "#"):
				b.WriteString(line + "\n")
			default:
				b.WriteString("# " + line + "\n")
			}
		}
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("sim: marshal profile %s: %w", p.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("sim: marshal profile %s: %w", p.Name, err)
	}
	return b.Bytes(), nil
}

// WriteProfile writes p to path (MarshalProfile with header) atomically:
// to a temporary file in path's folder, renamed over path once complete,
// so a reader never sees half a profile. The written file is read back
// and must load (ParseProfile).
func WriteProfile(path string, p *Profile, header string) error {
	data, err := MarshalProfile(p, header)
	if err != nil {
		return err
	}
	if _, err := ParseProfile(path, data); err != nil {
		return fmt.Errorf("sim: write profile: the written profile does not load (a bug): %w", err)
	}
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("sim: write profile: %w", err)
	}
	return nil
}
