package dataset

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gostachio/tpch/schema"
)

// ImportTbl builds a dataset at dst from dbgen's text output: files
// <src>/<table>.tbl, one row per line, fields separated by '|' with a
// trailing '|' (required: it is what tells an empty last field from a
// missing one). Decimals
// are parsed exactly to cents ("-12.5" -> -1250; more than two fractional
// digits only if the extra ones are zeros), dates as YYYY-MM-DD, text as
// the raw bytes between separators. Errors name file and line.
func ImportTbl(src, dst string, opts ImportOptions, stderr io.Writer) error {
	tables, paths, err := importSources(src, "tbl", opts)
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(src)
	gen := Generator{Name: "import-tbl", Version: strconv.Itoa(FormatVersion), Params: map[string]string{"source": abs}}
	return runImport(dst, opts, gen, tables, paths, stderr, loadTbl)
}

func loadTbl(t *schema.Table, path string, c *chunker) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	line := 0
	fields := make([][]byte, 0, len(t.Columns)+1)
	for sc.Scan() {
		line++
		text := bytes.TrimSuffix(sc.Bytes(), []byte{'\r'})
		if len(text) == 0 {
			continue
		}
		fields = fields[:0]
		for len(fields) < len(t.Columns) {
			i := bytes.IndexByte(text, '|')
			if i < 0 {
				break
			}
			fields = append(fields, text[:i])
			text = text[i+1:]
		}
		if len(fields) != len(t.Columns) || len(text) != 0 {
			return 0, fmt.Errorf("dataset: %s:%d: want %d fields each ended by '|'", path, line, len(t.Columns))
		}
		if err := appendTblRow(c, t, fields); err != nil {
			return 0, fmt.Errorf("dataset: %s:%d: %w", path, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("dataset: %s after line %d: %w", path, line, err)
	}
	return 0, nil
}

// appendTblRow parses one row into the chunker's current batch. All fields
// are parsed before any is appended, so a bad row leaves no partial row.
func appendTblRow(c *chunker, t *schema.Table, fields [][]byte) error {
	var ints [32]int64
	if len(t.Columns) > len(ints) {
		return fmt.Errorf("table %s has more than %d columns", t.Name, len(ints))
	}
	for i, col := range t.Columns {
		s := fields[i]
		var err error
		switch col.Type {
		case schema.Int64:
			ints[i], err = strconv.ParseInt(string(s), 10, 64)
		case schema.Int32:
			ints[i], err = strconv.ParseInt(string(s), 10, 32)
		case schema.Decimal:
			ints[i], err = ParseCents(s)
		case schema.Date:
			var d int32
			d, err = ParseDate(s)
			ints[i] = int64(d)
		case schema.Float64:
			var x float64
			x, err = strconv.ParseFloat(string(s), 64)
			ints[i] = int64(math.Float64bits(x))
		}
		if err != nil {
			return fmt.Errorf("column %s: %q: %w", col.Name, s, err)
		}
	}
	for i, col := range t.Columns {
		v := &c.cur.Cols[i]
		switch col.Type {
		case schema.Int64, schema.Decimal, schema.Float64:
			v.I64 = append(v.I64, ints[i])
		case schema.Int32, schema.Date:
			v.I32 = append(v.I32, int32(ints[i]))
		default:
			v.Bytes = append(v.Bytes, fields[i]...)
			v.Offsets = append(v.Offsets, int32(len(v.Bytes)))
		}
	}
	return c.rowDone()
}

// ParseCents parses a decimal like "-1234.5" exactly into hundredths
// (-123450). A fraction of more than two digits is accepted only when the
// extra digits are zeros; exponents are not.
func ParseCents(s []byte) (int64, error) {
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	var v int64
	digits, frac := 0, -1 // frac: fractional digits seen, -1 before '.'
	for _, ch := range s {
		switch {
		case ch == '.' && frac < 0:
			frac = 0
		case ch >= '0' && ch <= '9':
			digits++
			if frac >= 2 {
				if ch != '0' {
					return 0, fmt.Errorf("more than two fractional digits")
				}
				continue
			}
			if frac >= 0 {
				frac++
			}
			if v > (1<<63-1-int64(ch-'0'))/10 {
				return 0, fmt.Errorf("decimal out of range")
			}
			v = v*10 + int64(ch-'0')
		default:
			return 0, fmt.Errorf("not a decimal")
		}
	}
	if digits == 0 {
		return 0, fmt.Errorf("not a decimal")
	}
	for f := max(frac, 0); f < 2; f++ {
		if v > (1<<63-1)/10 {
			return 0, fmt.Errorf("decimal out of range")
		}
		v *= 10
	}
	if neg {
		v = -v
	}
	return v, nil
}

// ParseDate parses YYYY-MM-DD (proleptic Gregorian) into days since
// 1970-01-01, checking month and day ranges.
func ParseDate(s []byte) (int32, error) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, fmt.Errorf("not a YYYY-MM-DD date")
	}
	num := func(b []byte) (int, bool) {
		n := 0
		for _, ch := range b {
			if ch < '0' || ch > '9' {
				return 0, false
			}
			n = n*10 + int(ch-'0')
		}
		return n, true
	}
	y, ok1 := num(s[0:4])
	m, ok2 := num(s[5:7])
	d, ok3 := num(s[8:10])
	if !ok1 || !ok2 || !ok3 {
		return 0, fmt.Errorf("not a YYYY-MM-DD date")
	}
	if m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m) {
		return 0, fmt.Errorf("no such day")
	}
	return int32(daysFromCivil(y, m, d)), nil
}

func daysInMonth(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is H. Hinnant's days_from_civil: days since 1970-01-01.
func daysFromCivil(y, m, d int) int {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
