package peer

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/sqlplan"
	"gostachio/tpch/verify"
)

// TestOwnTablesMatchDuckDB brings tables that are not TPC-H's: DuckDB
// writes two Parquet files of its own schema (integers, a decimal of
// scale 3, dates, text, a double of quarters: sums exact in binary), gostachio imports them, plans SQL over the
// imported dataset's manifest and runs it on the engine, and DuckDB runs
// the same SQL over the same files: the results must agree.
func TestOwnTablesMatchDuckDB(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "parquet")
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		fmt.Sprintf(`copy (select i as trip_id, (i %% 50)::integer as station, ((i * 7 %% 1000)::decimal(12,3) / 8)::decimal(12,3) as fare,
			date '2024-01-01' + (i %% 366)::integer as day, 'zone ' || (i %% 13) as zone,
			((i * 11 %% 97) * 0.25 - 4)::double as weight
			from range(1, 20001) t(i)) to '%s' (format parquet)`, filepath.Join(src, "trips.parquet")),
		fmt.Sprintf(`copy (select s::bigint as station_id, 'station ' || s as name, (s %% 5)::integer as district
			from range(0, 50) t(s)) to '%s' (format parquet)`, filepath.Join(src, "stations.parquet")),
	} {
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("duckdb: %v\n%s", err, stmt)
		}
	}
	data := filepath.Join(dir, "data")
	if err := dataset.ImportParquet(src, data, dataset.ImportOptions{ChunkRows: 4096}, io.Discard); err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"trips", "stations"} {
		q := fmt.Sprintf("create view %s as select * from read_parquet('%s')", table, filepath.Join(src, table+".parquet"))
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	peer := &DB{db: db, dir: src}
	queries := []string{
		"select zone, count(*) as trips, sum(fare) as fares, avg(fare) as mean from trips where day >= date '2024-03-01' group by zone order by zone",
		"select s.district, count(*) as n, max(t.fare) as top from trips t join stations s on t.station = s.station_id where s.district in (1, 3) group by s.district order by s.district",
		"select name from stations where station_id in (select station from trips where fare > 120 and extract(year from day) = 2024) and not exists (select * from trips where station = station_id and zone = 'zone 3' and fare > 123) order by name",
		"select station, sum(fare) as total from trips group by station having sum(fare) > (select avg(fare) * 400 from trips) order by total desc, station limit 5",
		"select zone, sum(weight) as w, avg(weight) as mean, min(weight) as lo, max(weight) as hi, sum(weight * fare) as wf from trips where weight > 2.5 and weight * 2 <= 30 group by zone order by zone",
		"select weight, count(*) as n, sum(fare) as fares from trips where weight < -3 or weight = 19 group by weight order by weight",
		"select count(distinct weight) as kinds, sum(weight + 4) as shifted from trips where station between 10 and 20",
	}
	ctx := context.Background()
	for i, text := range queries {
		want, _, err := peer.QuerySQL(ctx, text)
		if err != nil {
			t.Fatalf("duckdb: %v\n%s", err, text)
		}
		if len(want.Rows) == 0 {
			t.Fatalf("query %d selects nothing: not a useful check\n%s", i, text)
		}
		for _, devices := range []int{1, 3} {
			p, err := sqlplan.Plan(fmt.Sprintf("own%d", i), text, ds.PlanStats(), sqlplan.Options{Workers: devices})
			if err != nil {
				t.Fatalf("plan: %v\n%s", err, text)
			}
			r, err := engine.Query(ctx, ds, p, engine.QueryOptions{Devices: devices})
			if err != nil {
				t.Fatalf("engine: %v\n%s", err, text)
			}
			got := &verify.Table{Header: r.Columns, Rows: r.Rows()}
			if err := verify.Compare(got, want, false); err != nil {
				t.Errorf("query %d on %d devices differs from DuckDB: %v\n%s", i, devices, err, text)
			}
			if strings.Join(got.Header, ",") != strings.Join(want.Header, ",") {
				t.Errorf("query %d: header %v, DuckDB's %v", i, got.Header, want.Header)
			}
		}
	}
}
