package tune

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gonum.org/v1/gonum/optimize"

	"gostachio/experiments"
	"gostachio/internal/stats"
	"gostachio/internal/units"
	"gostachio/scheduler"
)

// Candidate is one configuration: a registered policy and the --set
// string applied on top of its defaults.
type Candidate struct {
	Policy string `json:"policy"`
	Set    string `json:"set"`
}

func (c Candidate) String() string {
	if c.Set == "" {
		return c.Policy
	}
	return c.Policy + " " + c.Set
}

// Evaluator runs candidate c once, as repetition rep, and returns its time
// in seconds. It must give the same time for the same (c, rep) (the
// simulator seeds its jitter from them) and be safe for concurrent use.
// An error stops the search; a candidate the policy refuses never reaches
// it (Search builds every candidate with scheduler.NewPolicy first).
type Evaluator func(ctx context.Context, c Candidate, rep int) (float64, error)

// Options configure Search.
type Options struct {
	// Space is the grid searched; Policy the policy whose knobs it sets,
	// on top of Fixed (a --set string under every candidate, the
	// baseline's too: the scenario, e.g. a memory budget).
	Space  Space
	Policy string
	Fixed  string
	// Baseline is what gains are measured against (overlap with Fixed).
	Baseline Candidate
	// Budget is the most evaluations (simulations) in all, the
	// confirmation's included.
	Budget int
	// Seed seeds the proposals (CMA-ES) and the bootstrap.
	Seed uint64
	// Workers evaluate candidates at once (default 1). Results do not
	// depend on it.
	Workers int
	// Finalists is how many of the best the outcome lists (default 3).
	Finalists int
	// Log, if non-nil, takes a line per phase.
	Log io.Writer
}

// Scored is a candidate with its measured times.
type Scored struct {
	Candidate
	// Runs is how many times it ran; Median its median time (seconds)
	// with the median-rank interval CI at 95%.
	Runs   int                  `json:"runs"`
	Median float64              `json:"median_s"`
	CI     stats.MedianInterval `json:"ci"`
	// Stalled counts the runs that stalled (scheduler.ErrStuck: no task
	// could start within the memory budget), whose time is +Inf; Median
	// and CI bounds that would be +Inf are written as 0.
	Stalled int `json:"stalled,omitempty"`
	times   map[int]float64
	med     float64 // Median, +Inf kept
}

// Round is one round of the race: how many candidates ran to how many
// repetitions each, and how many it kept.
type Round struct {
	Candidates int `json:"candidates"`
	Reps       int `json:"reps"`
	Kept       int `json:"kept"`
}

// Outcome is what Search found and how much it looked at.
type Outcome struct {
	Space    Space     `json:"space"`
	Baseline Candidate `json:"baseline"`
	// Best is the race's winner; Finalists the last round's candidates,
	// best first (Best among them).
	Best      Scored   `json:"best"`
	Finalists []Scored `json:"finalists"`
	// Gain is the speedup of Best over Baseline, median time of Baseline
	// over median time of Best, on ConfirmReps fresh repetitions of each
	// (not those that chose it, which favour the winner), with the 95%
	// percentile-bootstrap interval [GainLo, GainHi]
	// (experiments.MedianSpeedupCI). BestConfirm and BaselineConfirm are
	// those repetitions' medians and intervals.
	// BaselineStalls says the baseline stalled in most of its
	// confirmation runs (no task could start within the memory budget)
	// and Best did not: the gain is unbounded, and Gain, GainLo and GainHi
	// are 0.
	BaselineStalls  bool    `json:"baseline_stalls,omitempty"`
	Gain            float64 `json:"gain"`
	GainLo          float64 `json:"gain_lo"`
	GainHi          float64 `json:"gain_hi"`
	ConfirmReps     int     `json:"confirm_reps"`
	BestConfirm     Scored  `json:"best_confirm"`
	BaselineConfirm Scored  `json:"baseline_confirm"`
	// Candidates is how many distinct points of the grid ran (the
	// baseline not counted unless it is one); Simulations how many
	// evaluations ran in all, of Budget; GridSize the points of the grid
	// and Share = Candidates / GridSize.
	Candidates  int     `json:"candidates"`
	Simulations int     `json:"simulations"`
	Budget      int     `json:"budget"`
	GridSize    float64 `json:"grid_size"`
	Share       float64 `json:"share"`
	// Proposed is how many evaluations the proposal phase (CMA-ES) used;
	// Rounds the race's rounds.
	Proposed int     `json:"proposed"`
	Rounds   []Round `json:"rounds"`
}

