package querygen

import (
	"math/bits"
	"strings"
)

// Feature is one construct of the generator's grammar.
type Feature uint8

// The constructs a query may use (Query.Features records them).
const (
	FeatOneTable Feature = iota
	FeatTwoTables
	FeatThreeTables
	FeatFourTables
	FeatCommaJoin
	FeatJoinOn
	FeatLeftJoin
	FeatDerivedTable
	FeatCompare
	FeatColumnCompare
	FeatBetween
	FeatInList
	FeatLikePrefix
	FeatLikeInfix
	FeatNotLike
	FeatAnd
	FeatOr
	FeatNot
	FeatArith
	FeatDivide
	FeatYear
	FeatSubstring
	FeatCase
	FeatGroupBy
	FeatGlobalAgg
	FeatSum
	FeatCountStar
	FeatCount
	FeatCountDistinct
	FeatAvg
	FeatMin
	FeatMax
	FeatAggArith
	FeatHaving
	FeatOrderBy
	FeatLimit
	FeatExists
	FeatNotExists
	FeatInSubquery
	FeatNotInSubquery
	FeatScalarSubquery
	FeatCorrelatedScalar
	FeatSelfReference
	NumFeatures
)

var featureNames = [NumFeatures]string{
	FeatOneTable: "one-table", FeatTwoTables: "two-tables", FeatThreeTables: "three-tables",
	FeatFourTables: "four-tables", FeatCommaJoin: "comma-join", FeatJoinOn: "join-on",
	FeatLeftJoin: "left-join", FeatDerivedTable: "derived-table", FeatCompare: "compare",
	FeatColumnCompare: "column-compare", FeatBetween: "between", FeatInList: "in-list",
	FeatLikePrefix: "like-prefix", FeatLikeInfix: "like-infix", FeatNotLike: "not-like",
	FeatAnd: "and", FeatOr: "or", FeatNot: "not", FeatArith: "arith", FeatDivide: "divide",
	FeatYear: "extract-year", FeatSubstring: "substring", FeatCase: "case",
	FeatGroupBy: "group-by", FeatGlobalAgg: "global-agg", FeatSum: "sum",
	FeatCountStar: "count-star", FeatCount: "count", FeatCountDistinct: "count-distinct",
	FeatAvg: "avg", FeatMin: "min", FeatMax: "max", FeatAggArith: "agg-arith",
	FeatHaving: "having", FeatOrderBy: "order-by", FeatLimit: "limit", FeatExists: "exists",
	FeatNotExists: "not-exists", FeatInSubquery: "in-subquery", FeatNotInSubquery: "not-in-subquery",
	FeatScalarSubquery: "scalar-subquery", FeatCorrelatedScalar: "correlated-scalar-subquery",
	FeatSelfReference: "self-reference",
}

func (f Feature) String() string {
	if f < NumFeatures {
		return featureNames[f]
	}
	return "feature?"
}

// Features is a set of Feature.
type Features uint64

// Has reports whether f is in the set.
func (s Features) Has(f Feature) bool { return s&(1<<f) != 0 }

// Len is the number of features in the set.
func (s Features) Len() int { return bits.OnesCount64(uint64(s)) }

func (s *Features) add(f Feature) { *s |= 1 << f }

// List returns the set's features in Feature order.
func (s Features) List() []Feature {
	var out []Feature
	for f := Feature(0); f < NumFeatures; f++ {
		if s.Has(f) {
			out = append(out, f)
		}
	}
	return out
}

func (s Features) String() string {
	var names []string
	for _, f := range s.List() {
		names = append(names, f.String())
	}
	return strings.Join(names, ",")
}
