package dbgen

import "gostachio/tpch/schema"

// Stream numbers and constants of dbgen's dss.h, per table.
const (
	pMfgSd, pBrndSd, pTypeSd, pSizeSd, pCntrSd = 0, 1, 2, 3, 4
	pCmntSd, psQtySd, psScstSd, psCmntSd       = 6, 7, 8, 9
	pNameSd                                    = 37
	pCmntLen, psCmntLen                        = 14, 124
	suppPerPart                                = 4

	sAddrSd, sNtrgSd, sPhneSd, sAbalSd, sCmntSd = 32, 33, 34, 35, 36
	bbbJnkSd, bbbTypeSd, bbbCmntSd, bbbOffsetSd = 44, 45, 46, 47
	sAddrLen, sCmntLen                          = 25, 63

	cAddrSd, cNtrgSd, cPhneSd, cAbalSd, cMsegSd, cCmntSd = 26, 27, 28, 29, 30, 31
	cAddrLen, cCmntLen                                   = 25, 73

	oSuppSd, oClrkSd, oCmntSd, oOdateSd, oPrioSd, oCkeySd, oLcntSd = 10, 11, 12, 13, 38, 40, 43
	oCmntLen, oClrkScl, oLcntMax, ordersPerCust                    = 49, 1000, 7, 10

	lQtySd, lDcntSd, lTaxSd, lShipSd, lSmodeSd, lPkeySd, lSkeySd = 14, 15, 16, 17, 18, 19, 20
	lSdteSd, lCdteSd, lRdteSd, lRflgSd, lCmntSd                  = 21, 22, 23, 24, 25
	lCmntLen                                                     = 27

	nCmntSd, rCmntSd, nCmntLen, rCmntLen = 41, 42, 72, 72

	startDate   = 92001 // dbgen's STARTDATE, yyddd
	currentDate = 95168 // dbgen's CURRENTDATE, yyddd (1995-06-17)
	totDate     = 2557  // days from 1992-01-01 to 1998-12-31, inclusive
	// epochDay19920101 is 1992-01-01 as days since 1970-01-01.
	epochDay19920101 = 8035
)

func rpb(p int64) int64 { return 90000 + (p/10)%20001 + (p%1000)*100 }

func (g *Generator) bridge(p, s int64) int64 {
	tot := g.baseSupp * g.scale
	return (p+s*(tot/suppPerPart+(p-1)/tot))%tot + 1
}

// Column indexes, in schema order.
const (
	pPartkey, pName, pMfgr, pBrand, pType, pSize, pContainer, pRetail, pComment = 0, 1, 2, 3, 4, 5, 6, 7, 8
)

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

// makeSparse turns an order's ordinal into dbgen's sparse order key: of
// every 32 keys only the first 8 are used.
func makeSparse(i int64) int64 { return (((i >> 3) << 2) << 3) | (i & 7) }

func yeap(year int64) int64 {
	if year%4 == 0 && year%100 != 0 {
		return 1
	}
	return 0
}

// julian converts a day number counted from startDate into dbgen's yyddd.
func julian(date int64) int64 {
	offset := date - startDate
	result := int64(startDate)
	for {
		yr := result / 1000
		yend := yr*1000 + 365 + yeap(yr)
		if result+offset <= yend {
			return result + offset
		}
		offset -= yend - result + 1
		result += 1000
	}
}

