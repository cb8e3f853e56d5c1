package dbgen

import "gostachio/tpch/schema"

// genNation is dbgen's mk_nation: nation i (0-based) of the nations
// distribution, its region key being the distribution's weight.
func (g *Generator) genNation(first, n int64) *schema.Batch {
	d := g.sh.d
	s := newStreams(tNation, first)
	b := newBatch(&schema.Nation, int(n), 80)
	c := b.Cols
	for i := first; i < first+n; i++ {
		s.rowStart()
		c[0].I64 = append(c[0].I64, i)
		c[1].Bytes = append(c[1].Bytes, d.nations.text[i]...)
		endString(&c[1])
		c[2].I64 = append(c[2].I64, d.nations.weight[i])
		c[3].Bytes = g.appendText(s, c[3].Bytes, nCmntLen, nCmntSd)
		endString(&c[3])
		s.rowStop(tNation)
	}
	b.Rows = int(n)
	return b
}
