package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"gostachio/plots"
	"gostachio/sim"
)

// benchSimOptions are the inputs of `gostachio bench sim`.
type benchSimOptions struct {
	cases    string // nodes:sf,...
	queries  string
	profile  string
	policy   string
	set      string
	net      string
	binary   string
	label    string
	recorded []string
	record   string
	plot     string
	timeout  time.Duration
}

// benchSimRow is one simulated run of the benchmark: a TSV line of a
// recording.
type benchSimRow struct {
	Label    string
	Nodes    int
	GPUs     int
	SF       float64
	Query    string
	WallS    float64 // negative: did not finish within the timeout
	RSSBytes int64
	Tasks    int64
	Makespan int64
	// CPUS is the user and system CPU time of the run (0: not recorded):
	// on a loaded machine, closer than WallS to the wall time alone.
	CPUS float64
}

func (r benchSimRow) tsv() string {
	return fmt.Sprintf("%s\t%d\t%d\t%g\t%s\t%.3f\t%d\t%d\t%d\t%.3f", r.Label, r.Nodes, r.GPUs, r.SF, r.Query, r.WallS, r.RSSBytes, r.Tasks, r.Makespan, r.CPUS)
}

func parseBenchSimRow(line string) (benchSimRow, error) {
	f := strings.Split(line, "\t")
	if len(f) != 9 && len(f) != 10 {
		return benchSimRow{}, fmt.Errorf("want 10 tab-separated fields, got %d", len(f))
	}
	var r benchSimRow
	var err error
	r.Label, r.Query = f[0], f[4]
	ints := []*int{&r.Nodes, &r.GPUs}
	for i, p := range ints {
		if *p, err = strconv.Atoi(f[1+i]); err != nil {
			return r, err
		}
	}
	if r.SF, err = strconv.ParseFloat(f[3], 64); err != nil {
		return r, err
	}
	if r.WallS, err = strconv.ParseFloat(f[5], 64); err != nil {
		return r, err
	}
	for i, p := range []*int64{&r.RSSBytes, &r.Tasks, &r.Makespan} {
		if *p, err = strconv.ParseInt(f[6+i], 10, 64); err != nil {
			return r, err
		}
	}
	if len(f) == 10 {
		if r.CPUS, err = strconv.ParseFloat(f[9], 64); err != nil {
			return r, err
		}
	}
	return r, nil
}

