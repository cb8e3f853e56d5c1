package dataset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"

	"gostachio/tpch/schema"
)

// InspectReport is what Inspect prints (the JSON form is this struct).
type InspectReport struct {
	Dir           string         `json:"dir"`
	Name          string         `json:"name"`
	FormatVersion int            `json:"format_version"`
	ScaleFactor   float64        `json:"scale_factor"`
	Generator     Generator      `json:"generator"`
	Stripes       []string       `json:"stripes"`
	Tables        []InspectTable `json:"tables"`
}

// InspectTable summarizes one table. FileBytes is the size of its files;
// column Bytes are unpadded buffer bytes, PaddedBytes what O_DIRECT reads.
type InspectTable struct {
	Name      string          `json:"name"`
	Rows      int64           `json:"rows"`
	Chunks    int             `json:"chunks"`
	Files     int             `json:"files"`
	FileBytes int64           `json:"file_bytes"`
	Columns   []InspectColumn `json:"columns"`
}

// InspectColumn summarizes one column over all chunks.
type InspectColumn struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Bytes       int64  `json:"bytes"`
	PaddedBytes int64  `json:"padded_bytes"`
	// Min and Max are absent for a float64 column, which keeps none.
	Min *Value `json:"min,omitempty"`
	Max *Value `json:"max,omitempty"`
	// Distinct is the manifest's estimate of the column's distinct values
	// (ColumnMeta.Distinct; 0: unknown).
	Distinct int64 `json:"distinct,omitempty"`
	// AvgLen is the mean length in bytes of a text value (0 otherwise).
	AvgLen float64 `json:"avg_len,omitempty"`
}

// Report summarizes ds.
func (ds *Dataset) Report() *InspectReport {
	m := ds.Manifest
	r := &InspectReport{Dir: ds.Dir, Name: m.Name, FormatVersion: m.FormatVersion, ScaleFactor: m.ScaleFactor,
		Generator: m.Generator, Stripes: ds.Stripes(), Tables: []InspectTable{}}
	for ti := range m.Tables {
		tm := &m.Tables[ti]
		it := InspectTable{Name: tm.Name, Rows: tm.Rows, Chunks: len(tm.Chunks), Files: len(tm.Files)}
		for _, f := range tm.Files {
			it.FileBytes += f.Size
		}
		stats := columnStatsOf(tm)
		for k, c := range tm.Schema.Columns {
			ic := InspectColumn{Name: c.Name, Type: c.Type.String(), Distinct: tm.Columns[k].Distinct, AvgLen: stats[k].AvgLen}
			for ci := range tm.Chunks {
				cc := &tm.Chunks[ci].Columns[k]
				for _, b := range cc.Buffers {
					ic.Bytes += b.Len
					ic.PaddedBytes += b.Padded()
				}
				if c.Type == schema.Float64 {
					continue // no statistics (columnStats)
				}
				if ci == 0 {
					lo, hi := cc.Min, cc.Max
					ic.Min, ic.Max = &lo, &hi
					continue
				}
				if valueLess(cc.Min, *ic.Min) {
					*ic.Min = cc.Min
				}
				if valueLess(*ic.Max, cc.Max) {
					*ic.Max = cc.Max
				}
			}
			it.Columns = append(it.Columns, ic)
		}
		r.Tables = append(r.Tables, it)
	}
	return r
}

func valueLess(a, b Value) bool {
	if a.IsStr {
		return a.Str < b.Str
	}
	return a.Int < b.Int
}

