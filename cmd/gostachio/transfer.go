package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"gostachio/dataset"
	"gostachio/tpch/schema"
)

func init() { commands = append(commands, newExportCmd, newImportCmd) }

func newExportCmd(g *globals) *cobra.Command {
	var o dataset.ExportOptions
	var tables string
	cmd := &cobra.Command{
		Use:   "export --format parquet DIR OUT",
		Short: "Export a dataset as one Parquet file per table, for other engines (DuckDB, pyarrow)",
		Args:  cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			if tables != "" {
				o.Tables = strings.Split(tables, ",")
			}
			ds, err := dataset.Open(args[0])
			if err != nil {
				return err
			}
			if err := dataset.Export(ds, args[1], o, c.ErrOrStderr()); err != nil {
				return err
			}
			return printDone(c, g, "export", args[1])
		},
	}
	cmd.Flags().StringVar(&o.Format, "format", "parquet", "output format (parquet)")
	cmd.Flags().StringVar(&tables, "tables", "", "comma-separated tables (default: all)")
	cmd.Flags().BoolVar(&o.Force, "force", false, "overwrite existing files in OUT")
	return cmd
}

func newImportCmd(g *globals) *cobra.Command {
	var o dataset.ImportOptions
	var from, out, tables, stripes string
	cmd := &cobra.Command{
		Use:   "import --from parquet|tbl SRC --out DIR",
		Short: "Import Parquet files or dbgen .tbl files (<table>.parquet / <table>.tbl in SRC) as a dataset",
		Long: `Import Parquet files or dbgen .tbl files (<table>.parquet / <table>.tbl in SRC) as a dataset.

--from parquet imports every <table>.parquet file of SRC (or those --tables
names). A file named after a TPC-H table takes the TPC-H schema, so imported
and generated TPC-H data are identical. Any other file keeps its own schema:
int8, int16, uint8, uint16 and int32 columns are stored as int32; uint32 and
int64 as int64; decimal128(p,s) as a decimal of scale s (values must fit 18
digits); float64 and float32 (widened exactly) as float64; date32 and date64
as dates; utf8 and large_utf8 as text. Any other type (bool, timestamp, list,
struct, ...), any null and any float NaN or infinity are refused, naming the
file, the column and the row. --from tbl imports TPC-H tables only.

The dataset is written beside DIR and renamed into place when complete: a
failed import leaves nothing behind. Each column's distinct count is
estimated as it is written (inspect shows it).`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if tables != "" && from == "parquet" {
				o.Names = strings.Split(tables, ",")
			} else if tables != "" {
				for _, name := range strings.Split(tables, ",") {
					t, err := schema.Lookup(name)
					if err != nil {
						return err
					}
					o.Tables = append(o.Tables, t)
				}
			}
			if stripes != "" {
				o.Stripes = strings.Split(stripes, ",")
			}
			if out == "" {
				return fmt.Errorf("import: no output folder (--out)")
			}
			var err error
			switch from {
			case "parquet":
				err = dataset.ImportParquet(args[0], out, o, c.ErrOrStderr())
			case "tbl":
				err = dataset.ImportTbl(args[0], out, o, c.ErrOrStderr())
			default:
				return fmt.Errorf("import: --from %q: want parquet or tbl", from)
			}
			if err != nil {
				return err
			}
			return dataset.Inspect(out, g.json, c.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "source format: parquet or tbl")
	f.StringVar(&out, "out", "", "dataset folder to create")
	f.IntVar(&o.ChunkRows, "chunk-rows", dataset.DefaultChunkRows, "rows per chunk")
	f.BoolVar(&o.Force, "force", false, "replace an existing dataset folder")
	f.StringVar(&stripes, "stripe", "", "extra folders to spread chunks over")
	f.StringVar(&tables, "tables", "", "comma-separated tables (default: every <table>.parquet file; for tbl every TPC-H table found)")
	f.Float64Var(&o.ScaleFactor, "sf", 0, "scale factor to record (default: from the Parquet metadata)")
	_ = cmd.MarkFlagRequired("from")
	return cmd
}

// printDone reports a finished command that has no table of its own.
func printDone(c *cobra.Command, g *globals, what, where string) error {
	if g.json {
		_, err := fmt.Fprintf(c.OutOrStdout(), "{\"%s\":\"done\",\"out\":%q}\n", what, where)
		return err
	}
	_, err := fmt.Fprintf(c.OutOrStdout(), "%s: wrote %s\n", what, where)
	return err
}
