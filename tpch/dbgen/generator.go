package dbgen

import (
	"fmt"
	"math"

	"gostachio/tpch/schema"
)

// Generator generates the tables of one scale factor. It is immutable after
// New and safe for concurrent use: every Generate call has its own streams.
type Generator struct {
	sf    float64
	scale int64 // dbgen's integer scale (1 for fractional scale factors)
	// base rows per table after fractional scaling (dbgen's tdefs[].base).
	basePart, baseSupp, baseCust, baseOrder int64
	sh                                      *sharedData
}

// New returns a generator for scale factor sf: a positive number, either
// below 1 (fractional, as dbgen scales them) or a whole number below 30000.
func New(sf float64) (*Generator, error) {
	if math.IsNaN(sf) || math.IsInf(sf, 0) || sf <= 0 {
		return nil, fmt.Errorf("dbgen: scale factor %v: must be a positive number", sf)
	}
	g := &Generator{sf: sf, basePart: 200_000, baseSupp: 10_000, baseCust: 150_000, baseOrder: 150_000 * ordersPerCust}
	switch {
	case sf < 1:
		intScale := int64(1000 * sf)
		if intScale < 1 {
			return nil, fmt.Errorf("dbgen: scale factor %v: below dbgen's smallest, 0.001", sf)
		}
		g.scale = 1
		for _, b := range []*int64{&g.basePart, &g.baseSupp, &g.baseCust, &g.baseOrder} {
			*b = max(intScale**b/1000, 1)
		}
	case sf != math.Trunc(sf):
		return nil, fmt.Errorf("dbgen: scale factor %v: scale factors of 1 and more must be whole numbers", sf)
	case sf >= 30000:
		return nil, fmt.Errorf("dbgen: scale factor %v: 30000 and more are not supported", sf)
	default:
		g.scale = int64(sf)
	}
	g.sh = getShared()
	return g, nil
}

// ScaleFactor is the scale factor the generator was made for.
func (g *Generator) ScaleFactor() float64 { return g.sf }

// Units is the number of driving rows of t: parts for part and partsupp (4
// partsupp rows per part), orders for orders and lineitem, rows otherwise.
func (g *Generator) Units(t *schema.Table) int64 {
	switch t.Name {
	case schema.Part.Name, schema.PartSupp.Name:
		return g.basePart * g.scale
	case schema.Supplier.Name:
		return g.baseSupp * g.scale
	case schema.Customer.Name:
		return g.baseCust * g.scale
	case schema.Orders.Name, schema.Lineitem.Name:
		return g.baseOrder * g.scale
	case schema.Nation.Name:
		return int64(g.sh.d.nations.count())
	case schema.Region.Name:
		return int64(g.sh.d.regions.count())
	}
	return 0
}

// Generate returns the rows of table t for driving units [first, first+n)
// (0-based; see Units). For lineitem these are the lines of those orders,
// for partsupp the four rows of each of those parts.
func (g *Generator) Generate(t *schema.Table, first, n int64) (*schema.Batch, error) {
	main, child, err := g.GenerateWithChild(t, first, n)
	if t == &schema.PartSupp || t == &schema.Lineitem {
		return child, err
	}
	return main, err
}

// GenerateWithChild is Generate for a driving table and, in the same pass,
// its child: part with partsupp, orders with lineitem (for the others child
// is nil). Passing the child table is the same as passing its parent.
func (g *Generator) GenerateWithChild(t *schema.Table, first, n int64) (main, child *schema.Batch, err error) {
	units := g.Units(t)
	if units == 0 {
		return nil, nil, fmt.Errorf("dbgen: %q is not a TPC-H table", t.Name)
	}
	if first < 0 || n < 0 || first+n > units {
		return nil, nil, fmt.Errorf("dbgen: %s units [%d, %d) outside [0, %d)", t.Name, first, first+n, units)
	}
	switch t.Name {
	case schema.Part.Name, schema.PartSupp.Name:
		main, child = g.genPart(first, n)
	case schema.Supplier.Name:
		main = g.genSupp(first, n)
	case schema.Customer.Name:
		main = g.genCust(first, n)
	case schema.Orders.Name, schema.Lineitem.Name:
		main, child = g.genOrders(first, n)
	case schema.Nation.Name:
		main = g.genNation(first, n)
	case schema.Region.Name:
		main = g.genRegion(first, n)
	}
	return main, child, nil
}

// newBatch allocates a batch of t with room for rows rows and textBytes
// bytes per text column.
func newBatch(t *schema.Table, rows int, textBytes int) *schema.Batch {
	b := &schema.Batch{Table: t, Cols: make([]schema.Vector, len(t.Columns))}
	for i, c := range t.Columns {
		v := &b.Cols[i]
		switch c.Type {
		case schema.Int64, schema.Decimal:
			v.I64 = make([]int64, 0, rows)
		case schema.Int32, schema.Date:
			v.I32 = make([]int32, 0, rows)
		case schema.String:
			v.Offsets = make([]int32, 1, rows+1)
			n := rows * min(c.MaxLen, textBytes)
			v.Bytes = make([]byte, 0, n)
		}
	}
	return b
}

// endString closes the string value just appended to column v.
func endString(v *schema.Vector) { v.Offsets = append(v.Offsets, int32(len(v.Bytes))) }