// confirmRep numbers the confirmation's repetitions from here, past any
// the search used, so that they are fresh draws of the jitter.
const confirmRep = 1 << 20

// searcher holds the evaluations of one Search: every (candidate, rep)
// runs at most once.
type searcher struct {
	ctx  context.Context
	opts Options
	eval Evaluator

	mu    sync.Mutex
	runs  map[Candidate]map[int]float64
	order []Candidate // points of the grid in the order first run
	sims  int
	err   error
	// inflight holds the runs under way: a second caller of the same
	// (candidate, repetition) waits for it instead of running it again,
	// so concurrent workers run exactly what one worker would.
	inflight map[runKey]chan struct{}
}

// runKey is one repetition of one candidate.
type runKey struct {
	c   Candidate
	rep int
}

// run returns c's time of repetition rep, running it if it has not run.
func (s *searcher) run(c Candidate, rep int) (float64, error) {
	k := runKey{c, rep}
	s.mu.Lock()
	for {
		if s.err != nil {
			s.mu.Unlock()
			return 0, s.err
		}
		if t, ok := s.runs[c][rep]; ok {
			s.mu.Unlock()
			return t, nil
		}
		wait, ok := s.inflight[k]
		if !ok {
			break
		}
		s.mu.Unlock()
		<-wait
		s.mu.Lock()
	}
	if s.inflight == nil {
		s.inflight = map[runKey]chan struct{}{}
	}
	done := make(chan struct{})
	s.inflight[k] = done
	s.sims++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.inflight, k)
		s.mu.Unlock()
		close(done)
	}()
	t, err := s.eval(s.ctx, c, rep)
	if errors.Is(err, scheduler.ErrStuck) {
		// The candidate stalls: it never finishes, the slowest time.
		t, err = math.Inf(1), nil
	}
	if err == nil && !(t > 0) {
		err = fmt.Errorf("tune: %s rep %d: time %v is not positive", c, rep, t)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.err == nil {
			s.err = err
		}
		return 0, err
	}
	if s.runs[c] == nil {
		s.runs[c] = map[int]float64{}
		if c != s.opts.Baseline {
			s.order = append(s.order, c)
		}
	}
	s.runs[c][rep] = t
	return t, nil
}

// runAll brings every candidate of cs to the repetitions reps, with
// Workers at once.
func (s *searcher) runAll(cs []Candidate, reps []int) error {
	type job struct {
		c   Candidate
		rep int
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range max(s.opts.Workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				s.run(j.c, j.rep) // the first error is kept in s.err
			}
		}()
	}
	for _, c := range cs {
		for _, r := range reps {
			jobs <- job{c, r}
		}
	}
	close(jobs)
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// scored summarizes c's repetitions in [lo, hi).
func (s *searcher) scored(c Candidate, lo, hi int) Scored {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := Scored{Candidate: c, times: map[int]float64{}}
	var xs []float64
	for rep, t := range s.runs[c] {
		if rep >= lo && rep < hi {
			xs = append(xs, t)
			sc.times[rep] = t
		}
	}
	sc.Runs = len(xs)
	sc.CI = stats.MedianRankCI(xs, experiments.ABConf)
	sc.Median, sc.med = sc.CI.Median, sc.CI.Median
	for _, x := range xs {
		if math.IsInf(x, 1) {
			sc.Stalled++
		}
	}
	for _, f := range []*float64{&sc.Median, &sc.CI.Median, &sc.CI.Lo, &sc.CI.Hi} {
		if math.IsInf(*f, 0) || math.IsNaN(*f) {
			*f = 0
		}
	}
	return sc
}

