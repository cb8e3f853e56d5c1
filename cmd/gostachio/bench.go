package main

import (
	"time"

	"github.com/spf13/cobra"

	"gostachio/engine/storage"
	"gostachio/internal/units"
)

func init() { commands = append(commands, newBenchCmd) }

func newBenchCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Benchmarks (storage I/O, TPC-H, the simulator's own cost)"}
	var o storage.BenchOptions
	var bs, size string
	io := &cobra.Command{
		Use:   "io --data DIR|FILE",
		Short: "O_DIRECT read throughput, IOPS and latency of our reader, optionally side by side with fio",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var err error
			if o.BlockSize, err = units.ParseBytes(bs); err != nil {
				return err
			}
			if size != "" {
				if o.Size, err = units.ParseBytes(size); err != nil {
					return err
				}
			}
			o.JSON = g.json
			return storage.BenchIO(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := io.Flags()
	f.StringVar(&o.Data, "data", "", "file, or dataset folder (its largest file is read)")
	f.StringVar(&o.IO, "io", "auto", "reader: uring, pread or auto")
	f.IntVar(&o.QD, "qd", 32, "requests in flight")
	f.StringVar(&bs, "bs", "1MiB", "bytes per request (multiple of 4KiB)")
	f.StringVar(&o.Pattern, "pattern", "seq", "access pattern: seq or rand")
	f.DurationVar(&o.Duration, "duration", 10*time.Second, "how long each side runs (per round with --vs-fio)")
	f.StringVar(&size, "size", "", "use only the first SIZE bytes of the file")
	f.BoolVar(&o.VsFio, "vs-fio", false, "also run fio with the same parameters and print the ratio")
	f.IntVar(&o.Rounds, "rounds", 5, "with --vs-fio: rounds of both sides in a seeded random order (8+ give a 95% CI of the median ratio)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the random offsets and of the --vs-fio round order")
	f.BoolVar(&o.SQPoll, "sqpoll", false, "use a kernel submission-polling thread")
	f.BoolVar(&o.NoFixed, "no-fixed", false, "no fixed buffers or registered files")
	_ = io.MarkFlagRequired("data")
	cmd.AddCommand(io, newBenchTPCHCmd(g), newBenchSimulatorCmd(g), newBenchPlansCmd(g))
	return cmd
}
