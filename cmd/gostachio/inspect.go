package main

import (
	"time"

	"github.com/spf13/cobra"

	"gostachio/dataset"
	"gostachio/internal/progress"
)

func init() { commands = append(commands, newInspectCmd) }

func newInspectCmd(g *globals) *cobra.Command {
	var verify bool
	cmd := &cobra.Command{
		Use:   "inspect DIR [--verify]",
		Short: "Show a dataset's tables, rows, chunks, bytes per column, scale factor and format version",
		Long: `Shows a dataset's tables, rows, chunks, bytes per column, scale factor and
format version, and per column its type, estimated distinct values (a
HyperLogLog sketch taken when the data was written, about 0.8% standard
error; "-" for datasets written before), mean text length and min/max. With --verify it reads every buffer instead and checks it
against the CRC-32C the manifest recorded when the dataset was written; a
mismatch names the file, table, chunk, column and offset, and the command
fails.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if !verify {
				return dataset.Inspect(args[0], g.json, c.OutOrStdout())
			}
			var bar *progress.Bar
			var last int64
			report := func(done, total int64) {
				if bar == nil {
					bar = progress.New(c.ErrOrStderr(), "verify", total, "bytes", time.Now)
				}
				bar.Add(done - last)
				last = done
			}
			err := dataset.VerifyDataset(c.Context(), args[0], g.json, c.OutOrStdout(), report)
			bar.Finish()
			return err
		},
	}
	cmd.Flags().BoolVar(&verify, "verify", false, "read every buffer and check it against its recorded checksum")
	return cmd
}
