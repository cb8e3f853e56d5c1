package querygen_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"gostachio/dataset"
	"gostachio/plan"
	"gostachio/sqlplan/querygen"
	"gostachio/tpch"
	"gostachio/tpch/schema"
)

// profiled is a generated TPC-H dataset with the generator's view of it.
type profiled struct {
	ds    *dataset.Dataset
	stats []plan.TableStats
	cfg   querygen.Config
}

var (
	sf001     profiled
	sf001Err  error
	sf001Once sync.Once
	sf001Dir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sf001Dir != "" {
		os.RemoveAll(sf001Dir)
	}
	os.Exit(code)
}

// tpchSF001 generates TPC-H at SF0.01 once per test binary and profiles
// it: the dataset's plan statistics, with each column's type, exact
// distinct count and range read from the data, and up to 40 sampled
// values per column.
func tpchSF001(t testing.TB) profiled {
	t.Helper()
	sf001Once.Do(func() {
		sf001Dir, sf001Err = os.MkdirTemp("", "querygen-tpch")
		if sf001Err != nil {
			return
		}
		dir := filepath.Join(sf001Dir, "data")
		if sf001Err = tpch.Gen(context.Background(), tpch.GenOptions{ScaleFactor: 0.01, Out: dir}, io.Discard, io.Discard); sf001Err != nil {
			return
		}
		sf001.ds, sf001Err = dataset.Open(dir)
		if sf001Err != nil {
			return
		}
		sf001.stats, sf001.cfg.Samples, sf001Err = profile(sf001.ds)
		sf001.cfg.Tables = sf001.stats
		sf001.cfg.FKs = querygen.TPCHForeignKeys()
	})
	if sf001Err != nil {
		t.Fatal(sf001Err)
	}
	return sf001
}

// profile reads every column of ds and fills its plan statistics' Schema
// (exact distinct counts and ranges) and the samples: the distinct values
// in order, 40 evenly spaced ones where there are more.
func profile(ds *dataset.Dataset) ([]plan.TableStats, map[string][]string, error) {
	stats := ds.PlanStats()
	samples := map[string][]string{}
	for ti := range stats {
		ts := &stats[ti]
		st, err := schema.Lookup(ts.Name)
		if err != nil {
			return nil, nil, err
		}
		tm, err := ds.Table(ts.Name)
		if err != nil {
			return nil, nil, err
		}
		type acc struct {
			ints map[int64]bool
			strs map[string]bool
		}
		accs := make([]acc, len(st.Columns))
		for i := range accs {
			accs[i] = acc{ints: map[int64]bool{}, strs: map[string]bool{}}
		}
		for ci := range tm.Chunks {
			b, err := ds.ReadChunk(ts.Name, ci, nil)
			if err != nil {
				return nil, nil, err
			}
			for c, col := range st.Columns {
				v := &b.Cols[c]
				for r := 0; r < b.Rows; r++ {
					switch col.Type {
					case schema.Int64, schema.Decimal:
						accs[c].ints[v.I64[r]] = true
					case schema.Int32, schema.Date:
						accs[c].ints[int64(v.I32[r])] = true
					case schema.String:
						accs[c].strs[v.Str(r)] = true
					}
				}
			}
		}
		ts.Schema = make([]plan.ColumnStats, len(st.Columns))
		for c, col := range st.Columns {
			cs := &ts.Schema[c]
			var text []string
			switch col.Type {
			case schema.String:
				cs.Type = plan.TypeString
				cs.Distinct = int64(len(accs[c].strs))
				for s := range accs[c].strs {
					text = append(text, s)
				}
				slices.Sort(text)
			default:
				vals := make([]int64, 0, len(accs[c].ints))
				for x := range accs[c].ints {
					vals = append(vals, x)
				}
				slices.Sort(vals)
				cs.Distinct = int64(len(vals))
				if len(vals) > 0 {
					cs.Range = plan.MinMax{Valid: true, Min: vals[0], Max: vals[len(vals)-1]}
				}
				for _, x := range vals {
					switch col.Type {
					case schema.Decimal:
						text = append(text, plan.FormatDecimal(x, 2, 2))
					case schema.Date:
						text = append(text, plan.FormatDate(x))
					default:
						text = append(text, strconv.FormatInt(x, 10))
					}
				}
				cs.Type = map[schema.Type]plan.ColumnType{schema.Int64: plan.TypeInt64, schema.Int32: plan.TypeInt32,
					schema.Decimal: plan.TypeDecimal, schema.Date: plan.TypeDate}[col.Type]
				if col.Type == schema.Decimal {
					cs.Scale = 2
				}
			}
			const most = 40
			if len(text) > most {
				picked := make([]string, most)
				for i := range picked {
					picked[i] = text[i*len(text)/most]
				}
				text = picked
			}
			samples[ts.Name+"."+col.Name] = text
		}
	}
	return stats, samples, nil
}
