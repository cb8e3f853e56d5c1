package dbgen

import "gostachio/tpch/schema"

// genRegion is dbgen's mk_region for regions [first, first+n).
func (g *Generator) genRegion(first, n int64) *schema.Batch {
	d := g.sh.d
	s := newStreams(tRegion, first)
	b := newBatch(&schema.Region, int(n), 80)
	c := b.Cols
	for i := first; i < first+n; i++ {
		s.rowStart()
		c[0].I64 = append(c[0].I64, i)
		c[1].Bytes = append(c[1].Bytes, d.regions.text[i]...)
		endString(&c[1])
		c[2].Bytes = g.appendText(s, c[2].Bytes, rCmntLen, rCmntSd)
		endString(&c[2])
		s.rowStop(tRegion)
	}
	b.Rows = int(n)
	return b
}