func (g *Generator) genOrders(first, n int64) (*schema.Batch, *schema.Batch) {
	d := g.sh.d
	s := newStreams(tOrder, first)
	ord := newBatch(&schema.Orders, int(n), 55)
	li := newBatch(&schema.Lineitem, int(n)*4+16, 30)
	o, l := ord.Cols, li.Cols
	custMax := g.baseCust * g.scale
	partMax := g.basePart * g.scale
	odateMax := int64(startDate + totDate - (121 + 30) - 1)
	clerks := max(g.scale*oClrkScl, oClrkScl)
	for idx := first + 1; idx <= first+n; idx++ {
		s.rowStart()
		okey := makeSparse(idx)
		cust := s.random(1, custMax, oCkeySd)
		// A third of the customers (keys divisible by 3) have no orders.
		for delta := int64(1); cust%3 == 0; delta = -delta {
			cust = min(cust+delta, custMax)
		}
		odate := s.random(startDate, odateMax, oOdateSd)
		prio := d.oPriority.text[s.pick(d.oPriority, oPrioSd)]
		clerk := s.random(1, clerks, oClrkSd)
		o[0].I64 = append(o[0].I64, okey)
		o[1].I64 = append(o[1].I64, cust)
		o[4].I32 = append(o[4].I32, int32(epochDay19920101+odate-startDate))
		o[5].Bytes = append(o[5].Bytes, prio...)
		endString(&o[5])
		o[6].Bytes = append(o[6].Bytes, "Clerk#"...)
		o[6].Bytes = appendPadded(o[6].Bytes, clerk, 9)
		endString(&o[6])
		o[7].I32 = append(o[7].I32, 0)
		o[8].Bytes = g.appendText(s, o[8].Bytes, oCmntLen, oCmntSd)
		endString(&o[8])
		lines := s.random(1, oLcntMax, oLcntSd)
		var total, shipped int64
		for ln := int64(1); ln <= lines; ln++ {
			qty := s.random(1, 50, lQtySd)
			disc := s.random(0, 10, lDcntSd)
			tax := s.random(0, 8, lTaxSd)
			instr := d.lInstruct.text[s.pick(d.lInstruct, lShipSd)]
			mode := d.lSmode.text[s.pick(d.lSmode, lSmodeSd)]
			l[15].Bytes = g.appendText(s, l[15].Bytes, lCmntLen, lCmntSd)
			endString(&l[15])
			pkey := s.random(1, partMax, lPkeySd)
			supp := g.bridge(pkey, s.random(0, 3, lSkeySd))
			price := rpb(pkey) * qty
			total += ((price * (100 - disc)) / 100) * (100 + tax) / 100
			sdate := s.random(1, 121, lSdteSd) + odate
			cdate := s.random(30, 90, lCdteSd) + odate
			rdate := s.random(1, 30, lRdteSd) + sdate
			var rflag byte = 'N'
			if julian(rdate) <= currentDate {
				rflag = d.lRflag.text[s.pick(d.lRflag, lRflgSd)][0]
			}
			var status byte = 'O'
			if julian(sdate) <= currentDate {
				status = 'F'
				shipped++
			}
			l[0].I64 = append(l[0].I64, okey)
			l[1].I64 = append(l[1].I64, pkey)
			l[2].I64 = append(l[2].I64, supp)
			l[3].I32 = append(l[3].I32, int32(ln))
			l[4].I64 = append(l[4].I64, qty*100)
			l[5].I64 = append(l[5].I64, price)
			l[6].I64 = append(l[6].I64, disc)
			l[7].I64 = append(l[7].I64, tax)
			l[8].Bytes = append(l[8].Bytes, rflag)
			endString(&l[8])
			l[9].Bytes = append(l[9].Bytes, status)
			endString(&l[9])
			l[10].I32 = append(l[10].I32, int32(epochDay19920101+sdate-startDate))
			l[11].I32 = append(l[11].I32, int32(epochDay19920101+cdate-startDate))
			l[12].I32 = append(l[12].I32, int32(epochDay19920101+rdate-startDate))
			l[13].Bytes = append(l[13].Bytes, instr...)
			endString(&l[13])
			l[14].Bytes = append(l[14].Bytes, mode...)
			endString(&l[14])
			li.Rows++
		}
		st := byte('O')
		if shipped > 0 {
			st = 'P'
		}
		if shipped == lines {
			st = 'F'
		}
		o[2].Bytes = append(o[2].Bytes, st)
		endString(&o[2])
		o[3].I64 = append(o[3].I64, total)
		s.rowStop(tOrder)
	}
	ord.Rows = int(n)
	return ord, li
}

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
