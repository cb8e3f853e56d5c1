package dbgen

import "gostachio/tpch/schema"

// genSupp is dbgen's mk_supp for suppliers [first+1, first+n].
func (g *Generator) genSupp(first, n int64) *schema.Batch {
	s := newStreams(tSupp, first)
	b := newBatch(&schema.Supplier, int(n), 70)
	c := b.Cols
	var comment []byte
	for idx := first + 1; idx <= first+n; idx++ {
		s.rowStart()
		c[0].I64 = append(c[0].I64, idx)
		c[1].Bytes = append(c[1].Bytes, "Supplier#"...)
		c[1].Bytes = appendPadded(c[1].Bytes, idx, 9)
		endString(&c[1])
		c[2].Bytes = appendVStr(s, c[2].Bytes, sAddrLen, sAddrSd)
		endString(&c[2])
		nation := s.random(0, int64(g.sh.d.nations.count()-1), sNtrgSd)
		c[3].I64 = append(c[3].I64, nation)
		c[4].Bytes = appendPhone(s, c[4].Bytes, nation, sPhneSd)
		endString(&c[4])
		c[5].I64 = append(c[5].I64, s.random(-99999, 999999, sAbalSd))
		comment = g.appendText(s, comment[:0], sCmntLen, sCmntSd)
		// Better Business Bureau comments (Q16 looks for them).
		const base, complain, commend, cmntLen = "Customer ", "Complaints", "Recommends", 19
		badPress := s.random(1, 10000, bbbCmntSd)
		kind := s.random(0, 100, bbbTypeSd)
		noise := s.random(0, int64(len(comment))-cmntLen, bbbJnkSd)
		offset := s.random(0, int64(len(comment))-(cmntLen+noise), bbbOffsetSd)
		if badPress <= 10 {
			copy(comment[offset:], base)
			if kind < 50 {
				copy(comment[int64(len(base))+offset+noise:], complain)
			} else {
				copy(comment[int64(len(base))+offset+noise:], commend)
			}
		}
		c[6].Bytes = append(c[6].Bytes, comment...)
		endString(&c[6])
		s.rowStop(tSupp)
	}
	b.Rows = int(n)
	return b
}
