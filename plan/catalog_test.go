package plan

import (
	"errors"
	"strings"
	"testing"
)

func TestMergeCatalogs(t *testing.T) {
	mk := func(tag string, sf float64, names ...string) Catalog {
		return Catalog{Names: names,
			Build: func(name string, _ float64, _ []TableStats) (*Plan, error) {
				return &Plan{Name: tag + ":" + name}, nil
			},
			ScaleFactor: func([]TableStats) (float64, error) {
				if sf == 0 {
					return 0, errors.New(tag + " infers nothing")
				}
				return sf, nil
			}}
	}
	m, err := MergeCatalogs(mk("tpch", 0, "q1", "q6"), mk("sql", 1, "mine"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Names, ",") != "q1,q6,mine" {
		t.Errorf("names = %v", m.Names)
	}
	for name, want := range map[string]string{"q6": "tpch:q6", "mine": "sql:mine"} {
		if p, err := m.Plan(name, 1, nil); err != nil || p.Name != want {
			t.Errorf("Plan(%s) = %v, %v; want %s", name, p, err, want)
		}
	}
	if sf, err := m.ScaleFactor(nil); err != nil || sf != 1 {
		t.Errorf("scale factor = %v, %v; want the second catalog's 1", sf, err)
	}
	if _, err := MergeCatalogs(mk("a", 1, "x"), mk("b", 1, "x")); err == nil {
		t.Error("two catalogs with x merged")
	}
}
