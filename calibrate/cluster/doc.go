// Package cluster calibrates the simulator against the emulated cluster
// of package engine/cluster: `gostachio cluster bench-sim` and its
// measurements of what sharing one machine takes from the workers (the
// co-location, the TCP stack's CPU, the workers' CPU beside the model,
// the fabric's share of the link in all-to-all bursts), the profile it
// derives from them, the pooling of launches (`cluster pool-launches`,
// bench-fabric), and the CPU and disk references the workers' rank 0
// times between queries (References, an engine/cluster BetweenQueries
// hook).
//
// It imports engine/cluster (as ecluster), sim and costmodel; the engine
// imports none of them.
package cluster
