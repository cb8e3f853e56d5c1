package dbgen

// dbgen's random number streams (rnd.c): a Park-Miller "minimal standard"
// generator per stream.

const (
	maxStream  = 47
	multiplier = 16807
	modulus    = 2147483647
	dM         = 2147483647.0
	maxLong    = 2147483647
)

type streamDef struct {
	table    tableID
	seed     int64
	boundary int64
}

type tableID int8

const (
	tNone tableID = iota - 1
	tPart
	tPsupp
	tSupp
	tCust
	tOrder
	tLine
	tNation
	tRegion
)

// childOf is dbgen's tdefs[t].child: streams of the child table advance with
// the parent's rows (part->partsupp, orders->lineitem).
func childOf(t tableID) tableID {
	switch t {
	case tPart:
		return tPsupp
	case tOrder:
		return tLine
	}
	return tNone
}

// streamDefs is dbgen's Seed[] table (rnd.h): owner table, initial seed and
// calls per row.
var streamDefs = [maxStream + 1]streamDef{
	{tPart, 1, 1}, {tPart, 46831694, 1}, {tPart, 1841581359, 1}, {tPart, 1193163244, 1},
	{tPart, 727633698, 1}, {tNone, 933588178, 1}, {tPart, 804159733, 2},
	{tPsupp, 1671059989, suppPerPart}, {tPsupp, 1051288424, suppPerPart}, {tPsupp, 1961692154, suppPerPart * 2},
	{tOrder, 1227283347, 1}, {tOrder, 1171034773, 1}, {tOrder, 276090261, 2}, {tOrder, 1066728069, 1},
	{tLine, 209208115, oLcntMax}, {tLine, 554590007, oLcntMax}, {tLine, 721958466, oLcntMax},
	{tLine, 1371272478, oLcntMax}, {tLine, 675466456, oLcntMax}, {tLine, 1808217256, oLcntMax},
	{tLine, 2095021727, oLcntMax}, {tLine, 1769349045, oLcntMax}, {tLine, 904914315, oLcntMax},
	{tLine, 373135028, oLcntMax}, {tLine, 717419739, oLcntMax}, {tLine, 1095462486, oLcntMax * 2},
	{tCust, 881155353, 9}, {tCust, 1489529863, 1}, {tCust, 1521138112, 3}, {tCust, 298370230, 1},
	{tCust, 1140279430, 1}, {tCust, 1335826707, 2},
	{tSupp, 706178559, 9}, {tSupp, 110356601, 1}, {tSupp, 884434366, 3}, {tSupp, 962338209, 1},
	{tSupp, 1341315363, 2},
	{tPart, 709314158, 92}, {tOrder, 591449447, 1}, {tLine, 431918286, 1}, {tOrder, 851767375, 1},
	{tNation, 606179079, 2}, {tRegion, 1500869201, 2}, {tOrder, 1434868289, 1},
	{tSupp, 263032577, 1}, {tSupp, 753643799, 1}, {tSupp, 202794285, 1}, {tSupp, 715851524, 1},
}

// streams is the state of all random streams of one generation run.
type streams struct {
	value [maxStream + 1]int64
	usage [maxStream + 1]int64
}

// newStreams returns the streams positioned at row `skip` (0-based) of
// table t: every stream owned by t or its child advanced by skip rows.
func newStreams(t tableID, skip int64) *streams {
	s := &streams{}
	for i, d := range streamDefs {
		s.value[i] = d.seed
		if skip > 0 && (d.table == t || (d.table != tNone && d.table == childOf(t))) {
			s.value[i] = nthElement(skip*d.boundary, s.value[i])
		}
	}
	return s
}

// nthElement advances a seed by n calls: seed * 16807^n mod (2^31-1).
func nthElement(n, seed int64) int64 {
	mult := int64(multiplier)
	z := seed
	for n > 0 {
		if n%2 != 0 {
			z = (mult * z) % modulus
		}
		n /= 2
		mult = (mult * mult) % modulus
	}
	return z
}

// random is dbgen's RANDOM(lower, upper, stream) (UnifInt).
func (s *streams) random(lower, upper int64, stream int) int64 {
	s.usage[stream]++
	s.value[stream] = (s.value[stream] * multiplier) % modulus
	rng := float64(upper - lower + 1)
	if lower == 0 && upper == maxLong {
		// dbgen computes this range in 32-bit ints, where it overflows to
		// -2^31: the draw is negative. a_rand (V_STR) relies on it.
		rng = float64(int32(upper) - int32(lower) + int32(1))
	}
	return lower + int64(float64(s.value[stream])/dM*rng)
}

// rowStart and rowStop bracket a row (row_start/row_stop): at the end of a
// row every stream of table t (and its child) is advanced to its boundary.
func (s *streams) rowStart() { s.usage = [maxStream + 1]int64{} }

func (s *streams) rowStop(t tableID) {
	c := childOf(t)
	for i, d := range streamDefs[:maxStream] {
		if d.table == t || (c != tNone && d.table == c) {
			if n := d.boundary - s.usage[i]; n > 0 {
				s.value[i] = nthElement(n, s.value[i])
			}
		}
	}
}
