package scheduler

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// ListPolicies writes the registered policies and every knob with each
// policy's default: a table for people, or (jsonOut) one JSON document
// {"knobs":[{name,type,doc}], "policies":[{name,doc,defaults:{knob:value}}]}.
// This is what `gostachio policies` prints.
func ListPolicies(w io.Writer, jsonOut bool) error {
	type jpol struct {
		Name     string            `json:"name"`
		Doc      string            `json:"doc"`
		Defaults map[string]string `json:"defaults"`
		Params   []Param           `json:"params,omitempty"`
	}
	pols := Policies()
	if jsonOut {
		doc := struct {
			Knobs    []KnobInfo `json:"knobs"`
			Policies []jpol     `json:"policies"`
		}{Knobs: Knobs()}
		for _, p := range pols {
			jp := jpol{Name: p.Name, Doc: p.Doc, Defaults: map[string]string{}, Params: p.Params}
			for _, k := range knobs {
				v, err := p.Defaults.Get(k.name)
				if err != nil {
					return err
				}
				jp.Defaults[k.name] = v
			}
			doc.Policies = append(doc.Policies, jp)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return fmt.Errorf("scheduler: list policies: %w", err)
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tDESCRIPTION")
	for _, p := range pols {
		fmt.Fprintf(tw, "%s\t%s\n", p.Name, p.Doc)
	}
	fmt.Fprintln(tw)
	fmt.Fprint(tw, "KNOB\tTYPE")
	for _, p := range pols {
		fmt.Fprintf(tw, "\t%s", p.Name)
	}
	fmt.Fprintln(tw, "\tMEANING")
	for _, k := range knobs {
		fmt.Fprintf(tw, "%s\t%s", k.name, k.kind)
		for _, p := range pols {
			v, err := p.Defaults.Get(k.name)
			if err != nil {
				return err
			}
			fmt.Fprintf(tw, "\t%s", v)
		}
		fmt.Fprintf(tw, "\t%s\n", k.doc)
	}
	fmt.Fprintln(tw)
	params := false
	for _, p := range pols {
		for _, pr := range p.Params {
			if !params {
				fmt.Fprintln(tw, "POLICY\tPARAMETER\tDEFAULT\tMEANING")
				params = true
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, pr.Name, pr.Default, pr.Doc)
		}
	}
	if params {
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw, "Set knobs and a policy's parameters with --policy NAME --set k=v,k=v (bytes take units: 8MiB; booleans on/off).")
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("scheduler: list policies: %w", err)
	}
	return nil
}
