package sim

import (
	"fmt"
	"math"
	"sort"
)

// FabricPoint is one measured point of a fabric's efficiency by transfer
// size: the share of the NIC bandwidth at which transfers of PairBytes
// between two nodes move when every node sends so much to every other at
// once (an all-to-all burst).
type FabricPoint struct {
	PairBytes  int64   `yaml:"pair_bytes"`
	Efficiency float64 `yaml:"efficiency"`
}

// fabricCurve is a validated, sorted efficiency curve.
type fabricCurve []FabricPoint

// validateFabric checks the points: positive sizes, all distinct,
// efficiencies in (0, 1].
func validateFabric(pts []FabricPoint) error {
	seen := map[int64]bool{}
	for i, p := range pts {
		if p.PairBytes <= 0 {
			return fmt.Errorf("nic_efficiency[%d]: pair_bytes %d must be positive", i, p.PairBytes)
		}
		if !(p.Efficiency > 0 && p.Efficiency <= 1) {
			return fmt.Errorf("nic_efficiency[%d]: efficiency %g outside (0, 1]", i, p.Efficiency)
		}
		if seen[p.PairBytes] {
			return fmt.Errorf("nic_efficiency[%d]: pair_bytes %d given twice", i, p.PairBytes)
		}
		seen[p.PairBytes] = true
	}
	return nil
}

func newFabricCurve(pts []FabricPoint) fabricCurve {
	c := append(fabricCurve(nil), pts...)
	sort.Slice(c, func(i, j int) bool { return c[i].PairBytes < c[j].PairBytes })
	return c
}

// at is the efficiency of a transfer of b bytes: linear in log2(b)
// between the points, the end points' beyond them; 1 with no points.
func (c fabricCurve) at(b float64) float64 {
	switch {
	case len(c) == 0:
		return 1
	case b <= float64(c[0].PairBytes):
		return c[0].Efficiency
	case b >= float64(c[len(c)-1].PairBytes):
		return c[len(c)-1].Efficiency
	}
	i := sort.Search(len(c), func(i int) bool { return float64(c[i].PairBytes) >= b })
	lo, hi := c[i-1], c[i]
	x := (math.Log2(b) - math.Log2(float64(lo.PairBytes))) / (math.Log2(float64(hi.PairBytes)) - math.Log2(float64(lo.PairBytes)))
	return lo.Efficiency + x*(hi.Efficiency-lo.Efficiency)
}