func newBenchSimulatorCmd(g *globals) *cobra.Command {
	var o benchSimOptions
	cmd := &cobra.Command{
		Use:   "sim [--cases 16:1000,32:2000] [--queries q3] [--recorded OLD.tsv]",
		Short: "The simulator's own cost: wall time, peak RSS and time per task of `gostachio sim` as the cluster grows",
		Long: `Runs 'gostachio sim --json' (this binary, or --binary) once per case and
query in a child process and prints nodes x GPUs, SF, query, wall time, peak
resident memory, simulated tasks, wall time per task and the simulated
makespan. --recorded adds the rows of earlier runs (--record writes them; a
recording of an older build shows it beside this one, with the ratio of wall
times); --plot draws wall time and RSS against nodes for every build.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return benchSim(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.cases, "cases", "8:500,16:1000,32:2000,64:4000,128:10000", "comma-separated nodes:sf cases")
	f.StringVar(&o.queries, "queries", "q3", "comma-separated TPC-H queries, or all")
	f.StringVar(&o.profile, "profile", "dgx-a100", "hardware profile")
	f.StringVar(&o.policy, "policy", "overlap", "scheduling policy")
	f.StringVar(&o.set, "set", "", "policy knob overrides")
	f.StringVar(&o.net, "net", "", "passed to sim --net (empty: the binary's default)")
	f.StringVar(&o.binary, "binary", "", "gostachio binary to measure (default: this one)")
	f.StringVar(&o.label, "label", "new", "name of this build in the table and the recording")
	f.StringSliceVar(&o.recorded, "recorded", nil, "TSV recordings of earlier runs (--record) to show beside this one")
	f.StringVar(&o.record, "record", "", "write this run's rows to this TSV file")
	f.StringVar(&o.plot, "plot", "", "draw wall time, wall time per task and peak RSS against nodes: PATH-wall, PATH-per-task and PATH-rss (.svg or .png)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up on one run after this long")
	return cmd
}

func benchSim(ctx context.Context, o benchSimOptions, stdout, stderr io.Writer) error {
	bin := o.binary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return fmt.Errorf("bench sim: %w", err)
		}
	}
	type benchCase struct {
		nodes int
		sf    float64
	}
	var cases []benchCase
	for _, s := range strings.Split(o.cases, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, sf, ok := strings.Cut(s, ":")
		nodes, err1 := strconv.Atoi(n)
		v, err2 := strconv.ParseFloat(sf, 64)
		if !ok || err1 != nil || err2 != nil || nodes < 1 || !(v > 0) {
			return fmt.Errorf("bench sim: --cases %q: want nodes:sf pairs such as 16:1000", s)
		}
		cases = append(cases, benchCase{nodes, v})
	}
	qs := strings.Split(o.queries, ",")
	if o.queries == "all" {
		qs = nil
		for i := 1; i <= 22; i++ {
			qs = append(qs, fmt.Sprintf("q%d", i))
		}
	}
	var rows []benchSimRow
	for _, path := range o.recorded {
		rec, err := readBenchSimRows(path)
		if err != nil {
			return err
		}
		rows = append(rows, rec...)
	}
	prof, err := sim.LoadProfileLog(o.profile, io.Discard)
	if err != nil {
		return fmt.Errorf("bench sim: %w", err)
	}
	var mine []benchSimRow
	for _, bc := range cases {
		for _, q := range qs {
			q = strings.TrimSpace(q)
			args := []string{"--json", "sim", "--profile", o.profile, "--nodes", strconv.Itoa(bc.nodes),
				"--sf", strconv.FormatFloat(bc.sf, 'g', -1, 64), "--query", q, "--policy", o.policy}
			if o.set != "" {
				args = append(args, "--set", o.set)
			}
			if o.net != "" {
				args = append(args, "--net", o.net)
			}
			r, err := benchSimRun(ctx, bin, args, o.timeout)
			if err != nil {
				return fmt.Errorf("bench sim: %s on %d nodes at SF%g: %w", q, bc.nodes, bc.sf, err)
			}
			r.Label, r.Nodes, r.GPUs, r.SF, r.Query = o.label, bc.nodes, prof.Node.GPUs, bc.sf, q
			fmt.Fprintf(stderr, "bench sim: %s\n", r.tsv())
			mine = append(mine, r)
		}
	}
	if o.record != "" {
		var b strings.Builder
		b.WriteString("# label\tnodes\tgpus\tsf\tquery\twall-s\trss-bytes\ttasks\tmakespan-ns\tcpu-s\n")
		for _, r := range mine {
			b.WriteString(r.tsv() + "\n")
		}
		if err := os.WriteFile(o.record, []byte(b.String()), 0o644); err != nil {
			return fmt.Errorf("bench sim: %w", err)
		}
	}
	rows = append(rows, mine...)
	writeBenchSimTable(stdout, rows)
	if o.plot != "" {
		if err := plotBenchSim(rows, o.plot); err != nil {
			return fmt.Errorf("bench sim: %w", err)
		}
	}
	return nil
}

func readBenchSimRows(path string) ([]benchSimRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench sim: %w", err)
	}
	defer f.Close()
	var rows []benchSimRow
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if t := sc.Text(); t != "" && !strings.HasPrefix(t, "#") {
			r, err := parseBenchSimRow(t)
			if err != nil {
				return nil, fmt.Errorf("bench sim: %s:%d: %w", path, line, err)
			}
			rows = append(rows, r)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench sim: %s: %w", path, err)
	}
	return rows, nil
}

// benchSimRun runs one `sim --json` child and measures it.
func benchSimRun(ctx context.Context, bin string, args []string, timeout time.Duration) (benchSimRow, error) {
	var r benchSimRow
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	r.WallS = time.Since(t0).Seconds()
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.RSSBytes = ru.Maxrss << 10
			r.CPUS = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		}
	}
	if cctx.Err() != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		r.WallS = -timeout.Seconds()
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	var rep struct {
		Nodes      int   `json:"nodes"`
		MakespanNs int64 `json:"makespan_ns"`
		Tasks      int64 `json:"tasks"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return r, fmt.Errorf("report: %w", err)
	}
	r.Tasks, r.Makespan = rep.Tasks, rep.MakespanNs
	return r, nil
}

