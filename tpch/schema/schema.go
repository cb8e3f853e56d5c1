// Package schema is the TPC-H schema as the specification (clause 1.4) defines
// it, mapped onto the physical types gostachio stores. It is the single source
// of truth for table and column names, their order, and their types: the
// generator, the dataset writer, the importers and the query plans all read it.
//
// Physical representation (documented in docs/design.md, recorded in every manifest):
//   - identifier  -> int64 (SF1000 order keys exceed int32)
//   - integer     -> int32
//   - decimal     -> int64 holding the value scaled by 100 (cents): exact,
//     8 bytes wide, DMA- and kernel-friendly; exported to Parquet as DECIMAL(15,2)
//   - date        -> Arrow date32 (days since 1970-01-01)
//   - text        -> Arrow utf8 (int32 offsets + bytes)
//
// Tables imported from other sources may also hold Float64 columns (IEEE
// 754 doubles, Arrow float64); no TPC-H column is one.
package schema

import (
	"fmt"

	"gostachio/plan"
)

// Type is the physical type of a column.
type Type uint8

const (
	Int64   Type = iota + 1 // identifiers
	Int32                   // integers
	Decimal                 // int64 scaled by DecimalScale
	Date                    // int32 days since the Unix epoch (Arrow date32)
	String                  // utf8
	Float64                 // IEEE 754 double (Arrow float64)
)

// DecimalScale is the power of ten every TPC-H Decimal column is scaled
// by (Column.Scale 2).
const DecimalScale = 100

// DecimalPrecision is the precision TPC-H decimals are exported with.
const DecimalPrecision = 15

// MaxDecimalPrecision is the most digits a Decimal column may hold: every
// value of 18 digits fits an int64.
const MaxDecimalPrecision = 18

func (t Type) String() string {
	switch t {
	case Int64:
		return "int64"
	case Int32:
		return "int32"
	case Decimal:
		return "decimal(15,2)"
	case Date:
		return "date32"
	case String:
		return "utf8"
	case Float64:
		return "float64"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// ParseType is the inverse of Type.String.
func ParseType(s string) (Type, error) {
	for t := Int64; t <= Float64; t++ {
		if t.String() == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("schema: unknown column type %q", s)
}

// Width is the fixed byte width of a value of t, or 0 for String.
func (t Type) Width() int {
	switch t {
	case Int64, Decimal, Float64:
		return 8
	case Int32, Date:
		return 4
	}
	return 0
}

// Column is one column of a table.
type Column struct {
	Name string
	Type Type
	// MaxLen is the spec's maximum length of a text column (0 otherwise).
	MaxLen int
	// Precision and Scale describe a Decimal column: at most Precision
	// digits (at most 18, what an int64 holds), Scale of them after the
	// point, the int64 holding the value times 10^Scale. TPC-H decimals
	// are 15, 2 (DecimalPrecision, cents); other tables keep the scale of
	// their source. Zero for other types.
	Precision, Scale int
}

// Table is one TPC-H table.
type Table struct {
	Name    string
	Columns []Column
	// BaseRows is the row count at SF1 (lineitem: the expected count; its
	// exact count depends on the generated line counts per order).
	BaseRows int64
	// Scaled reports whether the row count grows with the scale factor
	// (nation and region are fixed).
	Scaled bool
}

// Column returns the index of the named column, or -1.
func (t *Table) Column(name string) int {
	for i, c := range t.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func id(n string) Column      { return Column{Name: n, Type: Int64} }
func integer(n string) Column { return Column{Name: n, Type: Int32} }
func dec(n string) Column {
	return Column{Name: n, Type: Decimal, Precision: DecimalPrecision, Scale: 2}
}
func date(n string) Column        { return Column{Name: n, Type: Date} }
func text(n string, l int) Column { return Column{Name: n, Type: String, MaxLen: l} }

// The eight tables, in dbgen's generation order.
var (
	Part = Table{Name: "part", BaseRows: 200_000, Scaled: true, Columns: []Column{
		id("p_partkey"), text("p_name", 55), text("p_mfgr", 25), text("p_brand", 10),
		text("p_type", 25), integer("p_size"), text("p_container", 10),
		dec("p_retailprice"), text("p_comment", 23),
	}}
	PartSupp = Table{Name: "partsupp", BaseRows: 800_000, Scaled: true, Columns: []Column{
		id("ps_partkey"), id("ps_suppkey"), integer("ps_availqty"),
		dec("ps_supplycost"), text("ps_comment", 199),
	}}
	Supplier = Table{Name: "supplier", BaseRows: 10_000, Scaled: true, Columns: []Column{
		id("s_suppkey"), text("s_name", 25), text("s_address", 40), id("s_nationkey"),
		text("s_phone", 15), dec("s_acctbal"), text("s_comment", 101),
	}}
	Customer = Table{Name: "customer", BaseRows: 150_000, Scaled: true, Columns: []Column{
		id("c_custkey"), text("c_name", 25), text("c_address", 40), id("c_nationkey"),
		text("c_phone", 15), dec("c_acctbal"), text("c_mktsegment", 10),
		text("c_comment", 117),
	}}
	Orders = Table{Name: "orders", BaseRows: 1_500_000, Scaled: true, Columns: []Column{
		id("o_orderkey"), id("o_custkey"), text("o_orderstatus", 1), dec("o_totalprice"),
		date("o_orderdate"), text("o_orderpriority", 15), text("o_clerk", 15),
		integer("o_shippriority"), text("o_comment", 79),
	}}
	Lineitem = Table{Name: "lineitem", BaseRows: 6_001_215, Scaled: true, Columns: []Column{
		id("l_orderkey"), id("l_partkey"), id("l_suppkey"), integer("l_linenumber"),
		dec("l_quantity"), dec("l_extendedprice"), dec("l_discount"), dec("l_tax"),
		text("l_returnflag", 1), text("l_linestatus", 1), date("l_shipdate"),
		date("l_commitdate"), date("l_receiptdate"), text("l_shipinstruct", 25),
		text("l_shipmode", 10), text("l_comment", 44),
	}}
	Nation = Table{Name: "nation", BaseRows: 25, Columns: []Column{
		id("n_nationkey"), text("n_name", 25), id("n_regionkey"), text("n_comment", 152),
	}}
	Region = Table{Name: "region", BaseRows: 5, Columns: []Column{
		id("r_regionkey"), text("r_name", 25), text("r_comment", 152),
	}}
)

// Tables lists every table in generation order.
var Tables = []*Table{&Part, &PartSupp, &Supplier, &Customer, &Orders, &Lineitem, &Nation, &Region}

// Lookup returns the table with the given name.
func Lookup(name string) (*Table, error) {
	for _, t := range Tables {
		if t.Name == name {
			return t, nil
		}
	}
	return nil, fmt.Errorf("schema: no TPC-H table %q", name)
}

// planTypes maps stored column types onto the types a plan binds.
var planTypes = map[Type]plan.ColumnType{
	Int64: plan.TypeInt64, Int32: plan.TypeInt32, Decimal: plan.TypeDecimal,
	Date: plan.TypeDate, String: plan.TypeString, Float64: plan.TypeFloat64,
}

// PlanType is the type a plan binds a column of type t as
// (plan.TypeUnknown for an unknown t).
func (t Type) PlanType() plan.ColumnType { return planTypes[t] }
