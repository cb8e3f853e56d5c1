package peer

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/plan"
	"gostachio/sqlplan/querygen"
	"gostachio/tpch"
)

// genFixture is TPC-H at SF0.01 with its Parquet export in DuckDB and the
// generator's view of it, built once per test binary.
type genFixture struct {
	ds    *dataset.Dataset
	db    *DB
	g     *querygen.Generator
	stats []plan.TableStats
}

var (
	// fixtureDir holds the shared fixture; TestMain removes it.
	fixtureDir  string
	fixtureOnce sync.Once
	fixture     genFixture
	fixtureErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fixture.db != nil {
		fixture.db.Close()
	}
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
	}
	removeShared()
	os.Exit(code)
}

func sf001Fixture(t *testing.T) genFixture {
	t.Helper()
	fixtureOnce.Do(func() {
		ctx := context.Background()
		// Several tests share the data, so it lives past the test that
		// made it (TestMain removes it).
		if fixtureDir, fixtureErr = os.MkdirTemp("", "peer-differential"); fixtureErr != nil {
			return
		}
		data := filepath.Join(fixtureDir, "data")
		if fixtureErr = tpch.Gen(ctx, tpch.GenOptions{ScaleFactor: 0.01, Out: data}, io.Discard, io.Discard); fixtureErr != nil {
			return
		}
		if fixture.ds, fixtureErr = dataset.Open(data); fixtureErr != nil {
			return
		}
		pq := filepath.Join(fixtureDir, "parquet")
		if fixtureErr = dataset.Export(fixture.ds, pq, dataset.ExportOptions{}, io.Discard); fixtureErr != nil {
			return
		}
		if fixture.db, fixtureErr = Open(pq); fixtureErr != nil {
			return
		}
		var cfg querygen.Config
		if cfg, fixture.stats, fixtureErr = GeneratorConfig(ctx, fixture.ds, fixture.db); fixtureErr != nil {
			return
		}
		fixture.g, fixtureErr = querygen.New(cfg)
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return fixture
}

// TestGeneratedQueriesRunInDuckDB: DuckDB accepts every generated query
// (the generator writes the dialects' common ground), and the queries
// select something often enough to be worth comparing.
func TestGeneratedQueriesRunInDuckDB(t *testing.T) {
	f := sf001Fixture(t)
	ctx := context.Background()
	nonEmpty := 0
	const n = 300
	for seed := uint64(0); seed < n; seed++ {
		q := f.g.Query(seed)
		res, _, err := f.db.QuerySQL(ctx, q.SQL)
		if err != nil {
			t.Errorf("seed %d: DuckDB rejects\n%s\n: %v", seed, q.SQL, err)
			continue
		}
		if len(res.Rows) > 0 && strings.Join(res.Rows[0], "") != "" {
			nonEmpty++
		}
	}
	if nonEmpty < n/2 {
		t.Errorf("only %d of %d queries return a non-empty row", nonEmpty, n)
	}
	t.Logf("%d of %d queries return a non-empty row", nonEmpty, n)
}

// TestRandomQueriesMatchDuckDB runs 60 generated queries through the SQL
// path (sqlplan.Plan, the CPU engine) and DuckDB and requires equal
// results.
func TestRandomQueriesMatchDuckDB(t *testing.T) {
	f := sf001Fixture(t)
	rep, err := Differential(context.Background(), f.ds, f.db, f.g, f.stats, DifferentialOptions{Queries: 60, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Matched != rep.Queries {
		var b strings.Builder
		rep.Summary(&b)
		t.Errorf("%s", b.String())
	}
}

// TestPlannedQueriesMatchDuckDB runs statements of the shapes generated
// queries once broke on (a plain select of renamed columns, count(DISTINCT)
// beside other aggregates or over several columns, over rows and over none; correlated counts over
// empty groups; a left outer join whose build side is empty; CASE over numbers of
// different types; a column or aggregate selected twice) through the SQL path
// on 1, 2 and 3 devices and requires DuckDB's results.
func TestPlannedQueriesMatchDuckDB(t *testing.T) {
	f := sf001Fixture(t)
	ctx := context.Background()
	for i, sql := range []string{
		"select n_nationkey, n_name as o2 from nation",
		"select count(distinct l_suppkey), max(l_quantity) from lineitem where l_quantity > 0",
		"select l_returnflag, count(distinct l_suppkey), avg(l_discount), count(l_tax), min(l_shipdate) from lineitem group by l_returnflag",
		"select o_orderpriority, count(distinct o_custkey) as c, sum(o_totalprice) as s from orders group by o_orderpriority having count(*) > 10",
		"select count(l_tax), count(distinct l_suppkey), count(*) from lineitem where l_quantity < 0",
		"select o_orderpriority, count(distinct o_custkey) as a, count(distinct o_clerk) as b, sum(o_totalprice) as s from orders group by o_orderpriority",
		"select count(distinct o_custkey) as a, count(distinct o_clerk) as b, sum(o_totalprice) as s, avg(o_shippriority) as v from orders",
		"select count(distinct o_custkey) as a, count(distinct o_clerk) as b, sum(o_totalprice) as s, count(*) as n from orders where o_totalprice < 0",
		"select l_returnflag, count(distinct l_suppkey) as a, count(distinct l_partkey) as b, avg(l_discount) as d from lineitem group by l_returnflag having count(distinct l_partkey) > 10",
		"select count(distinct l_suppkey) as a, count(distinct l_partkey) as b from lineitem where l_quantity < 0",
		"select r_regionkey from region where (select count(*) from nation where r_regionkey = n_regionkey and n_nationkey < 3) = 0",
		"select r_regionkey from region where (select count(*) from nation where r_regionkey = n_regionkey) <> 2",
		"select o_orderkey, case when o_totalprice > 100000 then o_totalprice else o_shippriority end as x from orders where o_orderkey < 100",
		"select case when l_tax > 0.05 then l_tax * l_discount else l_extendedprice end as y, case when l_tax > 0.05 then l_quantity else l_tax end as z from lineitem where l_orderkey < 40",
		"select count(*) as o1, count(*) as o2, min(r_name) as o3 from region",
		"select n_name as x, n_name as y from nation where n_nationkey < 5",
		"select distinct n_regionkey as a, n_regionkey as b from nation",
		"select n_regionkey, avg(n_nationkey) as a1, avg(n_nationkey) as a2 from nation group by n_regionkey",
		"select n_nationkey, count(c_name) from nation left join customer on n_nationkey = c_nationkey and c_acctbal = 5657.44 group by n_nationkey",
		"select r_regionkey from region where 1 < (select max(n_nationkey) from nation where r_regionkey = n_regionkey and n_nationkey < 3)",
		// HAVING subqueries over the block's own rows, computed from its groups.
		"select ps_partkey, sum(ps_supplycost * ps_availqty) as v from partsupp, supplier, nation where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = 'GERMANY' group by ps_partkey having sum(ps_supplycost * ps_availqty) > (select sum(ps_supplycost * ps_availqty) * 0.001 from nation, partsupp, supplier where s_suppkey = ps_suppkey and n_nationkey = s_nationkey and n_name = 'GERMANY')",
		"select n_regionkey, count(*) as c, max(n_nationkey) as m from nation group by n_regionkey having count(*) * 5 >= (select count(*) from nation) and max(n_nationkey) > (select max(n_nationkey) - 3 from nation) and min(n_nationkey) <= (select min(n_nationkey) + 1 from nation)",
		"select n1.n_name, count(*) as c from nation n1, nation n2 where n1.n_regionkey = n2.n_regionkey and n2.n_nationkey < 20 group by n1.n_name having count(*) * 25 > (select count(*) from nation a, nation b where b.n_regionkey = a.n_regionkey and a.n_nationkey < 20)",
		"select n_regionkey, sum(n_nationkey) as s from nation where n_nationkey < 0 group by n_regionkey having sum(n_nationkey) > (select sum(n_nationkey) from nation where n_nationkey < 0)",
		"select n_regionkey, count(*) as c from nation where n_nationkey < 0 group by n_regionkey having count(*) >= (select count(*) from nation where n_nationkey < 0)",
		// ... and where the subquery's rows differ from the block's.
		"select ps_partkey, sum(ps_supplycost * ps_availqty) as v from partsupp, supplier, nation where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = 'GERMANY' group by ps_partkey having sum(ps_supplycost * ps_availqty) > (select sum(ps_supplycost * ps_availqty) * 0.001 from partsupp, supplier, nation where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = 'FRANCE')",
		"select s_nationkey, sum(s_acctbal) as v from supplier, nation where s_nationkey = n_nationkey group by s_nationkey having sum(s_acctbal) > (select sum(s_acctbal) / 30 from supplier, nation, region where s_nationkey = n_nationkey and n_regionkey = r_regionkey)",
		"select s_nationkey, sum(s_acctbal) as v from supplier, nation where s_nationkey = n_nationkey and s_acctbal > 0 group by s_nationkey having sum(s_acctbal) > (select sum(s_acctbal) / 25 from supplier, nation where s_nationkey = n_nationkey)",
		"select s_nationkey, avg(s_acctbal) as v from supplier group by s_nationkey having avg(s_acctbal) > (select avg(s_acctbal) from supplier)",
		"select n1.n_name, count(*) as c from nation n1, nation n2 where n1.n_regionkey = n2.n_regionkey and n1.n_nationkey < 20 group by n1.n_name having count(*) * 25 > (select count(*) from nation a, nation b where b.n_regionkey = a.n_regionkey and a.n_nationkey < 20)",
		// EXISTS and NOT EXISTS over one table and key, aggregated once ...
		"select l1.l_suppkey, count(*) as c from lineitem l1 where l1.l_receiptdate > l1.l_commitdate and exists (select * from lineitem l2 where l2.l_orderkey = l1.l_orderkey and l2.l_suppkey <> l1.l_suppkey) and not exists (select * from lineitem l3 where l3.l_orderkey = l1.l_orderkey and l3.l_suppkey <> l1.l_suppkey and l3.l_receiptdate > l3.l_commitdate) group by l1.l_suppkey",
		"select count(*) as c from lineitem l1 where l1.l_quantity < 10 and exists (select * from lineitem l2 where l2.l_orderkey = l1.l_orderkey and l2.l_shipmode = 'AIR' and l2.l_linenumber > l1.l_linenumber) and not exists (select * from lineitem l3 where l3.l_orderkey = l1.l_orderkey and l3.l_shipmode = 'AIR' and l3.l_discount > 0.05 and l3.l_partkey < l1.l_partkey)",
		"select o_orderpriority, count(*) as c from orders where exists (select * from lineitem a where a.l_orderkey = o_orderkey and a.l_suppkey <> o_custkey) and not exists (select * from lineitem b where b.l_orderkey = o_orderkey and b.l_returnflag = 'R' and b.l_suppkey > o_custkey) group by o_orderpriority",
		// ... and where they may not be.
		"select count(*) as c from lineitem l1 where exists (select * from lineitem l2 where l2.l_orderkey = l1.l_orderkey and l2.l_shipmode = 'AIR' and l2.l_suppkey <> l1.l_suppkey) and not exists (select * from lineitem l3 where l3.l_orderkey = l1.l_orderkey and l3.l_shipmode = 'MAIL' and l3.l_suppkey <> l1.l_suppkey)",
		"select count(*) as c from lineitem l1 where exists (select * from lineitem l2 where l2.l_orderkey = l1.l_orderkey and l2.l_receiptdate > l2.l_commitdate and l2.l_suppkey <> l1.l_suppkey) and not exists (select * from lineitem l3 where l3.l_orderkey = l1.l_orderkey and l3.l_suppkey <> l1.l_suppkey)",
		"select count(*) as c from lineitem l1 where exists (select * from lineitem l2 where l2.l_orderkey = l1.l_orderkey and l2.l_suppkey <> l1.l_suppkey) and not exists (select * from lineitem l3 where l3.l_orderkey = l1.l_orderkey and l3.l_receiptdate > l3.l_commitdate and l3.l_shipdate > l1.l_shipdate)",
		"select count(*) as c from lineitem l1 where exists (select * from lineitem l2 where l2.l_orderkey = l1.l_orderkey and l2.l_suppkey <> l1.l_suppkey) and not exists (select * from lineitem l3 where l3.l_partkey = l1.l_partkey and l3.l_receiptdate > l3.l_commitdate and l3.l_suppkey <> l1.l_suppkey)",
		// A table grouped by an IN subquery and joined on its key, read once ...
		"select c_name, c_custkey, o_orderkey, o_orderdate, sum(l_quantity) as q, count(*) as n, min(l_extendedprice) as lo, max(l_discount) as hi, max(o_totalprice) as t from customer, orders, lineitem where o_orderkey in (select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 200) and c_custkey = o_custkey and o_orderkey = l_orderkey group by c_name, c_custkey, o_orderkey, o_orderdate",
		"select ps_suppkey, sum(l_quantity) as q, count(*) as n, min(l_discount) as lo, max(l_tax) as hi from partsupp, lineitem where ps_partkey = l_partkey and ps_partkey in (select l_partkey from lineitem group by l_partkey having count(*) > 30) group by ps_suppkey",
		"select p_brand, sum(l_extendedprice) as s, count(l_tax) as c, min(ps_supplycost) as m from part, partsupp, lineitem where p_partkey = ps_partkey and l_partkey = ps_partkey and l_partkey in (select l_partkey from lineitem group by l_partkey having max(l_quantity) >= 50) group by p_brand",
		"select o_orderpriority, sum(l_quantity) as q, count(*) as n from orders, lineitem where l_shipmode = 'AIR' and o_orderkey = l_orderkey and o_orderkey in (select l_orderkey from lineitem where l_shipmode = 'AIR' group by l_orderkey having count(*) >= 2) group by o_orderpriority",
		// ... and where it may not be.
		"select o_orderpriority, sum(l_quantity) as q, count(*) as n from orders, lineitem where l_shipmode = 'AIR' and o_orderkey = l_orderkey and o_orderkey in (select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 200) group by o_orderpriority",
		"select o_orderpriority, sum(l_quantity) as q from orders, lineitem where o_orderkey = l_orderkey and o_orderkey in (select l_orderkey from lineitem where l_shipmode = 'AIR' group by l_orderkey having count(*) >= 2) group by o_orderpriority",
		"select l_returnflag, count(*) as n from orders, lineitem where o_orderkey = l_orderkey and o_orderkey in (select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 200) group by l_returnflag",
		"select o_orderpriority, count(*) as n from orders, lineitem where o_orderkey = l_orderkey and l_linenumber <= o_shippriority + 3 and o_orderkey in (select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 200) group by o_orderpriority",
		"select o_orderpriority, avg(l_quantity) as a from orders, lineitem where o_orderkey = l_orderkey and o_orderkey in (select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 200) group by o_orderpriority",
		"select c_nationkey, sum(o_totalprice) as s, count(*) as n from customer, orders, lineitem where c_custkey = o_custkey and o_orderkey = l_orderkey and o_orderkey in (select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 200) group by c_nationkey",
	} {
		for _, run := range []engine.QueryOptions{{Policy: "serial", Devices: 1}, {Policy: "overlap", Devices: 2}, {Policy: "serial", Devices: 3}} {
			q := querygen.Query{Seed: uint64(i), SQL: sql}
			if m := checkQuery(ctx, f.ds, f.db, f.stats, q, run, time.Minute); m != nil {
				t.Errorf("%s on %d devices: %s: %s (engine %d rows, DuckDB %d)", sql, run.Devices, m.Class, m.Detail, m.EngineRows, m.DuckDBRows)
			}
		}
	}
}