func writeBenchSimTable(w io.Writer, rows []benchSimRow) {
	if len(rows) == 0 {
		return
	}
	// The first build in the input (a recording, if any) is the base.
	labels := []string{}
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.Label] {
			seen[r.Label] = true
			labels = append(labels, r.Label)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Query != b.Query {
			return a.Query < b.Query
		}
		return a.Nodes < b.Nodes
	})
	// The first label's wall time per (nodes, sf, query): the base of the ratios.
	type key struct {
		nodes int
		sf    float64
		q     string
	}
	base := map[key]float64{}
	baseCPU := map[key]float64{}
	baseMs := map[key]int64{}
	for _, r := range rows {
		if r.Label == labels[0] && r.WallS > 0 {
			base[key{r.Nodes, r.SF, r.Query}] = r.WallS
			baseCPU[key{r.Nodes, r.SF, r.Query}] = r.CPUS
			baseMs[key{r.Nodes, r.SF, r.Query}] = r.Makespan
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "build\tnodes x GPUs\tSF\tquery\twall\tCPU\tpeak RSS\ttasks\twall/task\tmakespan\tspeedup vs %s\tmakespan vs %s\t\n", labels[0], labels[0])
	for _, r := range rows {
		wall, per, ratio := "", "", ""
		if r.WallS < 0 {
			wall = fmt.Sprintf("> %.0f s", -r.WallS)
		} else {
			wall = fmt.Sprintf("%.2f s", r.WallS)
			if r.Tasks > 0 {
				per = fmt.Sprintf("%.2f µs", 1e6*r.WallS/float64(r.Tasks))
			}
			// On a loaded machine CPU times compare better than wall times.
			k := key{r.Nodes, r.SF, r.Query}
			if b, ok := baseCPU[k]; ok && b > 0 && r.CPUS > 0 && r.Label != labels[0] {
				ratio = fmt.Sprintf("%.2fx CPU", b/r.CPUS)
			} else if b, ok := base[k]; ok && r.Label != labels[0] {
				ratio = fmt.Sprintf("%.2fx wall", b/r.WallS)
			}
		}
		ms, dms, cpu := "", "", ""
		if r.Makespan > 0 {
			ms = fmt.Sprintf("%.3f ms", float64(r.Makespan)/1e6)
			if b, ok := baseMs[key{r.Nodes, r.SF, r.Query}]; ok && b > 0 && r.Label != labels[0] {
				dms = fmt.Sprintf("%+.2f%%", 100*float64(r.Makespan-b)/float64(b))
			}
		}
		if r.CPUS > 0 {
			cpu = fmt.Sprintf("%.2f s", r.CPUS)
		}
		tasks := ""
		if r.Tasks > 0 {
			tasks = strconv.FormatInt(r.Tasks, 10)
		}
		fmt.Fprintf(tw, "%s\t%d x %d\t%g\t%s\t%s\t%s\t%.0f MB\t%s\t%s\t%s\t%s\t%s\t\n", r.Label, r.Nodes, r.GPUs, r.SF, r.Query,
			wall, cpu, float64(r.RSSBytes)/1e6, tasks, per, ms, ratio, dms)
	}
	tw.Flush()
}

// plotBenchSim draws wall time, wall time per simulated task and peak RSS
// against nodes, one line per build and query, log-log: PATH-wall.EXT,
// PATH-per-task.EXT and PATH-rss.EXT.
func plotBenchSim(rows []benchSimRow, path string) error {
	type panel struct {
		suffix, title, y string
		val              func(r benchSimRow) float64
	}
	panels := []panel{
		{"-wall", "simulator wall time", "s", func(r benchSimRow) float64 { return r.WallS }},
		{"-per-task", "simulator wall time per simulated task", "µs per task", func(r benchSimRow) float64 { return 1e6 * r.WallS / float64(r.Tasks) }},
		{"-rss", "simulator peak resident memory", "MB", func(r benchSimRow) float64 { return float64(r.RSSBytes) / 1e6 }},
	}
	type series struct{ label, q string }
	var order []series
	byS := map[series][]benchSimRow{}
	for _, r := range rows {
		if r.WallS <= 0 || r.Tasks <= 0 {
			continue
		}
		k := series{r.Label, r.Query}
		if _, ok := byS[k]; !ok {
			order = append(order, k)
		}
		byS[k] = append(byS[k], r)
	}
	palette := []color.RGBA{{200, 60, 40, 255}, {30, 100, 200, 255}, {40, 150, 60, 255}, {150, 80, 170, 255}, {220, 150, 20, 255}}
	ext := pathExt(path)
	for _, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "nodes (8 GPUs each; SF per node about constant)"
		p.Y.Label.Text = pn.y
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
		for i, k := range order {
			var xy plotter.XYs
			for _, r := range byS[k] {
				xy = append(xy, plotter.XY{X: float64(r.Nodes), Y: pn.val(r)})
			}
			sort.Slice(xy, func(a, b int) bool { return xy[a].X < xy[b].X })
			l, s, err := plotter.NewLinePoints(xy)
			if err != nil {
				return err
			}
			l.Color, s.Color = palette[i%len(palette)], palette[i%len(palette)]
			p.Add(l, s)
			p.Legend.Add(k.label+" "+k.q, l, s)
		}
		p.Legend.Top, p.Legend.Left = true, true
		if err := plots.SaveSize(p, strings.TrimSuffix(path, ext)+pn.suffix+ext, 6*vg.Inch, 4*vg.Inch); err != nil {
			return err
		}
	}
	return nil
}

func pathExt(p string) string {
	if i := strings.LastIndexByte(p, '.'); i >= 0 && !strings.Contains(p[i:], "/") {
		return p[i:]
	}
	return ""
}
