package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	calcluster "gostachio/calibrate/cluster"
	"gostachio/engine/cluster"
	"gostachio/internal/sqlquery"
	"gostachio/internal/units"
	"gostachio/plan"
)

func init() { commands = append(commands, newClusterCmd) }

func newClusterCmd(g *globals) *cobra.Command {
	var o cluster.LaunchOptions
	var link string
	var cleanup bool
	cmd := &cobra.Command{
		Use:   "cluster --nodes N [--netns [--link RATE,DELAY]] -- query --data DIR [--query all ...]",
		Short: "Run a query on N worker processes of this machine (an emulated cluster over loopback TCP or network namespaces)",
		Long: `Starts N 'gostachio worker' processes on this machine (torchrun environment,
rank 0 at 127.0.0.1 on a free port) with the query options after '--', prints
rank 0's output and the others' prefixed with [rank k] on stderr. All workers
are killed on an interrupt or when one fails and the others do not exit
within --grace; none is left behind.

--netns (root, iproute2) puts each worker in a network namespace of its own
(gst-ID-RANK, address 10.X.Y.RANK+1/24), joined by veth pairs through a
bridge gst-brID, every veth shaped with tc in both directions as --link says
(tbf for the rate, netem for the delay where the kernel has it), and removes
them all at the end, also after an interrupt. A launcher killed with -9
leaves them: the next --netns launch or 'gostachio cluster --cleanup'
removes the leftovers of launchers that are gone.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if cleanup {
				removed, err := cluster.CleanupNetns(len(args) > 0 && args[0] == "all")
				for _, r := range removed {
					fmt.Fprintln(c.OutOrStdout(), "removed", r)
				}
				return err
			}
			if c.Flags().ArgsLenAtDash() != 0 {
				return fmt.Errorf("cluster: put the query options after '--': gostachio cluster --nodes N -- query --data DIR ...")
			}
			args, err := inlineSQLFile(workerArgs(args, g.json))
			if err != nil {
				return err
			}
			l, err := cluster.ParseLink(link)
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("cluster: %w", err)
			}
			o.Exe, o.Args, o.Link = exe, args, l
			return cluster.Launch(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Nodes, "nodes", 2, "worker processes")
	f.DurationVar(&o.Grace, "grace", 0, "how long workers may take to exit after one exited before they are killed (default 15s)")
	f.BoolVar(&o.Netns, "netns", false, "one network namespace per worker, joined through a bridge (root, iproute2)")
	f.StringVar(&link, "link", "", "with --netns: shape every worker's link, RATE[,DELAY][,queue=SIZE] (e.g. 10Gbit,50us; queue: each port's buffer, default 20 ms at the rate)")
	f.StringVar(&o.NetnsID, "netns-id", "", "with --netns: the run id naming the network's resources (6 hex digits; default random)")
	f.BoolVar(&cleanup, "cleanup", false, "remove the namespaces, veths and bridges of --netns launchers that are gone ('--cleanup all': of live ones too) and exit")
	cmd.AddCommand(newBenchExchangeCmd(g), newExchangePeerCmd(), newBurstPeerCmd(), newColocatePeerCmd(), newBenchSimCmd(g), newBenchFabricCmd(g), newPoolLaunchesCmd(g))
	return cmd
}

// workerArgs are the worker options of `cluster ... -- [query] ARGS`: the
// query options after '--', and --json when the launcher was given it (a
// global flag before '--' would otherwise apply to the launcher alone).
func workerArgs(args []string, jsonOut bool) []string {
	if len(args) > 0 && args[0] == "query" {
		args = args[1:]
	}
	if jsonOut && !slices.Contains(args, "--json") {
		args = append([]string{"--json"}, args...)
	}
	return args
}

// inlineSQLFile replaces a --sql-file FILE among the worker options by
// --sql and the file's text: the launcher reads the query once, so every
// worker plans the same text, wherever it runs and whatever happens to
// the file meanwhile.
func inlineSQLFile(args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...), nil
		}
		var file string
		switch {
		case a == "--sql-file" && i+1 < len(args):
			file = args[i+1]
			i++
		case strings.HasPrefix(a, "--sql-file="):
			file = strings.TrimPrefix(a, "--sql-file=")
		default:
			out = append(out, a)
			continue
		}
		q, err := sqlquery.Read(sqlquery.DefaultName, "", file)
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		out = append(out, "--sql", q.SQL)
	}
	return out, nil
}

func newBenchExchangeCmd(g *globals) *cobra.Command {
	var o cluster.ExchangeBenchOptions
	var link, frame string
	cmd := &cobra.Command{
		Use:   "bench-exchange [--netns [--link RATE,DELAY]]",
		Short: "Exchange throughput of the data plane against iperf3 on the same path (loopback; with --netns, between two namespaces)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var err error
			if o.Link, o.FrameBytes, o.Exe, err = streamInputs(link, frame); err != nil {
				return err
			}
			return tableOrJSON(c, g, func(out io.Writer) (any, error) { return cluster.BenchExchange(c.Context(), o, out) })
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.Netns, "netns", false, "also measure between two network namespaces (root, iproute2)")
	f.StringVar(&link, "link", "", "with --netns: shape the veths, RATE[,DELAY][,queue=SIZE]")
	f.DurationVar(&o.Duration, "duration", 3*time.Second, "length of each measurement")
	f.IntVar(&o.Rounds, "rounds", 3, "measurements of each tool, alternating")
	f.IntVar(&o.Streams, "streams", 4, "exchange sends in flight on the one connection")
	f.StringVar(&frame, "frame", "384KiB", "payload of one exchange frame (default: the byte-weighted median frame of Q3, Q5, Q9 and Q18 on 4 workers at SF1)")
	return cmd
}

func newExchangePeerCmd() *cobra.Command {
	var o cluster.ExchangePeerOptions
	cmd := &cobra.Command{
		Use:    "exchange-peer",
		Short:  "One side of bench-exchange (started by it)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return cluster.RunExchangePeer(c.Context(), o, os.Stdin, c.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Rank, "rank", 0, "0 sends, 1 receives")
	f.StringVar(&o.Listen, "listen", "", "this side's data address")
	f.StringVar(&o.Peer, "peer", "", "the other side's data address")
	f.DurationVar(&o.Duration, "duration", 3*time.Second, "measurement length")
	f.IntVar(&o.Streams, "streams", 4, "sends in flight")
	f.Int64Var(&o.FrameBytes, "frame", 1<<20, "payload bytes of one frame")
	return cmd
}

func newBenchFabricCmd(g *globals) *cobra.Command {
	var o calcluster.FabricBenchOptions
	var link, frame, pairBytes, from string
	cmd := &cobra.Command{
		Use:   "bench-fabric --link RATE [--nodes 4] [--profile DERIVED.yaml]",
		Short: "All-to-all exchange bursts on a --netns cluster network: each port's rate against the link's, and the simulator's fabric efficiency",
		Long: `Starts --nodes processes in the namespaces of an emulated cluster shaped by
--link (root, iproute2) and times rounds of all-to-all bursts through the
engine's data plane: each worker sends --frames frames of --frame bytes to
every other (--streams in flight per peer, as a query's exchange) and receives
as many, all starting together (with --stagger, each pair at its own offset).
Prints the rounds' makespans and what each port
moved against the link's TCP payload rate; with --profile (a cluster profile,
as 'cluster bench-sim' derives), the share of its NIC bandwidth at which the
simulator takes as long for the same burst (of the bandwidth as written: a
profile bench-sim wrote carries its launch's share already). bench-sim makes
this measurement before its runs (--fabric-efficiency 0, the default).
--pair-bytes measures bursts of several sizes (the fabric's efficiency by the
size of an exchange) and prints them as a table;
--from fits bursts saved with --json against --profile without measuring.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if from != "" {
				if o.Profile == "" {
					return fmt.Errorf("cluster: bench-fabric --from refits saved bursts: it needs --profile")
				}
				return tableOrJSON(c, g, func(out io.Writer) (any, error) {
					return calcluster.RefitFabric(c.Context(), o.Profile, strings.Split(from, ","), out)
				})
			}
			var err error
			if o.Link, o.FrameBytes, o.Exe, err = streamInputs(link, frame); err != nil {
				return err
			}
			if o.Link.Rate <= 0 {
				return fmt.Errorf("cluster: bench-fabric: --link needs a rate (e.g. 100Mbit)")
			}
			for _, c := range []struct {
				flag     string
				val, min int64
			}{{"--nodes", int64(o.Nodes), 2}, {"--frames", int64(o.Frames), 1}, {"--frame", o.FrameBytes, 8},
				{"--streams", int64(o.Streams), 1}, {"--rounds", int64(o.Rounds), 1}, {"--warmup", int64(o.Warmup), 0},
				{"--stagger (ns)", int64(o.Stagger), 0}} {
				if c.val < c.min {
					return fmt.Errorf("cluster: bench-fabric: %s %d must be at least %d", c.flag, c.val, c.min)
				}
			}
			if pairBytes != "" {
				sizes, err := parseSizes("bench-fabric --pair-bytes", pairBytes)
				if err != nil {
					return err
				}
				return tableOrJSON(c, g, func(out io.Writer) (any, error) { return calcluster.BenchFabricSweep(c.Context(), o, sizes, out) })
			}
			return tableOrJSON(c, g, func(out io.Writer) (any, error) { return calcluster.BenchFabric(c.Context(), o, out) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "comma-separated --json outputs of earlier bench-fabric runs: fit their bursts against --profile instead of measuring")
	f.StringVar(&pairBytes, "pair-bytes", "", "sweep: comma-separated bytes each worker sends to each other per burst, one measurement each, in frames of at most --frame (--frames ignored)")
	f.StringVar(&link, "link", "", "every worker's link, RATE[,DELAY][,queue=SIZE]")
	f.IntVar(&o.Nodes, "nodes", 4, "workers")
	f.IntVar(&o.Frames, "frames", calcluster.DefaultBurstFrames, "frames each worker sends to each other per round")
	f.StringVar(&frame, "frame", "384KiB", "payload of one frame")
	f.IntVar(&o.Streams, "streams", 4, "sends in flight per peer")
	f.IntVar(&o.Rounds, "rounds", 7, "timed rounds")
	f.IntVar(&o.Warmup, "warmup", 2, "untimed rounds first")
	f.StringVar(&o.Profile, "profile", "", "a cluster profile to fit the fabric's efficiency against")
	f.DurationVar(&o.Stagger, "stagger", 0, "start each pair of workers' frames at its own offset, drawn from [0, D) with --seed (0: all together)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the --stagger offsets")
	return cmd
}

func newBurstPeerCmd() *cobra.Command {
	var o cluster.BurstPeerOptions
	var peers string
	cmd := &cobra.Command{
		Use:    "burst-peer",
		Short:  "One worker of bench-sim's all-to-all burst measurement (started by it)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.Peers = strings.Split(peers, ",")
			return cluster.RunBurstPeer(c.Context(), o, os.Stdin, c.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Rank, "rank", 0, "this worker's index in --peers")
	f.StringVar(&peers, "peers", "", "every worker's data address (host:port), comma-separated, by rank")
	f.IntVar(&o.Frames, "frames", calcluster.DefaultBurstFrames, "frames to each other worker per round")
	f.Int64Var(&o.FrameBytes, "frame", 384<<10, "payload bytes of one frame")
	f.IntVar(&o.Streams, "streams", 4, "sends in flight per peer")
	return cmd
}

func newColocatePeerCmd() *cobra.Command {
	var d time.Duration
	var threads int
	cmd := &cobra.Command{
		Use:    "colocate-peer",
		Short:  "One process of bench-sim's co-location measurement (started by it)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return calcluster.RunColocatePeer(c.Context(), d, threads, os.Stdin, c.OutOrStdout())
		},
	}
	cmd.Flags().DurationVar(&d, "duration", 2*time.Second, "length of the kernel loop")
	cmd.Flags().IntVar(&threads, "threads", 0, "kernel loops at once (0: one per core)")
	return cmd
}

func newBenchSimCmd(g *globals) *cobra.Command {
	var o calcluster.SimBenchOptions
	var link, qs, exempt, colocationFrom, fabricFrom, taxQueries string
	var launches int
	var within float64
	cmd := &cobra.Command{
		Use:   "bench-sim --data DIR [--nodes 4] [--link 1Gbit] [--query q3,q5,q9,q18] [--launches N]",
		Short: "Query times on a --netns cluster with shaped links against the simulator's prediction for the same topology",
		Long: `Runs each query --reps times on a --nodes worker --netns cluster shaped by --link
(root, iproute2) and once in the simulator ('gostachio sim --nodes N --data DIR
--policy overlap') on a profile derived from --profile: --devices devices per
node, the machine's cores and NVMe bandwidth shared by the workers, the link's
bandwidth and latency (--latency where the kernel cannot emulate the delay).
Before the runs it measures what the workers lose by sharing the cores (a
kernel loop in one process and in --nodes processes: node.colocation) and what
the TCP stack takes from the cores per byte (the data plane streaming between
two namespaces over --link: node.net_cpu_cost, from the machine's interrupt
time by default, --net-cpu-from) and the share of the link's
rate a port moves in short all-to-all exchanges (bursts through the data plane
on the cluster's network, as 'cluster bench-fabric': nic.bandwidth);
--colocation, --net-cpu-cost and --fabric-efficiency give them instead. It
also measures what the workers take from the cores beside the model (their
runtimes, the exchange's encoding and system calls): --tax-queries on the
cluster and in one process, the difference in CPU time per second of the
cluster's runs (node.cpu_tax, the cores the simulated machine loses while a
query runs; --cpu-tax gives it). The
operator kinds of --colocation-exempt (the aggregates by default) are priced so
that they lose none of the co-location (node.colocation_exempt). The derived
profile carries the link's ports: nic_line_rate (egress ports, and ingress
ports one send enters alone, at the payload rate) and, where two TCP windows
can fill a worker's shaper queue, nic_port (a send that finds it full waits
for TCP's probe timer). --colocation-from and --fabric-from pool earlier
launches' co-location rounds and burst rounds with this launch's: one
launch's are noisy, and the engine's times do not follow them.

Rank 0 times the disk reference (128 MiB of lineitem in the profile's
requests) after every run, and the simulator's disk bandwidth is scaled by its
throughput over the profile's model of it (--rescale-disk, on by default; a
dataset of SF 0.25 or more). The workers read from this machine's disk, whose
speed moves by the hour with the rest of the guest, and the engine's slow
launches were launches in which the disk reference ran slow too.
--rescale-cpu does the same with the CPU reference and the host's prices;
with both, every launch is priced four ways (neither, each alone, both) and
the others are printed beside the headline.

The runs are interleaved by default: one launch of --warmup + --reps rounds,
each running every query once in an order drawn from --seed, so that the
machine's drift reaches every query alike (--order grouped: each query's runs
back to back, a launch per query). Prints per query the engine's median with
its distribution-free 95% interval (from 6 runs on), the simulated seconds,
the error against the median and against the interval's ends, and whether
the simulated time lies inside the interval.

--launches N repeats the whole measurement N times (seeds --seed, --seed+1,
...; profiles --profile-out with -1, -2, ... before the extension; each
launch measures its own co-location and network cost) and then pools them:
the median |error| over every case, how many cases and how many launches
have every query within --within, and each query's median error. On a
shared machine one launch shows the minutes it ran in: the engine's medians
moved by up to 30% between launches here. From 3 launches on it also prints the
engine's own launch-to-launch spread (each case's median predicted by the other
launches'), the errors that no prediction blind to a launch's conditions
avoids. With --json the rows carry their launch; 'cluster pool-launches' pools
the rows of separate runs.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			l, err := cluster.ParseLink(link)
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("cluster: %w", err)
			}
			o.Exe, o.Link = exe, l
			for _, q := range strings.Split(qs, ",") {
				o.Queries = append(o.Queries, strings.TrimSpace(q))
			}
			for _, f := range strings.Split(colocationFrom, ",") {
				if f = strings.TrimSpace(f); f != "" {
					o.ColocationFrom = append(o.ColocationFrom, f)
				}
			}
			for _, f := range strings.Split(fabricFrom, ",") {
				if f = strings.TrimSpace(f); f != "" {
					o.FabricFrom = append(o.FabricFrom, f)
				}
			}
			for _, q := range strings.Split(taxQueries, ",") {
				if q = strings.TrimSpace(q); q != "" {
					o.TaxQueries = append(o.TaxQueries, q)
				}
			}
			if exempt != "none" && exempt != "" {
				for _, k := range strings.Split(exempt, ",") {
					k = strings.TrimSpace(k)
					if _, err := plan.ParseOpKind(k); err != nil {
						return fmt.Errorf("--colocation-exempt: %w", err)
					}
					o.ColocationExempt = append(o.ColocationExempt, k)
				}
			}
			if o.Profile == "" {
				o.Profile = localProfilePath()
			}
			return tableOrJSON(c, g, func(out io.Writer) (any, error) {
				rows, _, err := calcluster.BenchSimLaunches(c.Context(), o, launches, within, out, c.ErrOrStderr())
				return rows, err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Data, "data", "", "dataset directory")
	f.IntVar(&o.Nodes, "nodes", 4, "workers")
	f.StringVar(&link, "link", "1Gbit", "every worker's link, RATE[,DELAY][,queue=SIZE]")
	f.IntVar(&o.Devices, "devices", 1, "devices per worker (engine --devices; the profile's gpus)")
	f.StringVar(&qs, "query", "q3,q5,q9,q18", "queries")
	f.IntVar(&o.Reps, "reps", 9, "timed runs of each query on the cluster (the median counts; 6 or more give its 95% interval)")
	f.IntVar(&o.Warmup, "warmup", 2, "untimed runs of each query first, on the same workers (their heaps warm up)")
	f.StringVar(&o.Order, "order", calcluster.OrderInterleaved, "run layout: interleaved (rounds of every query, shuffled per round) or grouped (each query's runs back to back)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the interleaved order")
	f.StringVar(&o.Profile, "profile", "", "calibrated profile the simulated one derives from "+localProfileHelp)
	f.StringVar(&o.ProfileOut, "profile-out", "out/netns-cluster.yaml", "where to write the derived profile (its folder is made)")
	f.Float64Var(&o.FabricEfficiency, "fabric-efficiency", 0, "share of the link's TCP payload rate a port moves in all-to-all exchanges (0: measure it first with bursts, as bench-fabric; 1: the full rate)")
	f.DurationVar(&o.Latency, "latency", 15*time.Microsecond, "simulated NIC latency when the delay is not emulated (0: the --link delay)")
	f.Float64Var(&o.Colocation, "colocation", 0, "share of the cores' single-process speed the workers get together (0: measure it first; 1: none lost)")
	f.DurationVar(&o.ColocationDuration, "colocation-duration", time.Second, "length of each co-location measurement")
	f.IntVar(&o.ColocationRounds, "colocation-rounds", calcluster.DefaultColocationRounds, "co-location rounds, each one process and then --nodes processes (their ratios' median counts)")
	f.StringVar(&exempt, "colocation-exempt", strings.Join(calcluster.DefaultColocationExempt, ","), "operator kinds that lose nothing to co-location (node.colocation_exempt: their price is scaled by the co-location, so they run at one-process speed when every worker runs a kernel); none: every kind loses it")
	f.StringVar(&colocationFrom, "colocation-from", "", "comma-separated --json outputs of earlier bench-sim launches on this machine: their co-location rounds are pooled with this launch's, and the profile's co-location is the median of them all (one launch's 18 rounds are noisy)")
	f.StringVar(&fabricFrom, "fabric-from", "", "comma-separated --json outputs of earlier bench-sim launches on this machine: their all-to-all burst rounds on the same --link (and of the same shape) are pooled with this launch's, and the fabric's share is fitted to the median of them all (one launch's 7 rounds are noisy); other links' files are skipped")
	f.Float64Var(&o.NetCPUCost, "net-cpu-cost", 0, "ns of a core the network stack spends per byte at each end (0: measure it first on --link; negative: none)")
	f.DurationVar(&o.NetCPUDuration, "net-cpu-duration", 3*time.Second, "length of the network CPU measurement's long runs (the short ones run a third of it)")
	f.Float64Var(&o.CPUTax, "cpu-tax", 0, "cores the workers take beside the model while a query runs (node.cpu_tax; 0: measure it first, the workers' CPU time less one process's on --tax-queries, per second of their runs; negative: none)")
	f.StringVar(&taxQueries, "tax-queries", strings.Join(calcluster.DefaultTaxQueries, ","), "queries the cpu tax is measured on (none of --query: the tax is not fitted to the runs it prices)")
	f.StringVar(&o.NetCPUFrom, "net-cpu-from", calcluster.NetCPUSoftirq, "which figure of the network CPU measurement prices the network: softirq (the machine's interrupt time while the stream runs) or busy (its whole busy time)")
	f.IntVar(&launches, "launches", 1, "whole measurements to run and pool (each its own seed, profile, co-location and network cost)")
	f.Float64Var(&within, "within", 0.10, "the |error| bound the pooled summary counts cases and launches within (0.10: 10%)")
	f.BoolVar(&o.RescaleCPU, "rescale-cpu", false, "time the CPU reference on rank 0 after every run and scale the simulator's host prices by its drift since calibration (as validate --rescale-cpu)")
	f.BoolVar(&o.RescaleDisk, "rescale-disk", true, "time the disk reference on rank 0 after every run and scale the simulator's disk bandwidth by its throughput over the profile's model (as validate --rescale-disk; a dataset of SF 0.25 or more; --rescale-disk=false: the disk as calibrated)")
	_ = cmd.MarkFlagRequired("data")
	return cmd
}

func newPoolLaunchesCmd(g *globals) *cobra.Command {
	var within float64
	cmd := &cobra.Command{
		Use:   "pool-launches [--within 0.10] FILE...",
		Short: "Pool the launches of earlier 'bench-sim --json' runs into one summary",
		Long: `Reads the rows that 'gostachio --json cluster bench-sim' wrote (one file per
run, any number of launches each) and prints the summary that --launches prints:
the median |error| over every case, how many cases and launches have every
query within --within, each query's median error, and, from 3 launches on, the
engine's own launch-to-launch spread: each case's engine median predicted by
its query's median over the other launches. That spread is what a prediction
blind to a launch's own conditions is up against on this machine.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, files []string) error {
			return tableOrJSON(c, g, func(out io.Writer) (any, error) { return calcluster.PoolLaunches(files, within, out) })
		},
	}
	cmd.Flags().Float64Var(&within, "within", 0.10, "the |error| bound cases and launches are counted within (0.10: 10%)")
	return cmd
}

// writeJSON prints v as indented JSON (the --json output of a command).
// tableOrJSON runs a benchmark that prints a table: on stdout, or under
// --json on stderr with its result as JSON on stdout.
func tableOrJSON(c *cobra.Command, g *globals, bench func(table io.Writer) (any, error)) error {
	table := c.OutOrStdout()
	if g.json {
		table = c.ErrOrStderr()
	}
	res, err := bench(table)
	if err != nil || !g.json {
		return err
	}
	return writeJSON(c.OutOrStdout(), res)
}

// streamInputs are a stream benchmark's --link and --frame, parsed, and
// this binary (its peers run it).
// parseSizes parses a comma-separated list of positive byte sizes (flag
// names the list in errors).
func parseSizes(flag, list string) ([]int64, error) {
	var sizes []int64
	for _, s := range strings.Split(list, ",") {
		n, err := units.ParseBytes(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("cluster: %s %q: %w", flag, s, err)
		}
		if n <= 0 {
			return nil, fmt.Errorf("cluster: %s %q: want a positive size", flag, s)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

func streamInputs(link, frame string) (cluster.Link, int64, string, error) {
	l, err := cluster.ParseLink(link)
	if err != nil {
		return l, 0, "", err
	}
	n, err := units.ParseBytes(frame)
	if err != nil {
		return l, 0, "", err
	}
	exe, err := os.Executable()
	if err != nil {
		return l, 0, "", fmt.Errorf("cluster: %w", err)
	}
	return l, n, exe, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
