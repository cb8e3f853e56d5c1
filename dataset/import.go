package dataset

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"gostachio/tpch/schema"
)

// ImportOptions configure ImportParquet and ImportTbl.
type ImportOptions struct {
	// ChunkRows is the number of rows per chunk (0: DefaultChunkRows).
	ChunkRows int
	// Force allows replacing an existing non-empty dst.
	Force bool
	// Stripes spread chunks over more folders (see CreateOptions.Stripes).
	Stripes []string
	// Tables are the tables to import, each from <src>/<name>.<ext>. Nil
	// means every TPC-H table whose file exists in src (at least one must);
	// ImportParquet: every .parquet file (see Names).
	Tables []*schema.Table
	// Names adds tables to import by name (ImportParquet only: a name
	// that is not a TPC-H table takes the schema of its file).
	Names []string
	// ScaleFactor recorded in the manifest; 0 takes it from the Parquet
	// metadata Export wrote, if any.
	ScaleFactor float64
}

// importSources resolves which tables to import from src and their files.
func importSources(src, ext string, opts ImportOptions) ([]*schema.Table, []string, error) {
	st, err := os.Stat(src)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: import from %s: %w", src, err)
	}
	if !st.IsDir() {
		return nil, nil, fmt.Errorf("dataset: import from %s: not a folder", src)
	}
	tables, explicit := opts.Tables, opts.Tables != nil
	if !explicit {
		tables = schema.Tables
	}
	var got []*schema.Table
	var paths []string
	for _, t := range tables {
		p := filepath.Join(src, t.Name+"."+ext)
		if _, err := os.Stat(p); err != nil {
			if explicit || !errors.Is(err, os.ErrNotExist) {
				return nil, nil, fmt.Errorf("dataset: import table %s: %w", t.Name, err)
			}
			continue
		}
		got = append(got, t)
		paths = append(paths, p)
	}
	if len(got) == 0 {
		return nil, nil, fmt.Errorf("dataset: import from %s: no <table>.%s file of a TPC-H table", src, ext)
	}
	return got, paths, nil
}

// runImport creates dst, calls load for each table with a chunker, and
// commits; on any error the partial dataset is removed.
func runImport(dst string, opts ImportOptions, gen Generator, tables []*schema.Table, paths []string,
	stderr io.Writer, load func(t *schema.Table, path string, c *chunker) (float64, error)) error {
	if stderr == nil {
		stderr = io.Discard
	}
	w, err := Create(dst, CreateOptions{Force: opts.Force, Stripes: opts.Stripes})
	if err != nil {
		return err
	}
	defer w.Abort()
	sf := opts.ScaleFactor
	for i, t := range tables {
		tw, err := w.Table(t)
		if err != nil {
			return err
		}
		c := newChunker(tw, opts.ChunkRows)
		fileSF, err := load(t, paths[i], c)
		if err != nil {
			return err
		}
		if err := c.flush(); err != nil {
			return err
		}
		if sf == 0 {
			sf = fileSF
		}
		fmt.Fprintf(stderr, "import %s: %d rows in %d chunks from %s\n", t.Name, tw.meta.Rows, c.chunks, paths[i])
	}
	w.SetMeta(Meta{ScaleFactor: sf, Generator: gen})
	return w.Commit()
}
