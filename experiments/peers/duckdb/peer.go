// Package peer runs the 22 TPC-H queries in DuckDB (through cgo, the
// duckdb-go driver) over gostachio's Parquet export, as an independent
// engine to check results against and to time as a baseline. Results are
// verify.Tables formatted the way gostachio's engine prints them, so the two
// compare cell by cell.
package peer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"gostachio/tpch/verify"
)

// Tables are the TPC-H tables Open expects as <dir>/<table>.parquet.
var Tables = []string{"region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"}

// DB is an in-memory DuckDB database whose TPC-H tables are views over
// Parquet files. It is safe for concurrent use (database/sql's pool; every
// connection sees the same views).
type DB struct {
	db  *sql.DB
	dir string
	sf  float64
}

// SetScaleFactor sets the scale factor of the data (default 1), which
// Q11's FRACTION depends on.
func (db *DB) SetScaleFactor(sf float64) { db.sf = sf }

// ScaleFactor is the scale factor the queries assume.
func (db *DB) ScaleFactor() float64 {
	if db.sf > 0 {
		return db.sf
	}
	return 1
}

// Open creates an in-memory DuckDB with one view per TPC-H table,
// `create view T as select * from read_parquet('<dir>/T.parquet')`, as
// dataset.Export writes them. The files are read by each query (DuckDB
// caches their metadata), not loaded. The caller must Close the DB.
func Open(parquetDir string) (*DB, error) {
	dir, err := filepath.Abs(parquetDir)
	if err != nil {
		return nil, fmt.Errorf("peer: parquet dir %s: %w", parquetDir, err)
	}
	for _, t := range Tables {
		if _, err := os.Stat(filepath.Join(dir, t+".parquet")); err != nil {
			return nil, fmt.Errorf("peer: table %s: %w", t, err)
		}
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, fmt.Errorf("peer: open duckdb: %w", err)
	}
	for _, t := range Tables {
		path := filepath.Join(dir, t+".parquet")
		q := fmt.Sprintf("create view %s as select * from read_parquet('%s')", t, strings.ReplaceAll(path, "'", "''"))
		if _, err := db.Exec(q); err != nil {
			db.Close()
			return nil, fmt.Errorf("peer: view %s over %s: %w", t, path, err)
		}
	}
	return &DB{db: db, dir: dir}, nil
}

// Close closes the database.
func (db *DB) Close() error { return db.db.Close() }

// SetThreads sets DuckDB's worker threads (its default is every core).
func (db *DB) SetThreads(n int) error {
	if n < 1 {
		return fmt.Errorf("peer: threads %d: must be at least 1", n)
	}
	// A database-wide setting: it applies to every pooled connection.
	if _, err := db.db.Exec(fmt.Sprintf("set threads = %d", n)); err != nil {
		return fmt.Errorf("peer: set threads %d: %w", n, err)
	}
	return nil
}

// Query runs TPC-H query name ("q1".."q22") with the validation
// parameters and returns its result formatted like gostachio's engine (see
// QuerySQL) and the wall time from submitting the query to reading its last
// row.
func (db *DB) Query(ctx context.Context, name string) (*verify.Table, time.Duration, error) {
	text, err := SQLAt(name, db.ScaleFactor())
	if err != nil {
		return nil, 0, err
	}
	t, d, err := db.QuerySQL(ctx, text)
	if err != nil {
		return nil, d, fmt.Errorf("peer: %s: %w", name, err)
	}
	return t, d, nil
}

// QuerySQL runs one SQL statement and returns its result as text, cells
// formatted like gostachio's engine prints them: DECIMAL and DOUBLE values
// rounded half away from zero to 2 places ("123.40", "-0.05"; a DOUBLE is
// rounded from its shortest decimal representation), dates YYYY-MM-DD,
// integers plain, strings as is, NULL as the empty string; and the wall time
// from submitting the statement to reading its last row (the formatting of
// cells, done as rows are read, included).
func (db *DB) QuerySQL(ctx context.Context, text string) (*verify.Table, time.Duration, error) {
	start := time.Now()
	rows, err := db.db.QueryContext(ctx, text)
	if err != nil {
		return nil, time.Since(start), err
	}
	defer rows.Close()
	cols, err := rows.ColumnTypes()
	if err != nil {
		return nil, time.Since(start), err
	}
	t := &verify.Table{Header: make([]string, len(cols))}
	dbTypes := make([]string, len(cols))
	for i, c := range cols {
		t.Header[i] = c.Name()
		dbTypes[i] = c.DatabaseTypeName()
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, time.Since(start), err
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i], err = FormatValue(v)
			if err != nil {
				return nil, time.Since(start), fmt.Errorf("row %d column %s (%s): %w", len(t.Rows)+1, t.Header[i], dbTypes[i], err)
			}
		}
		t.Rows = append(t.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return nil, time.Since(start), err
	}
	return t, time.Since(start), nil
}

// FormatValue formats one value as scanned from the duckdb-go driver the
// way gostachio's engine prints it (see QuerySQL). Types no TPC-H result
// has (lists, structs, intervals, ...) are an error.
func FormatValue(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	case int8:
		return strconv.FormatInt(int64(x), 10), nil
	case int16:
		return strconv.FormatInt(int64(x), 10), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int:
		return strconv.Itoa(x), nil
	case uint8:
		return strconv.FormatUint(uint64(x), 10), nil
	case uint16:
		return strconv.FormatUint(uint64(x), 10), nil
	case uint32:
		return strconv.FormatUint(uint64(x), 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case *big.Int:
		if x == nil {
			return "", nil
		}
		return x.String(), nil
	case duckdb.Decimal:
		if x.Value == nil {
			return "", errors.New("decimal without a value")
		}
		return Round2(x.Value, int(x.Scale)), nil
	case float64:
		return formatFloat(x, 64), nil
	case float32:
		return formatFloat(float64(x), 32), nil
	case time.Time:
		if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 && x.Nanosecond() == 0 {
			return x.Format("2006-01-02"), nil
		}
		return x.Format("2006-01-02 15:04:05.999999"), nil
	default:
		return "", fmt.Errorf("unsupported value type %T", v)
	}
}

// formatFloat rounds f (of the given bit size) to 2 places half away from
// zero, from its shortest decimal representation (so 2.675, stored as
// 2.67499999..., gives 2.68 as its printed form suggests). NaN and
// infinities print as strconv does.
func formatFloat(f float64, bits int) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'f', -1, bits)
	}
	s := strconv.FormatFloat(f, 'f', -1, bits)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	v, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok { // cannot happen: FormatFloat 'f' prints digits only
		return strconv.FormatFloat(f, 'f', 2, bits)
	}
	if neg {
		v.Neg(v)
	}
	return Round2(v, len(frac))
}

// Round2 formats the decimal v * 10^-scale rounded half away from zero to
// 2 places: "123.40", "-0.05", "0.00" (never "-0.00"). v is not modified.
func Round2(v *big.Int, scale int) string {
	neg := v.Sign() < 0
	a := new(big.Int).Abs(v)
	switch {
	case scale < 2:
		a.Mul(a, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(2-scale)), nil))
	case scale > 2:
		div := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale-2)), nil)
		q, r := new(big.Int).QuoRem(a, div, new(big.Int))
		if r.Lsh(r, 1).Cmp(div) >= 0 {
			q.Add(q, big.NewInt(1))
		}
		a = q
	}
	digits := a.String()
	for len(digits) < 3 {
		digits = "0" + digits
	}
	s := digits[:len(digits)-2] + "." + digits[len(digits)-2:]
	if neg && a.Sign() != 0 {
		s = "-" + s
	}
	return s
}
