package policies

import "gostachio/scheduler"

// overlapDefaults is the overlap policy's knobs, the base the policies
// here change.
func overlapDefaults() scheduler.Config {
	for _, p := range scheduler.Policies() {
		if p.Name == "overlap" {
			return p.Defaults
		}
	}
	return scheduler.Config{Depth: 8}
}