func (s *searcher) simulations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sims
}

// candidate is the grid point idx as a candidate of the searched policy.
func (s *searcher) candidate(idx []int) Candidate {
	return Candidate{Policy: s.opts.Policy, Set: joinSets(s.opts.Fixed, s.opts.Space.Set(idx))}
}

// joinSets joins --set strings, skipping empty ones.
func joinSets(sets ...string) string {
	out := ""
	for _, s := range sets {
		if s == "" {
			continue
		}
		if out != "" {
			out += ","
		}
		out += s
	}
	return out
}

// Search looks for the candidate of opts.Space that runs fastest under
// eval, in three phases within opts.Budget evaluations:
//
//  1. propose: CMA-ES (gonum's optimize.CmaEsChol, seeded) over the unit
//     cube that Space.Index maps to the grid, from the policy's defaults,
//     each point run once (repetition 0), minimizing the log of its time,
//     with half of the budget left after the confirmation;
//  2. race: the best points proposed, up to 8, and the policy's defaults,
//     run to 2, 4, 8, ... repetitions; after each
//     round a candidate whose median's 95% interval lies wholly above the
//     leader's is dropped, and then the slower half by median, until one
//     is left or the budget is spent;
//  3. confirm: the winner and the baseline run ConfirmReps fresh
//     repetitions each (5 to 15, a tenth of the budget), and the gain is
//     the ratio of their medians with its bootstrap interval.
//
// See the package comment for why. The outcome depends only on the
// options (not on Workers) and eval.
func Search(ctx context.Context, opts Options, eval Evaluator) (*Outcome, error) {
	if len(opts.Space.Params) == 0 {
		return nil, fmt.Errorf("tune: nothing to search (no parameters)")
	}
	confirm := min(max(opts.Budget/10, 5), 15)
	if opts.Budget < 2*confirm+10 {
		return nil, fmt.Errorf("tune: budget %d: want at least %d evaluations (%d to confirm the winner, 10 to search)", opts.Budget, 2*confirm+10, 2*confirm)
	}
	if opts.Finalists <= 0 {
		opts.Finalists = 3
	}
	for _, c := range []Candidate{opts.Baseline, {Policy: opts.Policy, Set: opts.Fixed}} {
		if _, err := scheduler.NewPolicy(c.Policy, c.Set); err != nil {
			return nil, fmt.Errorf("tune: %w", err)
		}
	}
	s := &searcher{ctx: ctx, opts: opts, eval: eval, runs: map[Candidate]map[int]float64{}}
	searchBudget := opts.Budget - 2*confirm
	logf := func(format string, args ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, format, args...)
		}
	}
	out := &Outcome{Space: opts.Space, Baseline: opts.Baseline, Budget: opts.Budget, ConfirmReps: confirm, GridSize: opts.Space.Size()}

	proposed, err := s.propose(searchBudget / 2)
	if err != nil {
		return nil, err
	}
	out.Proposed = s.simulations()
	logf("tune: proposed %d points of %s in %d evaluations (CMA-ES)\n", len(proposed), gridSize(out.GridSize), out.Proposed)

	// The race, from the 8 best proposed (by their one run) and the
	// policy's defaults, the incumbent.
	// Ties go by name: the order points were first run in depends on the
	// workers' timing.
	slices.SortStableFunc(proposed, func(a, b Scored) int {
		return cmp.Or(cmpFloat(a.med, b.med), strings.Compare(a.Policy+" "+a.Set, b.Policy+" "+b.Set))
	})
	var field []Candidate
	for _, p := range proposed[:min(8, len(proposed))] {
		field = append(field, p.Candidate)
	}
	if def := s.candidate(s.defaultIndex()); !slices.Contains(field, def) {
		field = append(field, def)
	}
	for reps := 2; len(field) > 1; reps *= 2 {
		need := 0
		for _, c := range field {
			need += max(reps-s.scored(c, 0, confirmRep).Runs, 0)
		}
		if s.simulations()+need > searchBudget {
			break
		}
		repIdx := make([]int, reps)
		for i := range repIdx {
			repIdx[i] = i
		}
		if err := s.runAll(field, repIdx); err != nil {
			return nil, err
		}
		kept := s.cut(field)
		out.Rounds = append(out.Rounds, Round{Candidates: len(field), Reps: reps, Kept: len(kept)})
		logf("tune: race round of %d candidates at %d repetitions: %d kept\n", len(field), reps, len(kept))
		field = kept
	}
	for _, c := range s.ranked(field) {
		out.Finalists = append(out.Finalists, s.scored(c, 0, confirmRep))
	}
	if len(out.Finalists) > opts.Finalists {
		out.Finalists = out.Finalists[:opts.Finalists]
	}
	out.Best = out.Finalists[0]

	// Confirmation on fresh repetitions.
	reps := make([]int, confirm)
	for i := range reps {
		reps[i] = confirmRep + i
	}
	if err := s.runAll([]Candidate{out.Best.Candidate, opts.Baseline}, reps); err != nil {
		return nil, err
	}
	out.BestConfirm = s.scored(out.Best.Candidate, confirmRep, confirmRep+confirm)
	out.BaselineConfirm = s.scored(opts.Baseline, confirmRep, confirmRep+confirm)
	rng := rand.New(rand.NewPCG(opts.Seed, 0x7475))
	switch {
	case math.IsInf(out.BaselineConfirm.med, 1) && !math.IsInf(out.BestConfirm.med, 1):
		// The baseline stalls: the gain is unbounded; left 0.
		out.BaselineStalls = true
	case math.IsInf(out.BestConfirm.med, 1):
		return nil, fmt.Errorf("tune: every candidate raced stalls (no task can start within the memory budget): widen the space or the budget")
	default:
		out.Gain, out.GainLo, out.GainHi = experiments.MedianSpeedupCI(values(out.BaselineConfirm), values(out.BestConfirm), experiments.ABConf, rng)
	}
	out.Simulations = s.simulations()
	out.Candidates = len(s.order)
	out.Share = float64(out.Candidates) / out.GridSize
	return out, nil
}

