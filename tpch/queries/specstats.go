package queries

import (
	"math"
	"sync"
	"time"

	"gostachio/plan"
	"gostachio/tpch/schema"
)

// tpchRows is the row count of each TPC-H table at one scale factor, and
// dbgen's integer scale (the scale factor rounded down, at least 1) where
// a domain grows in whole steps.
type tpchRows struct {
	sf                float64
	scale             int64
	p, ps, s, c, o, l int64
}

// rowsOf is the row count of table t.
func (k *tpchRows) rowsOf(t string) int64 {
	switch t {
	case "part":
		return k.p
	case "partsupp":
		return k.ps
	case "supplier":
		return k.s
	case "customer":
		return k.c
	case "orders":
		return k.o
	case "lineitem":
		return k.l
	case "nation":
		return 25
	}
	return 5
}

// specColumn is what TPC-H clause 4.2.3 (and dbgen, where the text leaves
// it open) says of one column's values: the bounds of its integer-coded
// values (nil: not known from the specification) and how many distinct
// values a table of the given size holds.
type specColumn struct {
	bounds   func(k *tpchRows) (lo, hi int64)
	distinct func(k *tpchRows, rows int64) float64
}

// Day numbers (days since 1970-01-01) of clause 4.2.3's dates.
var (
	startDate = epochDay(1992, 1, 1)   // STARTDATE
	endDate   = epochDay(1998, 12, 31) // ENDDATE
	// orderEnd is the last order date, ENDDATE - 151 days.
	orderEnd = endDate - 151
)

