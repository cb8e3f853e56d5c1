package main

import "gostachio/sim"

// localProfileHelp is the --profile default's description where a
// command's profile defaults to localProfilePath.
const localProfileHelp = "(default: the shipped CPU-engine profile calibrated on a machine like this one, else sim/profiles/devbox-calibrated.yaml)"

// localProfilePath is the shipped CPU-engine profile calibrated on a
// machine like this one (sim.LocalProfile), else devbox-calibrated, as a
// path from the repository root.
func localProfilePath() string {
	return "sim/profiles/" + sim.LocalProfile("devbox-calibrated") + ".yaml"
}
