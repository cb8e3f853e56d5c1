package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"gostachio/internal/sqlquery"
	"gostachio/sqlplan"
)

// sqlFlags are the flags that give a command one SQL query instead of a
// TPC-H query name.
type sqlFlags struct {
	text, file, name string
}

func addSQLFlags(f *pflag.FlagSet) *sqlFlags {
	s := &sqlFlags{}
	f.StringVar(&s.text, "sql", "", "run this SQL query (one SELECT statement; see docs/sql.md) instead of --query")
	f.StringVar(&s.file, "sql-file", "", "run the SQL query in this file instead of --query")
	f.StringVar(&s.name, "name", sqlquery.DefaultName, "with --sql or --sql-file: the query's name in results and traces")
	return s
}

// given reports whether the command was given an SQL query (an empty
// one too: query refuses it).
func (s *sqlFlags) given(c *cobra.Command) bool {
	return c.Flags().Changed("sql") || c.Flags().Changed("sql-file")
}

// query reads the SQL query; it refuses one given with --query (queryFlag,
// the command's flag naming a catalog query) changed too.
func (s *sqlFlags) query(c *cobra.Command, queryFlag string) (sqlplan.Query, error) {
	if c.Flags().Changed(queryFlag) {
		return sqlplan.Query{}, fmt.Errorf("give --%s or an SQL query (--sql, --sql-file), not both", queryFlag)
	}
	return sqlquery.Read(s.name, s.text, s.file)
}
