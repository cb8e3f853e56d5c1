package plan

import "testing"

func TestFingerprint(t *testing.T) {
	base := Op{Kind: OpFilter, In: []string{"l_shipdate", "l_quantity"}, Out: []string{"l_shipdate", "l_quantity"},
		Expr: SQL("l_shipdate <= date '1998-09-02'"), Selectivity: 0.98, OutWidth: 12}
	fp := base.Fingerprint()
	if len(fp) != 16 {
		t.Fatalf("fingerprint %q: want 16 hex digits", fp)
	}
	same := base
	same.Selectivity, same.OutWidth, same.Groups, same.Build, same.Label = 0.5, 99, 7, 3, "other label"
	if got := same.Fingerprint(); got != fp {
		t.Errorf("estimates changed the fingerprint: %s vs %s", got, fp)
	}
	for name, mut := range map[string]func(o *Op){
		"kind":  func(o *Op) { o.Kind = OpProject },
		"expr":  func(o *Op) { o.Expr = SQL("l_shipdate <= date '1998-09-03'") },
		"in":    func(o *Op) { o.In = []string{"l_shipdate"} },
		"out":   func(o *Op) { o.Out = []string{"l_quantity", "l_shipdate"} },
		"keys":  func(o *Op) { o.Keys = []string{"l_orderkey"} },
		"limit": func(o *Op) { o.Limit = 10 },
		"nil":   func(o *Op) { o.Expr = nil },
	} {
		o := base
		mut(&o)
		if got := o.Fingerprint(); got == fp {
			t.Errorf("changing the %s kept the fingerprint %s", name, fp)
		}
	}
	// Column lists are joined with separators: moving a column from In to
	// Out is another operator.
	a := Op{Kind: OpFilter, In: []string{"a", "b"}, Out: []string{"c"}}
	b := Op{Kind: OpFilter, In: []string{"a"}, Out: []string{"b", "c"}}
	if a.Fingerprint() == b.Fingerprint() {
		t.Error("In/Out boundary not part of the fingerprint")
	}
}
