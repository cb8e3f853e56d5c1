package plan

import "fmt"

// Validate checks that a plan is well formed: every pipeline has ops whose
// last is a breaker; scan pipelines start with OpScan over existing columns
// of an existing table and hold no other breaker (an inputs pipeline may
// chain local breakers such as agg-final then top-k, since its one unit per
// worker holds all of its input); After, Inputs and probe Build indices name
// earlier pipelines; a probe's build pipeline ends in a hash build and is
// listed in After or Inputs.
func (p *Plan) Validate() error {
	for i := range p.Tables {
		if err := p.Tables[i].Validate(); err != nil {
			return err
		}
	}
	for i := range p.Pipelines {
		if err := p.validatePipeline(i); err != nil {
			return fmt.Errorf("plan %s: pipeline %d (%s): %w", p.Name, i, p.Pipelines[i].Name, err)
		}
	}
	return nil
}

func (p *Plan) validatePipeline(i int) error {
	pl := &p.Pipelines[i]
	if len(pl.Ops) == 0 {
		return fmt.Errorf("no operators")
	}
	earlier := func(j int) bool { return j >= 0 && j < i }
	waits := func(j int) bool {
		for _, a := range pl.After {
			if a == j {
				return true
			}
		}
		for _, a := range pl.Source.Inputs {
			if a == j {
				return true
			}
		}
		return false
	}
	for _, a := range pl.After {
		if !earlier(a) {
			return fmt.Errorf("after names pipeline %d, not an earlier one", a)
		}
	}
	switch pl.Source.Kind {
	case SourceScan:
		if pl.Source.Table < 0 || pl.Source.Table >= len(p.Tables) {
			return fmt.Errorf("scans table %d of %d", pl.Source.Table, len(p.Tables))
		}
		if pl.Ops[0].Kind != OpScan {
			return fmt.Errorf("scan pipeline starts with %s, want scan", pl.Ops[0].Kind)
		}
		t := &p.Tables[pl.Source.Table]
		if len(pl.Ops[0].Out) == 0 {
			return fmt.Errorf("scan of %s projects no column", t.Name)
		}
		if _, err := t.ColumnIndexes(pl.Ops[0].Out); err != nil {
			return err
		}
	case SourceInputs:
		if len(pl.Source.Inputs) == 0 {
			return fmt.Errorf("inputs source names no pipeline")
		}
		for _, a := range pl.Source.Inputs {
			if !earlier(a) {
				return fmt.Errorf("inputs name pipeline %d, not an earlier one", a)
			}
		}
	default:
		return fmt.Errorf("unknown source kind %d", pl.Source.Kind)
	}
	last := len(pl.Ops) - 1
	for j, op := range pl.Ops {
		if op.Kind == OpInvalid || int(op.Kind) >= NumOpKinds {
			return fmt.Errorf("op %d has invalid kind %d", j, op.Kind)
		}
		if op.Kind == OpScan && (j != 0 || pl.Source.Kind != SourceScan) {
			return fmt.Errorf("op %d: scan only as the first op of a scan pipeline", j)
		}
		if op.Selectivity < 0 || op.OutWidth < 0 || op.Groups < 0 || op.Limit < 0 {
			return fmt.Errorf("op %d (%s): negative estimate", j, op.Kind)
		}
		if !(op.Distinct >= 0 && op.Distinct <= 1) {
			return fmt.Errorf("op %d (%s): distinct keys per row %g outside [0, 1]", j, op.Kind, op.Distinct)
		}
		if op.Kind.IsBreaker() && j != last {
			if pl.Source.Kind == SourceScan || op.Kind.IsExchange() || op.Kind == OpResult || op.Kind == OpHashBuild {
				return fmt.Errorf("op %d (%s) is a breaker before the last op", j, op.Kind)
			}
		}
		if op.Kind == OpHashProbe {
			if !earlier(op.Build) || p.Pipelines[op.Build].Sink().Kind != OpHashBuild {
				return fmt.Errorf("op %d probes pipeline %d, which is not an earlier hash build", j, op.Build)
			}
			if !waits(op.Build) {
				return fmt.Errorf("op %d probes pipeline %d without waiting for it (add it to After)", j, op.Build)
			}
		}
	}
	if !pl.Ops[last].Kind.IsBreaker() {
		return fmt.Errorf("last op is %s, not a pipeline breaker", pl.Ops[last].Kind)
	}
	return nil
}
