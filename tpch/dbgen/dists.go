package dbgen

import (
	"fmt"

	"github.com/pingcap/go-tpc/tpch/dbgen/dist"
)

// distribution is a weighted list from dbgen's dists.dss; weights are
// cumulative, as dbgen's read_dist stores them (for "nations" the
// cumulative weight is the region key).
type distribution struct {
	text   []string
	weight []int64 // cumulative
}

func (d *distribution) count() int { return len(d.text) }

func (d *distribution) max() int64 { return d.weight[len(d.weight)-1] }

func loadDist(name string) *distribution {
	items, ok := dist.Maps[name]
	if !ok {
		panic(fmt.Sprintf("dbgen: distribution %q missing from dists.dss", name)) // programmer error
	}
	d := &distribution{}
	var sum int64
	for _, it := range items {
		sum += int64(it.Weight)
		d.text = append(d.text, it.Text)
		d.weight = append(d.weight, sum)
	}
	return d
}

// dists are the distributions the generator uses (read-only after init).
type dists struct {
	nations, regions, oPriority, lInstruct, lSmode, lRflag, cMseg *distribution
	colors, pTypes, pCntr                                         *distribution
	articles, nouns, adjectives, adverbs, prepositions, verbs     *distribution
	terminators, auxillaries, np, vp, grammar                     *distribution
}

func loadDists() *dists {
	return &dists{
		nations: loadDist("nations"), regions: loadDist("regions"), oPriority: loadDist("o_oprio"),
		lInstruct: loadDist("instruct"), lSmode: loadDist("smode"), lRflag: loadDist("rflag"),
		cMseg: loadDist("msegmnt"), colors: loadDist("colors"), pTypes: loadDist("p_types"),
		pCntr: loadDist("p_cntr"), articles: loadDist("articles"), nouns: loadDist("nouns"),
		adjectives: loadDist("adjectives"), adverbs: loadDist("adverbs"),
		prepositions: loadDist("prepositions"), verbs: loadDist("verbs"),
		terminators: loadDist("terminators"), auxillaries: loadDist("auxillaries"),
		np: loadDist("np"), vp: loadDist("vp"), grammar: loadDist("grammar"),
	}
}

// pick is dbgen's pick_str: a weighted choice from d on stream sd.
func (s *streams) pick(d *distribution, sd int) int {
	j := s.random(1, d.max(), sd)
	pos := 0
	for d.weight[pos] < j {
		pos++
	}
	return pos
}

// permute is dbgen's permute_dist over d's indexes (into perm) on stream sd.
func (s *streams) permute(perm []int, n int, sd int) {
	for i := range n {
		perm[i] = i
	}
	for i := range n {
		src := s.random(int64(i), int64(n-1), sd)
		perm[src], perm[i] = perm[i], perm[src]
	}
}
