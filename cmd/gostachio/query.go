package main

import (
	"runtime"

	"github.com/spf13/cobra"

	"gostachio/engine"
	"gostachio/internal/sqlquery"
	"gostachio/sqlplan"
)

func init() { commands = append(commands, newQueryCmd) }

func newQueryCmd(g *globals) *cobra.Command {
	var o engine.RunOptions
	var rf *runFlags
	var sqlf *sqlFlags
	cmd := &cobra.Command{
		Use:   "query --data DIR --query q1|all | --sql TEXT | --sql-file FILE",
		Short: "Run TPC-H or SQL queries on the engine (CPU, or --gpu), through the overlap scheduler",
		Long: `Runs TPC-H queries (the spec's validation parameters), or one SQL query
(--sql, --sql-file; see docs/sql.md), on a dataset made by 'gostachio gen' or
imported, reading it from storage (O_DIRECT unless --buffered). The result
goes to stdout (TPC-H: in the spec's column order; SQL: under the select
list's names), decimals to their scale, dates as YYYY-MM-DD; a timing
summary goes to stderr. An SQL query is planned over the dataset's manifest
for the devices the run uses.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := rf.resolve(g); err != nil {
				return err
			}
			var err error
			if o.Catalog, err = sqlf.tpchCatalog(engineWorkers(&o)); err != nil {
				return err
			}
			if sqlf.given(c) {
				q, err := sqlf.query(c, "query")
				if err != nil {
					return err
				}
				if o.Catalog, err = sqlquery.Catalog([]sqlplan.Query{q}, sqlplan.Options{Workers: engineWorkers(&o)}); err != nil {
					return err
				}
				o.Query = q.Name
			}
			return sqlquery.Unwrapped(engine.RunQueries(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	rf = addRunFlags(cmd.Flags(), &o, false)
	sqlf = addSQLFlags(cmd.Flags())
	sqlf.addPlansFlag(cmd.Flags())
	_ = cmd.MarkFlagRequired("data")
	return cmd
}

// engineWorkers is the number of devices a single-process engine run
// of o uses (engine.RunQueries' defaults): what an SQL plan is sized for.
func engineWorkers(o *engine.RunOptions) int {
	switch {
	case o.Devices > 0:
		return o.Devices
	case o.UseGPU && !o.GPUHybrid:
		return 1
	}
	return runtime.GOMAXPROCS(0)
}
