package querygen_test

import (
	"strconv"
	"strings"
	"testing"

	"gostachio/sqlplan/querygen"
)

// TestQueryIsDeterministic: a seed and the configuration reproduce a
// query exactly, also from a second Generator; different seeds give
// different queries.
func TestQueryIsDeterministic(t *testing.T) {
	p := tpchSF001(t)
	g1, err := querygen.New(p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := querygen.New(p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[string]bool{}
	for seed := uint64(0); seed < 200; seed++ {
		a, b, c := g1.Query(seed), g1.Query(seed), g2.Query(seed)
		if a.SQL != b.SQL || a.SQL != c.SQL || a.Ordered != c.Ordered || a.Features != c.Features {
			t.Fatalf("seed %d gives different queries:\n%s\n--\n%s\n--\n%s", seed, a.SQL, b.SQL, c.SQL)
		}
		if a.Seed != seed {
			t.Fatalf("seed %d: query says seed %d", seed, a.Seed)
		}
		distinct[a.SQL] = true
	}
	if len(distinct) < 190 {
		t.Errorf("200 seeds gave only %d distinct queries", len(distinct))
	}
}

// TestQueryCoversGrammar counts every construct over 400 seeds: each must
// appear several times, so a construct the generator silently stopped
// emitting fails here.
func TestQueryCoversGrammar(t *testing.T) {
	p := tpchSF001(t)
	g, err := querygen.New(p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	var counts [querygen.NumFeatures]int
	ordered, limited := 0, 0
	for seed := uint64(0); seed < 400; seed++ {
		q := g.Query(seed)
		for _, f := range q.Features.List() {
			counts[f]++
		}
		if q.Ordered {
			ordered++
		}
		if strings.Contains(q.SQL, "\nlimit ") {
			limited++
			if !q.Ordered {
				t.Errorf("seed %d limits rows without ordering by every output column:\n%s", seed, q.SQL)
			}
		}
		if strings.ContainsAny(q.SQL, "\x00\x01") {
			t.Errorf("seed %d left a placeholder in:\n%q", seed, q.SQL)
		}
	}
	var b strings.Builder
	for f := querygen.Feature(0); f < querygen.NumFeatures; f++ {
		b.WriteString(f.String() + "=" + strconv.Itoa(counts[f]) + " ")
		if counts[f] < 4 {
			t.Errorf("construct %s appears in %d of 400 queries, want at least 4", f, counts[f])
		}
	}
	t.Logf("constructs over 400 queries (%d ordered, %d limited): %s", ordered, limited, b.String())
}
