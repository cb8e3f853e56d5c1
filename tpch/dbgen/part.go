package dbgen

import "gostachio/tpch/schema"

// rpb is dbgen's rpb_routine: a part's retail price in cents, a function of
// its key alone (l_extendedprice = rpb(partkey) * quantity).
func rpb(p int64) int64 { return 90000 + (p/10)%20001 + (p%1000)*100 }

// bridge is dbgen's PART_SUPP_BRIDGE: the key of supplier s (0..3) of part p,
// spread over the whole supplier key range of this scale.
func (g *Generator) bridge(p, s int64) int64 {
	tot := g.baseSupp * g.scale
	return (p+s*(tot/suppPerPart+(p-1)/tot))%tot + 1
}

// Column indexes of part, in schema order.
const (
	pPartkey, pName, pMfgr, pBrand, pType, pSize, pContainer, pRetail, pComment = 0, 1, 2, 3, 4, 5, 6, 7, 8
)

// genPart is dbgen's mk_part for parts [first+1, first+n] and, in the same
// pass, their partsupp rows (mk_part builds both; their streams advance
// together).
func (g *Generator) genPart(first, n int64) (*schema.Batch, *schema.Batch) {
	d := g.sh.d
	s := newStreams(tPart, first)
	part := newBatch(&schema.Part, int(n), 40)
	ps := newBatch(&schema.PartSupp, int(n)*suppPerPart, 130)
	perm := make([]int, d.colors.count())
	for idx := first + 1; idx <= first+n; idx++ {
		s.rowStart()
		c := part.Cols
		c[pPartkey].I64 = append(c[pPartkey].I64, idx)
		s.permute(perm, d.colors.count(), pNameSd)
		for i := range 5 {
			if i > 0 {
				c[pName].Bytes = append(c[pName].Bytes, ' ')
			}
			c[pName].Bytes = append(c[pName].Bytes, d.colors.text[perm[i]]...)
		}
		endString(&c[pName])
		mfg := s.random(1, 5, pMfgSd)
		c[pMfgr].Bytes = append(c[pMfgr].Bytes, "Manufacturer#"...)
		c[pMfgr].Bytes = appendPadded(c[pMfgr].Bytes, mfg, 1)
		endString(&c[pMfgr])
		brand := s.random(1, 5, pBrndSd)
		c[pBrand].Bytes = append(c[pBrand].Bytes, "Brand#"...)
		c[pBrand].Bytes = appendPadded(c[pBrand].Bytes, mfg*10+brand, 2)
		endString(&c[pBrand])
		c[pType].Bytes = append(c[pType].Bytes, d.pTypes.text[s.pick(d.pTypes, pTypeSd)]...)
		endString(&c[pType])
		c[pSize].I32 = append(c[pSize].I32, int32(s.random(1, 50, pSizeSd)))
		c[pContainer].Bytes = append(c[pContainer].Bytes, d.pCntr.text[s.pick(d.pCntr, pCntrSd)]...)
		endString(&c[pContainer])
		c[pRetail].I64 = append(c[pRetail].I64, rpb(idx))
		c[pComment].Bytes = g.appendText(s, c[pComment].Bytes, pCmntLen, pCmntSd)
		endString(&c[pComment])
		pc := ps.Cols
		for snum := range int64(suppPerPart) {
			pc[0].I64 = append(pc[0].I64, idx)
			pc[1].I64 = append(pc[1].I64, g.bridge(idx, snum))
			pc[2].I32 = append(pc[2].I32, int32(s.random(1, 9999, psQtySd)))
			pc[3].I64 = append(pc[3].I64, s.random(100, 100000, psScstSd))
			pc[4].Bytes = g.appendText(s, pc[4].Bytes, psCmntLen, psCmntSd)
			endString(&pc[4])
		}
		s.rowStop(tPart)
	}
	part.Rows = int(n)
	ps.Rows = int(n) * suppPerPart
	return part, ps
}
