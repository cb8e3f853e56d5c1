package experiments

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"gostachio/dataset"
	"gostachio/internal/sqlquery"
	"gostachio/plan"
	"gostachio/sim"
	"gostachio/sqlplan"
	"gostachio/tpch/queries"
)

// sqlQuery reads a queries entry that is an SQL query: {name: NAME, sql:
// TEXT} or {name: NAME, sql_file: FILE}, FILE relative to the spec's
// folder.
func (p specParser) sqlQuery(n *yaml.Node) (sqlplan.Query, error) {
	kvs, err := p.pairs(n, "an SQL query")
	if err != nil {
		return sqlplan.Query{}, err
	}
	var name, text, file string
	for _, kv := range kvs {
		k, v := kv[0], kv[1]
		var dst *string
		switch k.Value {
		case "name":
			dst = &name
		case "sql":
			dst = &text
		case "sql_file":
			dst = &file
		default:
			return sqlplan.Query{}, p.errf(k, "unknown key %q in an SQL query (known: name, sql, sql_file)", k.Value)
		}
		if *dst, err = p.str(v, k.Value); err != nil {
			return sqlplan.Query{}, err
		}
	}
	if name == "" {
		return sqlplan.Query{}, p.errf(n, "an SQL query needs a name")
	}
	if text == "" && file == "" {
		return sqlplan.Query{}, p.errf(n, "SQL query %s needs sql or sql_file", name)
	}
	if file != "" && !filepath.IsAbs(file) {
		file = filepath.Join(filepath.Dir(p.path), file)
	}
	q, err := sqlquery.Read(name, text, file)
	if err != nil {
		return sqlplan.Query{}, p.errf(n, "%v", err)
	}
	return q, nil
}

// sqlPlans plans every SQL query of the spec once, so that an error in
// one names its line: over the first scale factor's TPC-H tables, or
// the dataset's manifest (where it does not open, the run reports that).
func (p specParser) sqlPlans(s *Spec, at *specKeys) error {
	if len(s.SQL) == 0 {
		return nil
	}
	var tables []plan.TableStats
	switch {
	case s.Dataset != "":
		ds, err := dataset.Open(s.Dataset)
		if err != nil {
			return nil
		}
		tables = ds.PlanStats()
	case len(s.SF) > 0:
		var err error
		if tables, err = queries.Stats(s.SF[0], sim.DefaultChunkRows); err != nil {
			return p.errf(at.sf, "%v", err)
		}
	default:
		return nil
	}
	items := at.queries.Content
	for _, q := range s.SQL {
		if _, err := sqlplan.Plan(q.Name, q.SQL, tables, sqlplan.Options{}); err != nil {
			at := at.queries
			for _, it := range items {
				if it.Kind == yaml.MappingNode && entryName(it) == q.Name {
					at = it
				}
			}
			return p.errf(at, "query %s: %v", q.Name, sqlquery.Unwrapped(sqlquery.Locate(err, q.SQL)))
		}
	}
	return nil
}

// entryName is the name of a queries entry that is a mapping.
func entryName(n *yaml.Node) string {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "name" {
			return n.Content[i+1].Value
		}
	}
	return ""
}

// SQLHash is the first 12 hex digits of the SHA-256 of the text of the
// spec's SQL query named name, or "" where name is not one (a TPC-H
// query). Run keys carry it.
func (s *Spec) SQLHash(name string) string {
	for _, q := range s.SQL {
		if q.Name == name {
			sum := sha256.Sum256([]byte(q.SQL))
			return hex.EncodeToString(sum[:])[:12]
		}
	}
	return ""
}

// Catalog is the catalog the spec's queries are built from: TPC-H's and
// its SQL queries, planned for workers workers (nodes x devices).
func (s *Spec) Catalog(workers int) (plan.Catalog, error) {
	sqlCat, err := sqlquery.Catalog(s.SQL, sqlplan.Options{Workers: workers})
	if err != nil {
		return plan.Catalog{}, fmt.Errorf("experiments: spec %s: %w", s.Name, err)
	}
	return plan.MergeCatalogs(queries.Catalog(), sqlCat)
}