func epochDay(y int, m time.Month, d int) int64 {
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// occupancy is the expected number of distinct values among n draws,
// uniform and independent, from a domain of d values:
//
//	d·(1 − (1 − 1/d)^n)
//
// which is n for n ≪ d and d for n ≫ d.
func occupancy(d, n float64) float64 {
	if d <= 1 || n <= 0 {
		return min(d, n)
	}
	return -d * math.Expm1(n*math.Log1p(-1/d))
}

// Constructors of specColumn fields.
func span(lo, hi int64) func(*tpchRows) (int64, int64) {
	return func(*tpchRows) (int64, int64) { return lo, hi }
}

// keyRange is 1..rows of table t.
func keyRange(t string) func(*tpchRows) (int64, int64) {
	return func(k *tpchRows) (int64, int64) { return 1, k.rowsOf(t) }
}

// unique: every row holds its own value.
func unique(_ *tpchRows, rows int64) float64 { return float64(rows) }

// uniform: each row draws one of d values.
func uniform(d float64) func(*tpchRows, int64) float64 {
	return func(_ *tpchRows, rows int64) float64 { return occupancy(d, float64(rows)) }
}

// drawsFrom: each row draws one of the d(k) values, d growing with the scale.
func drawsFrom(d func(k *tpchRows) float64) func(*tpchRows, int64) float64 {
	return func(k *tpchRows, rows int64) float64 { return occupancy(d(k), float64(rows)) }
}

// textPool models a comment drawn from dbgen's text pool: d·(1 − e^(−rows/d))
// distinct values, d the effective number of different comments. Comments
// up to a few dozen bytes repeat (the pool is built from a small grammar);
// d was fitted to the distinct counts of dbgen's SF1 output (p_comment 65%
// of the rows distinct, l_comment 77%; the longer comments stay above 98%
// and are taken as unique).
func textPool(d float64) func(*tpchRows, int64) float64 { return uniform(d) }

// orderKeyMax is the largest order key of o orders: dbgen's sparse keys
// use 8 of every 32 values.
func orderKeyMax(o int64) int64 { return ((o >> 3) << 5) | (o & 7) }

// spec is the TPC-H specification's description of every column's values
// (clause 4.2.3; decimals in hundredths, dates in days since 1970-01-01).
// P, S, C, O, L are the row counts of part, supplier, customer, orders and
// lineitem at the scale factor.
var spec = map[string]specColumn{
	// part: P = 200,000·SF rows.
	"p_partkey":     {keyRange("part"), unique},
	"p_name":        {nil, unique}, // 5 of 92 colour words: 92^5/5! orders, ~ all differ
	"p_mfgr":        {nil, uniform(5)},
	"p_brand":       {nil, uniform(25)},  // Brand#MN, M and N in 1..5
	"p_type":        {nil, uniform(150)}, // 6 × 5 × 5 syllables
	"p_size":        {span(1, 50), uniform(50)},
	"p_container":   {nil, uniform(40)}, // 5 × 8 syllables
	"p_retailprice": {retailBounds, func(k *tpchRows, _ int64) float64 { return float64(retailPrices(k.p).distinct) }},
	"p_comment":     {nil, textPool(215e3)},
	// partsupp: 4 suppliers per part.
	"ps_partkey":    {keyRange("part"), func(k *tpchRows, _ int64) float64 { return float64(k.p) }},
	"ps_suppkey":    {keyRange("supplier"), func(k *tpchRows, _ int64) float64 { return float64(k.s) }},
	"ps_availqty":   {span(1, 9999), uniform(9999)},
	"ps_supplycost": {span(100, 100_000), uniform(99_901)},
	"ps_comment":    {nil, unique},
	// supplier: S = 10,000·SF rows.
	"s_suppkey":   {keyRange("supplier"), unique},
	"s_name":      {nil, unique},
	"s_address":   {nil, unique},
	"s_nationkey": {span(0, 24), uniform(25)},
	"s_phone":     {nil, unique},
	"s_acctbal":   {span(-99_999, 999_999), uniform(1_099_999)},
	"s_comment":   {nil, unique},
	// customer: C = 150,000·SF rows.
	"c_custkey":    {keyRange("customer"), unique},
	"c_name":       {nil, unique},
	"c_address":    {nil, unique},
	"c_nationkey":  {span(0, 24), uniform(25)},
	"c_phone":      {nil, unique},
	"c_acctbal":    {span(-99_999, 999_999), uniform(1_099_999)},
	"c_mktsegment": {nil, uniform(5)},
	"c_comment":    {nil, unique},
	// orders: O = 1,500,000·SF rows, keys sparse in 1..4·O.
	"o_orderkey": {func(k *tpchRows) (int64, int64) { return 1, orderKeyMax(k.o) }, unique},
	// Customers whose key is a multiple of 3 place no orders.
	"o_custkey":       {keyRange("customer"), drawsFrom(func(k *tpchRows) float64 { return float64(k.c - k.c/3) })},
	"o_orderstatus":   {nil, uniform(3)},
	"o_totalprice":    {nil, unique}, // a sum over the lines: nearly all differ
	"o_orderdate":     {span(startDate, orderEnd), uniform(float64(orderEnd - startDate + 1))},
	"o_orderpriority": {nil, uniform(5)},
	// Clerk#n, n in 1..1000·scale.
	"o_clerk":        {nil, drawsFrom(func(k *tpchRows) float64 { return float64(1000 * k.scale) })},
	"o_shippriority": {span(0, 0), uniform(1)},
	"o_comment":      {nil, unique},
	// lineitem: L ≈ 4·O rows, 1..7 per order.
	"l_orderkey":   {func(k *tpchRows) (int64, int64) { return 1, orderKeyMax(k.o) }, func(k *tpchRows, _ int64) float64 { return float64(k.o) }},
	"l_partkey":    {keyRange("part"), drawsFrom(func(k *tpchRows) float64 { return float64(k.p) })},
	"l_suppkey":    {keyRange("supplier"), drawsFrom(func(k *tpchRows) float64 { return float64(k.s) })},
	"l_linenumber": {span(1, 7), uniform(7)},
	"l_quantity":   {span(100, 5000), uniform(50)},
	"l_extendedprice": {extendedBounds, func(k *tpchRows, rows int64) float64 {
		return occupancy(float64(retailPrices(k.p).products), float64(rows))
	}},
	"l_discount":   {span(0, 10), uniform(11)},
	"l_tax":        {span(0, 8), uniform(9)},
	"l_returnflag": {nil, uniform(3)},
	"l_linestatus": {nil, uniform(2)},
	// Ship 1..121 days after the order, commit 30..90, receipt 1..30
	// after shipping.
	"l_shipdate":     {span(startDate+1, orderEnd+121), uniform(float64(orderEnd + 121 - startDate))},
	"l_commitdate":   {span(startDate+30, orderEnd+90), uniform(float64(orderEnd + 90 - startDate - 29))},
	"l_receiptdate":  {span(startDate+2, orderEnd+151), uniform(float64(orderEnd + 151 - startDate - 1))},
	"l_shipinstruct": {nil, uniform(4)},
	"l_shipmode":     {nil, uniform(7)},
	"l_comment":      {nil, textPool(10.9e6)},
	// nation and region: fixed content.
	"n_nationkey": {span(0, 24), unique},
	"n_name":      {nil, unique},
	"n_regionkey": {span(0, 4), uniform(5)},
	"n_comment":   {nil, unique},
	"r_regionkey": {span(0, 4), unique},
	"r_name":      {nil, unique},
	"r_comment":   {nil, unique},
}

// retailPrice is p_retailprice of part key p in hundredths (clause 4.2.3):
// 90000 + ((p/10) mod 20001) + 100·(p mod 1000).
func retailPrice(p int64) int64 { return 90_000 + (p/10)%20_001 + 100*(p%1000) }

// retailPeriod is the period of retailPrice in p: lcm(10·20001, 1000).
const retailPeriod = 20_001_000

// retailSet is what the retail prices of parts 1..P come to.
type retailSet struct {
	lo, hi   int64
	distinct int64
	// products is the number of distinct quantity × price values, the
	// extended prices (clause 4.2.3: l_extendedprice = l_quantity ·
	// p_retailprice) lines of these parts can take.
	products int64
}

var (
	retailMu    sync.Mutex
	retailCache = map[int64]retailSet{}
)

// retailPrices counts the distinct retail prices of parts 1..p and their
// products with the quantities 1..50, by enumeration (the prices repeat
// with retailPeriod, so at most one period is walked; results are cached).
func retailPrices(p int64) retailSet {
	p = min(p, retailPeriod)
	retailMu.Lock()
	defer retailMu.Unlock()
	if r, ok := retailCache[p]; ok {
		return r
	}
	const top = 90_000 + 20_000 + 100*999
	seen := make([]bool, top+1)
	r := retailSet{lo: math.MaxInt64, hi: math.MinInt64}
	var prices []int64
	for i := int64(1); i <= p; i++ {
		v := retailPrice(i)
		if !seen[v] {
			seen[v] = true
			prices = append(prices, v)
			r.lo, r.hi = min(r.lo, v), max(r.hi, v)
		}
	}
	r.distinct = int64(len(prices))
	products := make([]uint64, (50*top)/64+1)
	for _, v := range prices {
		for q := int64(1); q <= 50; q++ {
			x := q * v
			if products[x/64]&(1<<(x%64)) == 0 {
				products[x/64] |= 1 << (x % 64)
				r.products++
			}
		}
	}
	retailCache[p] = r
	return r
}

func retailBounds(k *tpchRows) (int64, int64) {
	r := retailPrices(k.p)
	return r.lo, r.hi
}

func extendedBounds(k *tpchRows) (int64, int64) {
	r := retailPrices(k.p)
	return r.lo, 50 * r.hi
}

// specSchema is the column statistics of TPC-H table t with the given
// rows at the counts k: types from tpch/schema, bounds and distinct counts
// from spec, text lengths from avgLen.
func specSchema(t *schema.Table, rows int64, k *tpchRows) []plan.ColumnStats {
	out := make([]plan.ColumnStats, len(t.Columns))
	for i, c := range t.Columns {
		cs := &out[i]
		cs.Type = c.Type.PlanType()
		switch c.Type {
		case schema.Decimal:
			cs.Scale = c.Scale
		case schema.String:
			cs.AvgLen = avgLen[c.Name]
		}
		sc, ok := spec[c.Name]
		if !ok || rows == 0 {
			continue
		}
		cs.Distinct = max(1, int64(math.Round(min(sc.distinct(k, rows), float64(rows)))))
		if sc.bounds != nil {
			lo, hi := sc.bounds(k)
			cs.Range = plan.MinMax{Valid: true, Min: lo, Max: hi}
		}
	}
	return out
}
