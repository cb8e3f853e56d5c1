package dataset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"testing"

	"gostachio/plan"
	"gostachio/tpch/schema"
)

// TestPlanStatsSchema writes the sample tables and checks each column's
// table-wide statistics against what the test computes from the batches it
// wrote: exact distinct counts (the sketch must come within its error),
// min/max over all chunks, the mean text length, types and scales.
func TestPlanStatsSchema(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	data := sampleData()
	writeDataset(t, dir, CreateOptions{}, data)
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]plan.TableStats{}
	for _, ts := range ds.PlanStats() {
		byName[ts.Name] = ts
	}
	wantType := map[schema.Type]plan.ColumnType{schema.Int64: plan.TypeInt64, schema.Int32: plan.TypeInt32,
		schema.Decimal: plan.TypeDecimal, schema.Date: plan.TypeDate, schema.String: plan.TypeString,
		schema.Float64: plan.TypeFloat64}
	for _, td := range data {
		ts := byName[td.table.Name]
		if len(ts.Schema) != len(td.table.Columns) {
			t.Fatalf("%s: %d column statistics, want %d", td.table.Name, len(ts.Schema), len(td.table.Columns))
		}
		for ci, col := range td.table.Columns {
			got := ts.Schema[ci]
			distinct := map[string]bool{}
			var lo, hi, textBytes int64 = math.MaxInt64, math.MinInt64, 0
			rows := 0
			for _, b := range td.chunks {
				v := &b.Cols[ci]
				for i := range b.Rows {
					rows++
					var key string
					switch col.Type {
					case schema.String:
						key = v.Str(i)
						textBytes += int64(len(key))
					case schema.Float64:
						// SQL holds -0 and 0 equal, and NaNs one value.
						f := math.Float64frombits(uint64(v.I64[i]))
						if f == 0 {
							f = 0
						}
						key = fmt.Sprint(f)
					default:
						x := int64(0)
						if v.I64 != nil {
							x = v.I64[i]
						} else {
							x = int64(v.I32[i])
						}
						lo, hi = min(lo, x), max(hi, x)
						key = keyOf(x)
					}
					distinct[key] = true
				}
			}
			name := td.table.Name + "." + col.Name
			if got.Type != wantType[col.Type] {
				t.Errorf("%s: type %v, want %v", name, got.Type, wantType[col.Type])
			}
			if col.Type == schema.Decimal && got.Scale != 2 {
				t.Errorf("%s: scale %d, want 2", name, got.Scale)
			}
			if d := float64(len(distinct)); math.Abs(float64(got.Distinct)-d) > max(1, 4*SketchRelativeError*d) {
				t.Errorf("%s: distinct %d, want %d", name, got.Distinct, len(distinct))
			}
			switch {
			case rows == 0:
				if got.Range.Valid || got.AvgLen != 0 || got.Distinct != 0 {
					t.Errorf("%s: empty table has statistics %+v", name, got)
				}
			case col.Type == schema.String:
				if want := float64(textBytes) / float64(rows); math.Abs(got.AvgLen-want) > 1e-9 {
					t.Errorf("%s: average length %g, want %g", name, got.AvgLen, want)
				}
				if got.Range.Valid {
					t.Errorf("%s: text column has a range", name)
				}
			case col.Type == schema.Float64:
				if got.Range.Valid {
					t.Errorf("%s: float column has a range", name)
				}
				for c, ch := range ts.Chunks {
					if ch.Stats[ci].Valid {
						t.Errorf("%s: chunk %d has min/max %+v to prune on", name, c, ch.Stats[ci])
					}
				}
			default:
				if want := (plan.MinMax{Valid: true, Min: lo, Max: hi}); got.Range != want {
					t.Errorf("%s: range %+v, want %+v", name, got.Range, want)
				}
			}
		}
	}
}

// TestInspectShowsColumnStatistics checks that inspect reports, in JSON
// and in text, the distinct counts and mean text lengths PlanStats gives.
func TestInspectShowsColumnStatistics(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	writeDataset(t, dir, CreateOptions{}, sampleData())
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var js, txt bytes.Buffer
	if err := Inspect(dir, true, &js); err != nil {
		t.Fatal(err)
	}
	if err := Inspect(dir, false, &txt); err != nil {
		t.Fatal(err)
	}
	var r InspectReport
	if err := json.Unmarshal(js.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	for ti, ts := range ds.PlanStats() {
		for ci, cs := range ts.Schema {
			ic := r.Tables[ti].Columns[ci]
			if ic.Distinct != cs.Distinct || ic.AvgLen != cs.AvgLen {
				t.Errorf("%s.%s: inspect says distinct %d avg len %g, PlanStats %d %g", ts.Name, ic.Name, ic.Distinct, ic.AvgLen, cs.Distinct, cs.AvgLen)
			}
		}
	}
	// alltypes.s, whose count TestPlanStatsSchema checks exactly.
	s := r.Tables[3].Columns[4]
	line := fmt.Sprintf(`(?m)^  s +utf8 +\d+ +\d+ +%d +%.1f `, s.Distinct, s.AvgLen)
	if s.Distinct < 2 || !regexp.MustCompile(line).MatchString(txt.String()) {
		t.Errorf("text output lacks the distinct count %d of alltypes.s:\n%s", s.Distinct, txt.String())
	}
}

func keyOf(x int64) string {
	var b [8]byte
	for i := range b {
		b[i] = byte(x >> (8 * i))
	}
	return string(b[:])
}
