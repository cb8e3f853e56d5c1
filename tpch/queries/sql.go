package queries

import (
	"embed"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gostachio/plan"
	"gostachio/sqlplan"
)

// The 22 queries as SQL: the specification's texts (clause 2.4) with the
// validation parameters (qgen's defaults), adapted only where the parser
// needs it (Q15's view is a WITH table; intervals read interval 'N'
// unit). Q11's FRACTION, 0.0001/SF, is the placeholder {FRACTION},
// substituted from the scale factor.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// SQLText is query name's SQL at scale factor sf (which sets Q11's
// FRACTION). It fails on an unknown name or a scale factor that is not a
// positive finite number.
func SQLText(name string, sf float64) (string, error) {
	if _, ok := queries[name]; !ok {
		return "", fmt.Errorf("tpch/queries: no query %q (have q1..q22)", name)
	}
	if !(sf > 0) || math.IsInf(sf, 0) {
		return "", fmt.Errorf("tpch/queries: %s: scale factor %v must be a positive number", name, sf)
	}
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		return "", fmt.Errorf("tpch/queries: %w", err)
	}
	return strings.ReplaceAll(string(b), "{FRACTION}", strconv.FormatFloat(0.0001/sf, 'f', -1, 64)), nil
}

// SQLCatalog is the 22 queries planned from their SQL (sqlplan.Plan over
// the tables given, which must carry their Schema): Build substitutes the
// scale factor into the text and plans it.
func SQLCatalog(opts sqlplan.Options) plan.Catalog {
	return plan.Catalog{
		Names: Names(),
		Build: func(name string, sf float64, tables []plan.TableStats) (*plan.Plan, error) {
			text, err := SQLText(name, sf)
			if err != nil {
				return nil, err
			}
			return sqlplan.Plan(name, text, tables, opts)
		},
		ScaleFactor: ScaleFactor,
	}
}
