// Package tune searches a policy's parameters for the configuration that
// runs a query fastest in the simulator, within a budget of simulations,
// and says how sure it is: the gain over overlap with a confidence
// interval, and how much of the space it looked at (`gostachio tune`).
//
// # What is searched
//
// The parameters come from the policy's knob table (scheduler.Knobs):
// every knob has a type (int, bytes, bool), and NewSpace turns the knobs
// searched into a grid of ordinal levels (bytes by powers of two, ints
// over a range, off/on), with defaults for the knobs that decide how much
// is in flight and how the work is cut (DefaultKnobs) and --range for the
// rest. A parameter a policy adds to the table is searched the same way,
// by name. A candidate is a --set string on top of the policy's defaults
// and of the scenario's fixed knobs (a memory budget), built with
// scheduler.NewPolicy: a point the policy refuses is never run.
//
// # The optimizer, and why
//
// Two properties of the objective decide it. It is noisy: a simulation
// with jittered latencies (sim's seeded jitter, ±5% by default) is one
// draw of a run time, and on the shipped profiles the knobs' effects are
// often of the size of that noise (an ablation on dgx-a100 finds every
// single knob within 1%), so one run per candidate would crown the luckiest
// draw. And it is cheap but not free (0.2–1 s per simulation of a 16-node
// query here), so a budget of a hundred or two simulations must be spent
// where it tells candidates apart. Search therefore combines:
//
//   - CMA-ES (gonum's optimize.CmaEsChol) to propose candidates, with half
//     of the search budget, one run each. It needs no gradient, is
//     invariant to monotone transforms of the objective (it uses only the
//     ranks of a generation, so it minimizes log time as well as time), and
//     adapts a full covariance, so it follows interactions such as unit
//     size against depth (more, smaller units need more in flight). It
//     works in the unit cube, which Space.Index cuts into equal shares per
//     level, starting at the policy's defaults with step 0.3. Grid search
//     would spend the whole budget on a few axes (the default space has
//     25,920 points); random or Latin-hypercube sampling wastes the later
//     samples that CMA-ES concentrates around what worked.
//   - Successive halving to race the proposals under noise: the 8 best by
//     their one run, and the policy's defaults (the incumbent), run to 2,
//     4, 8, ... repetitions; after each round a candidate whose median's
//     95% median-rank interval (internal/stats.MedianRankCI, as `ab`
//     reports) lies wholly above the leader's goes, then the slower half
//     by median. Repetitions go to the candidates still in contention,
//     which is what a fixed budget under noise calls for (Jamieson &
//     Talwalkar's non-stochastic best-arm identification; the racing of
//     irace and F-Race).
//   - A confirmation on fresh repetitions (5 to 15 of each side, a tenth
//     of the budget): the winner of a race is biased towards its lucky
//     draws, so the predicted gain is measured on new seeds, as `ab`
//     measures it: the ratio of medians with its percentile-bootstrap
//     interval (experiments.MedianSpeedupCI).
//
// Every evaluation is a function of (candidate, repetition) alone, its
// jitter seeded from them: the outcome depends on the seed and the budget,
// not on the order or parallelism of the runs.
//
// # Validation
//
// With --validate, Tune writes an engine experiment spec comparing overlap
// with the best finalists and runs it with experiments.RunSpec
// (configurations interleaved and shuffled per repetition, after a
// warm-up), then reports experiments.AB's intervals: the engine's verdict
// on the simulator's prediction.
package tune
