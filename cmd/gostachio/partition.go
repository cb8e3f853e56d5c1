package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"gostachio/dataset"
	"gostachio/internal/units"
)

func init() { commands = append(commands, newPartitionCmd) }

func newPartitionCmd(g *globals) *cobra.Command {
	var o dataset.PartitionOptions
	var out, stripes string
	cmd := &cobra.Command{
		Use:   "partition DIR --partitions N --out OUT",
		Short: "Rewrite a dataset split by key hash into N partitions (orders and lineitem co-partitioned on the order key)",
		Long: `Rewrite the dataset in DIR into OUT with every TPC-H table that grows with
the scale factor hash-partitioned: lineitem and orders on the order key (an
order and its lines share a partition), part and partsupp on the part key,
customer and supplier on their keys; nation and region are replicated. Row
r of a table goes to partition hash(key) mod N (dataset.PartitionOf, the
engine's 64-bit row hash). Partition p's rows are in <table>.p<p>.arrow and
the manifest records each chunk's partition; the scheduler deals a chunk of
partition p only to node p mod nodes. OUT is written to a temporary folder
and renamed into place.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("partition: no output folder (--out)")
			}
			if o.Partitions < 1 {
				return fmt.Errorf("partition: --partitions %d: must be at least 1", o.Partitions)
			}
			if stripes != "" {
				o.Stripes = strings.Split(stripes, ",")
			}
			src, err := dataset.Open(args[0])
			if err != nil {
				return err
			}
			if err := dataset.Partition(c.Context(), src, out, o); err != nil {
				return err
			}
			ds, err := dataset.Open(out)
			if err != nil {
				return fmt.Errorf("partition: reopening the written dataset: %w", err)
			}
			return printPartitioned(ds, g.json, c.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Partitions, "partitions", 0, "number of partitions (>= 1)")
	f.StringVar(&out, "out", "", "dataset folder to create")
	f.BoolVar(&o.Force, "force", false, "replace an existing dataset folder")
	f.StringVar(&stripes, "stripe", "", "extra folders (comma-separated) to spread the partitions' files over")
	f.IntVar(&o.Workers, "workers", 0, "tables rewritten at once (default: all cores)")
	_ = cmd.MarkFlagRequired("partitions")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

// partitionedTable is one table's line of the partition report.
type partitionedTable struct {
	Name  string `json:"name"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
	// Key is the partition key; empty for a replicated table.
	Key string `json:"key,omitempty"`
	// Chunks counts the chunks per partition (one entry, for a replicated
	// table: all its chunks).
	Chunks []int `json:"chunks"`
	// PartRows are the rows per partition (partitioned tables).
	PartRows []int64 `json:"partition_rows,omitempty"`
}

func printPartitioned(ds *dataset.Dataset, jsonOut bool, w io.Writer) error {
	m := ds.Manifest
	var tabs []partitionedTable
	for _, tm := range m.Tables {
		pt := partitionedTable{Name: tm.Name, Rows: tm.Rows, Key: tm.PartitionKey}
		for _, f := range tm.Files {
			pt.Bytes += f.Size
		}
		if tm.Partitions == 0 {
			pt.Chunks = []int{len(tm.Chunks)}
		} else {
			pt.Chunks, pt.PartRows = make([]int, tm.Partitions), make([]int64, tm.Partitions)
			for _, c := range tm.Chunks {
				pt.Chunks[c.Partition]++
				pt.PartRows[c.Partition] += c.Rows
			}
		}
		tabs = append(tabs, pt)
	}
	if jsonOut {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Dir        string             `json:"dir"`
			Partitions int                `json:"partitions"`
			Tables     []partitionedTable `json:"tables"`
		}{ds.Dir, m.Partitions, tabs})
	}
	fmt.Fprintf(w, "partitioned %s into %d partitions\n", ds.Dir, m.Partitions)
	fmt.Fprintf(w, "%-10s %12s %10s  %-12s %s\n", "table", "rows", "bytes", "key", "rows per partition (chunks)")
	for _, t := range tabs {
		if t.Key == "" {
			fmt.Fprintf(w, "%-10s %12d %10s  %-12s replicated (%d)\n", t.Name, t.Rows, units.FormatBytes(t.Bytes), "-", t.Chunks[0])
			continue
		}
		parts := make([]string, len(t.PartRows))
		for p := range parts {
			parts[p] = fmt.Sprintf("%d (%d)", t.PartRows[p], t.Chunks[p])
		}
		fmt.Fprintf(w, "%-10s %12d %10s  %-12s %s\n", t.Name, t.Rows, units.FormatBytes(t.Bytes), t.Key, strings.Join(parts, " "))
	}
	return nil
}
