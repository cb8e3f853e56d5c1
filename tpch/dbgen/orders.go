package dbgen

import (
	"math"

	"gostachio/tpch/schema"
)

// makeSparse turns an order's ordinal into dbgen's sparse order key: of
// every 32 keys only the first 8 are used.
func makeSparse(i int64) int64 { return (((i >> 3) << 2) << 3) | (i & 7) }

// yeap is dbgen's leap-year test as julian uses it (years are two-digit,
// 92..98, so the century rule never applies).
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

// genOrders is dbgen's mk_order for orders [first+1, first+n] (ordinals;
// keys are sparse) and their lines: mk_order builds both, the line count
// of an order being drawn on an order stream.
func (g *Generator) genOrders(first, n int64) (*schema.Batch, *schema.Batch) {
	d := g.sh.d
	s := newStreams(tOrder, first)
	ord := newBatch(&schema.Orders, int(n), 55)
	// Orders have 1..7 lines, 4 on average with a standard deviation of 2:
	// room for the mean plus 4 standard deviations of n orders means the
	// columns practically never grow (and get copied) while filling.
	li := newBatch(&schema.Lineitem, int(4*n+8*isqrt(n)+16), 30)
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

// isqrt is the integer square root of n >= 0 (rounded down).
func isqrt(n int64) int64 {
	r := int64(math.Sqrt(float64(n)))
	for r*r > n {
		r--
	}
	for (r+1)*(r+1) <= n {
		r++
	}
	return r
}