// Inspect opens the dataset in dir and writes its summary to w: format
// version, scale factor, generator, stripes, and per table rows, chunks,
// file bytes and per column its type, bytes, estimated distinct values,
// mean text length and min/max; as indented JSON
// (InspectReport) when jsonOut.
func Inspect(dir string, jsonOut bool, w io.Writer) error {
	ds, err := Open(dir)
	if err != nil {
		return err
	}
	r := ds.Report()
	if jsonOut {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "dataset\t%s\t(%s)\n", r.Name, r.Dir)
	fmt.Fprintf(tw, "format version\t%d\n", r.FormatVersion)
	fmt.Fprintf(tw, "scale factor\t%g\n", r.ScaleFactor)
	fmt.Fprintf(tw, "generator\t%s %s seed %d\n", r.Generator.Name, r.Generator.Version, r.Generator.Seed)
	for i, s := range r.Stripes {
		fmt.Fprintf(tw, "stripe %d\t%s\n", i, s)
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "table\trows\tchunks\tfiles\tbytes\n")
	for _, t := range r.Tables {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", t.Name, t.Rows, t.Chunks, t.Files, t.FileBytes)
	}
	for _, t := range r.Tables {
		fmt.Fprintf(tw, "\n%s\ttype\tbytes\tpadded\tdistinct\tavg len\tmin\tmax\n", t.Name)
		for _, c := range t.Columns {
			lo, hi := "-", "-"
			if c.Min != nil {
				lo, hi = statString(*c.Min), statString(*c.Max)
			}
			distinct, avg := "-", "-"
			if c.Distinct > 0 {
				distinct = fmt.Sprint(c.Distinct)
			}
			if c.AvgLen > 0 {
				avg = fmt.Sprintf("%.1f", c.AvgLen)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", c.Name, c.Type, c.Bytes, c.PaddedBytes, distinct, avg, lo, hi)
		}
	}
	return tw.Flush()
}

// statString renders a statistic, quoting and shortening strings.
func statString(v Value) string {
	if !v.IsStr {
		return fmt.Sprint(v.Int)
	}
	s := []rune(v.Str)
	if len(s) > 24 {
		return fmt.Sprintf("%q…", string(s[:24]))
	}
	return fmt.Sprintf("%q", v.Str)
}

// VerifyDataset opens the dataset in dir and verifies it (Verify): every
// buffer against its recorded checksum, every chunk's statistics against
// its values, the manifest against its digest. A manifest whose digest
// differs is still verified, so the report names the fields that changed.
// Progress goes to progress (may be nil). It writes the report to w — as
// indented JSON (VerifyReport) when jsonOut; as text, every finding first
// and the verdict last — and returns Verify's error.
func VerifyDataset(ctx context.Context, dir string, jsonOut bool, w io.Writer, progress func(done, total int64)) error {
	ds, err := Open(dir)
	if errors.Is(err, ErrDigest) {
		var abs string
		if abs, err = filepath.Abs(dir); err == nil {
			ds, err = load(abs, false)
		}
	}
	if err != nil {
		return err
	}
	r, verr := ds.Verify(ctx, progress)
	if jsonOut {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
		return verr
	}
	if verr != nil && !r.Failed() && !errors.Is(verr, ErrNoChecksums) {
		return verr // a read error: the report is incomplete
	}
	for _, b := range r.Bad {
		fmt.Fprintf(w, "MISMATCH %s\n", b)
	}
	if r.BadCount > len(r.Bad) {
		fmt.Fprintf(w, "... and %d more buffers\n", r.BadCount-len(r.Bad))
	}
	for _, m := range r.Mismatches {
		fmt.Fprintf(w, "MISMATCH %s\n", m)
	}
	if r.MismatchCount > len(r.Mismatches) {
		fmt.Fprintf(w, "... and %d more fields\n", r.MismatchCount-len(r.Mismatches))
	}
	if r.Digest != "ok" && r.Digest != "absent" {
		fmt.Fprintf(w, "MISMATCH manifest digest: %s\n", r.Digest)
	}
	verdict := "verified"
	if r.Failed() {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "%s %s: %d tables, %d chunks, %d buffers, %d bytes (checksums %s, manifest digest %s)\n",
		verdict, r.Dir, r.Tables, r.Chunks, r.Buffers, r.Bytes, orNone(r.Checksums), r.Digest)
	return verr
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
