package traces

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"

	"gostachio/traces/event"
)

// CSVColumns is the header WriteCSV writes, one column per Event field
// (resource also as text), named for pandas / DuckDB:
//
//	run,node,device,resource,res_kind,res_node,res_index,kind,op,meta,
//	pipeline,unit,table,chunk,task,start_ns,end_ns,bytes,rows
//
// kind and res_kind are the scheduler's names ("read", "nvme"), meta is
// true/false, times are integer nanoseconds since the run started.
var CSVColumns = []string{"run", "node", "device", "resource", "res_kind", "res_node", "res_index",
	"kind", "op", "meta", "pipeline", "unit", "table", "chunk", "task", "start_ns", "end_ns", "bytes", "rows"}

// WriteCSV writes events as CSV (RFC 4180) with the CSVColumns header, one
// row per event in order. Errors are w's.
func WriteCSV(w io.Writer, events []Event) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVColumns); err != nil {
		return err
	}
	row := make([]string, len(CSVColumns))
	i32 := func(v int32) string { return strconv.FormatInt(int64(v), 10) }
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	for i := range events {
		e := &events[i]
		row = append(row[:0], e.Run, i32(e.Node), i32(e.Device), e.Res.String(), e.Res.Kind.String(),
			i32(e.Res.Node), i32(e.Res.Index), e.Kind.String(), e.Op, strconv.FormatBool(e.Meta),
			i32(e.Pipeline), i32(e.Unit), i32(e.Table), i32(e.Chunk), i32(e.Task),
			i64(e.Start), i64(e.End), i64(e.Bytes), i64(e.Rows))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadCSV reads events from CSV with a header naming at least the
// CSVColumns, in any order (extra columns, e.g. a pandas index, are
// ignored). The resource column must agree with res_kind, res_node and
// res_index. Errors name the line (and column).
func ReadCSV(r io.Reader) ([]Event, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("traces: csv: empty input, want a header line")
		}
		return nil, fmt.Errorf("traces: csv: header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	idx := make([]int, len(CSVColumns))
	for i, c := range CSVColumns {
		j, ok := col[c]
		if !ok {
			return nil, fmt.Errorf("traces: csv: line 1: header lacks column %q", c)
		}
		idx[i] = j
	}
	var events []Event
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return events, nil
		}
		if err != nil {
			// csv.ParseError names the line already.
			return nil, fmt.Errorf("traces: csv: %w", err)
		}
		line, _ := cr.FieldPos(0)
		p := csvRow{rec: rec, idx: idx, line: line}
		e := Event{Run: p.str(0), Node: p.i32(1), Device: p.i32(2)}
		rk, ok := parseResKind(p.str(4))
		if !ok && p.err == nil {
			p.fail(4, "unknown resource kind")
		}
		e.Res = event.Resource{Kind: rk, Node: p.i32(5), Index: p.i32(6)}
		if p.err == nil && e.Res.String() != p.str(3) {
			p.fail(3, fmt.Sprintf("disagrees with res_kind/res_node/res_index (%s)", e.Res))
		}
		k, ok := parseTaskKind(p.str(7))
		if !ok && p.err == nil {
			p.fail(7, "unknown task kind")
		}
		e.Kind, e.Op = k, p.str(8)
		if m, err := strconv.ParseBool(p.str(9)); err != nil {
			p.fail(9, "not true/false")
		} else {
			e.Meta = m
		}
		e.Pipeline, e.Unit, e.Table, e.Chunk, e.Task = p.i32(10), p.i32(11), p.i32(12), p.i32(13), p.i32(14)
		e.Start, e.End, e.Bytes, e.Rows = p.i64(15), p.i64(16), p.i64(17), p.i64(18)
		if p.err != nil {
			return nil, p.err
		}
		events = append(events, e)
	}
}

// csvRow parses the fields of one record, keeping the first error.
type csvRow struct {
	rec  []string
	idx  []int
	line int
	err  error
}

func (p *csvRow) str(c int) string { return p.rec[p.idx[c]] }

func (p *csvRow) fail(c int, msg string) {
	if p.err == nil {
		p.err = fmt.Errorf("traces: csv: line %d, column %s: %q %s", p.line, CSVColumns[c], p.str(c), msg)
	}
}

func (p *csvRow) i32(c int) int32 {
	v, err := strconv.ParseInt(p.str(c), 10, 32)
	if err != nil {
		p.fail(c, "is not a 32-bit integer")
	}
	return int32(v)
}

func (p *csvRow) i64(c int) int64 {
	v, err := strconv.ParseInt(p.str(c), 10, 64)
	if err != nil {
		p.fail(c, "is not an integer")
	}
	return v
}
