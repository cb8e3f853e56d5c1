package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"gostachio/dataset"
	"gostachio/internal/sqlquery"
	"gostachio/plan"
	"gostachio/sqlplan"
	"gostachio/tpch/queries"
)

func init() { commands = append(commands, newExplainCmd) }

// explainOptions are the inputs of `gostachio explain`.
type explainOptions struct {
	// Query is a TPC-H query name, or, where SQL is set, ignored.
	Query string
	SQL   *sqlplan.Query
	// Data, where set, sizes the tables from the dataset's manifest;
	// otherwise SF and ChunkRows do (queries.Stats).
	Data      string
	SF        float64
	ChunkRows int
	Workers   int
	JSON      bool
}

func newExplainCmd(g *globals) *cobra.Command {
	var o explainOptions
	var sqlf *sqlFlags
	cmd := &cobra.Command{
		Use:   "explain --query q1 | --sql TEXT | --sql-file FILE [--data DIR | --sf N]",
		Short: "Print the physical plan of a query with its estimates (rows, bytes, pruned chunks) and the planning time",
		Long: `Plans a TPC-H query (--query) or an SQL query (--sql, --sql-file) over the
tables of a dataset (--data: its manifest's chunks, min/max and column
statistics) or of TPC-H at a scale factor (--sf, in chunks of --chunk-rows),
and prints every pipeline: its source (the chunks a scan reads and those its
pruning ranges rule out, or the pipelines it reads), what it waits for, and
each operator with its estimated rows in and out, output width and bytes,
keys, groups and expression, then the totals. --json prints the same as one
JSON document (schema: plan.Explanation). Nothing is read but the manifest.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.JSON = g.json
			if sqlf.given(c) {
				q, err := sqlf.query(c, "query")
				if err != nil {
					return err
				}
				o.SQL = &q
			} else if o.Query == "" {
				return fmt.Errorf("explain: give --query, --sql or --sql-file")
			}
			if o.Data != "" && c.Flags().Changed("sf") {
				return fmt.Errorf("explain: --data sizes the tables; --sf does without data: give one")
			}
			return runExplain(o, c.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Query, "query", "", "TPC-H query (q1..q22)")
	sqlf = addSQLFlags(f)
	f.StringVar(&o.Data, "data", "", "size the tables from this dataset's manifest")
	f.Float64Var(&o.SF, "sf", 1, "size the TPC-H tables at this scale factor (no data needed)")
	f.IntVar(&o.ChunkRows, "chunk-rows", dataset.DefaultChunkRows, "with --sf: rows per stored chunk")
	f.IntVar(&o.Workers, "workers", 0, "workers (nodes x devices) an SQL plan is sized for: broadcast or shuffle per join (0: 8)")
	return cmd
}

// runExplain plans the query of o and writes its explanation to w.
func runExplain(o explainOptions, w io.Writer) error {
	var tables []plan.TableStats
	sf := o.SF
	if o.Data != "" {
		ds, err := dataset.Open(o.Data)
		if err != nil {
			return err
		}
		tables, sf = ds.PlanStats(), ds.Manifest.ScaleFactor
	} else if o.SQL != nil {
		var err error
		if tables, err = queries.Stats(o.SF, o.ChunkRows); err != nil {
			return fmt.Errorf("explain: %w", err)
		}
	}
	start := time.Now()
	var p *plan.Plan
	var err error
	if o.SQL != nil {
		p, err = sqlplan.Plan(o.SQL.Name, o.SQL.SQL, tables, sqlplan.Options{Workers: o.Workers})
		err = sqlquery.Locate(err, o.SQL.SQL)
	} else {
		p, _, err = queries.Sized(o.Query, sf, o.ChunkRows, tables)
	}
	planning := time.Since(start)
	if err != nil {
		return sqlquery.Unwrapped(err)
	}
	if o.JSON {
		js, err := p.ExplainJSON(planning)
		if err != nil {
			return err
		}
		_, err = w.Write(js)
		return err
	}
	return p.ExplainText(w, planning)
}
