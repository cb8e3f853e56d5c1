// Package policies holds scheduling policies beyond the knobs' presets,
// one file each: a file declares its hooks (embedding
// scheduler.KnobHooks and overriding the decisions it makes) and registers
// them by name from its init, so `--policy NAME`, experiment specs, `ab`
// and `validate` reach it on both backends. A binary that runs policies by
// name imports this package for its side effect. docs/policies.md is the
// guide to writing one; testdata/ holds each policy's scenario.
package policies