func values(sc Scored) []float64 {
	reps := make([]int, 0, len(sc.times))
	for r := range sc.times {
		reps = append(reps, r)
	}
	slices.Sort(reps)
	xs := make([]float64, len(reps))
	for i, r := range reps {
		xs[i] = sc.times[r]
	}
	return xs
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ranked orders cs by median time of their search repetitions, fastest
// first (ties: the order given).
func (s *searcher) ranked(cs []Candidate) []Candidate {
	out := slices.Clone(cs)
	med := map[Candidate]float64{}
	for _, c := range out {
		med[c] = s.scored(c, 0, confirmRep).med
	}
	slices.SortStableFunc(out, func(a, b Candidate) int {
		return cmp.Or(cmpFloat(med[a], med[b]), strings.Compare(a.Policy+" "+a.Set, b.Policy+" "+b.Set))
	})
	return out
}

// cut is one elimination of the race: the candidates of field whose
// median interval lies wholly above the leader's go, then the slower half
// of the rest by median (at least one stays).
func (s *searcher) cut(field []Candidate) []Candidate {
	ranked := s.ranked(field)
	lead := s.scored(ranked[0], 0, confirmRep).CI
	var kept []Candidate
	for _, c := range ranked {
		if ci := s.scored(c, 0, confirmRep).CI; ci.Lo > lead.Hi {
			continue
		}
		kept = append(kept, c)
	}
	if half := (len(field) + 1) / 2; len(kept) > half {
		kept = kept[:half]
	}
	return kept
}

// propose runs CMA-ES over the grid with at most budget evaluations and
// returns every point it ran, scored by its first run.
func (s *searcher) propose(budget int) ([]Scored, error) {
	sp := s.opts.Space
	start := s.defaultIndex()
	if _, err := s.run(s.candidate(start), 0); err != nil {
		return nil, err
	}
	problem := optimize.Problem{Func: func(x []float64) float64 {
		c := s.candidate(sp.Index(x))
		if _, err := scheduler.NewPolicy(c.Policy, c.Set); err != nil {
			return math.MaxFloat64 // a point the policy refuses: worst
		}
		t, err := s.run(c, 0)
		if err != nil {
			return math.MaxFloat64 // kept in s.err; the budget check stops the run
		}
		return math.Log(t)
	}}
	cma := &optimize.CmaEsChol{InitStepSize: 0.3, Src: rand.NewPCG(s.opts.Seed, 0x636d61)}
	pop := 4 + int(math.Floor(3*math.Log(float64(len(sp.Params)))))
	settings := &optimize.Settings{
		Concurrent: max(s.opts.Workers, 1),
		Converger:  budgetStop{s: s, limit: budget - pop},
		// A bound on calls whatever the cache answers: a distribution
		// collapsed on a few grid points calls without running.
		FuncEvaluations: 20 * budget,
	}
	if _, err := optimize.Minimize(problem, sp.Center(start), settings, cma); err != nil && s.err == nil {
		// Minimize's own errors (a collapsed distribution) end the
		// proposals; what ran stands.
		_ = err
	}
	if s.err != nil {
		return nil, s.err
	}
	var out []Scored
	s.mu.Lock()
	order := slices.Clone(s.order)
	s.mu.Unlock()
	for _, c := range order {
		if c.Policy == s.opts.Policy {
			out = append(out, s.scored(c, 0, 1))
		}
	}
	return out, nil
}

// budgetStop ends CMA-ES once its evaluations reach limit (checked after
// each generation, hence limit = budget − one population), or on an
// evaluation error.
type budgetStop struct {
	s     *searcher
	limit int
}

var _ optimize.Converger = budgetStop{}

func (b budgetStop) Init(int) {}

func (b budgetStop) Converged(*optimize.Location) optimize.Status {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if b.s.err != nil || b.s.sims >= b.limit {
		return optimize.FunctionEvaluationLimit
	}
	return optimize.NotTerminated
}

// defaultIndex is the grid point nearest the searched policy's defaults
// (with Fixed applied): per parameter, the level equal to the default, or
// the nearest by value (bytes and ints; log scale past 0), or the middle
// level.
func (s *searcher) defaultIndex() []int {
	idx := make([]int, len(s.opts.Space.Params))
	pol, err := scheduler.NewPolicy(s.opts.Policy, s.opts.Fixed)
	if err != nil {
		return idx
	}
	cfg := pol.Config()
	for i, p := range s.opts.Space.Params {
		idx[i] = len(p.Levels) / 2
		def, err := cfg.Get(p.Name)
		if err != nil {
			continue
		}
		dv, ok := levelValue(def)
		best := math.Inf(1)
		for j, l := range p.Levels {
			if l == def {
				idx[i] = j
				break
			}
			if lv, lok := levelValue(l); ok && lok {
				if d := math.Abs(math.Log1p(lv) - math.Log1p(dv)); d < best {
					best, idx[i] = d, j
				}
			}
		}
	}
	return idx
}

// levelValue is a level's number: an integer, a byte size, or on/off as
// 1/0.
func levelValue(l string) (float64, bool) {
	switch l {
	case "on":
		return 1, true
	case "off":
		return 0, true
	}
	if n, err := strconv.Atoi(l); err == nil {
		return float64(n), true
	}
	if n, err := units.ParseBytes(l); err == nil {
		return float64(n), true
	}
	return 0, false
}

func gridSize(n float64) string {
	if n < 1e15 {
		return strconv.FormatFloat(n, 'f', 0, 64) + "-point grid"
	}
	return strconv.FormatFloat(n, 'g', 3, 64) + "-point grid"
}
