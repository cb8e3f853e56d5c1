package dbgen

import "gostachio/tpch/schema"

// genCust is dbgen's mk_cust for customers [first+1, first+n].
func (g *Generator) genCust(first, n int64) *schema.Batch {
	d := g.sh.d
	s := newStreams(tCust, first)
	b := newBatch(&schema.Customer, int(n), 80)
	c := b.Cols
	for idx := first + 1; idx <= first+n; idx++ {
		s.rowStart()
		c[0].I64 = append(c[0].I64, idx)
		c[1].Bytes = append(c[1].Bytes, "Customer#"...)
		c[1].Bytes = appendPadded(c[1].Bytes, idx, 9)
		endString(&c[1])
		c[2].Bytes = appendVStr(s, c[2].Bytes, cAddrLen, cAddrSd)
		endString(&c[2])
		nation := s.random(0, int64(d.nations.count()-1), cNtrgSd)
		c[3].I64 = append(c[3].I64, nation)
		c[4].Bytes = appendPhone(s, c[4].Bytes, nation, cPhneSd)
		endString(&c[4])
		c[5].I64 = append(c[5].I64, s.random(-99999, 999999, cAbalSd))
		c[6].Bytes = append(c[6].Bytes, d.cMseg.text[s.pick(d.cMseg, cMsegSd)]...)
		endString(&c[6])
		c[7].Bytes = g.appendText(s, c[7].Bytes, cCmntLen, cCmntSd)
		endString(&c[7])
		s.rowStop(tCust)
	}
	b.Rows = int(n)
	return b
}
