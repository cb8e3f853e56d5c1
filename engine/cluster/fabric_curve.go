package cluster

import (
	"context"
	"fmt"
	"io"
	"slices"

	"gostachio/sim"
)

// The fabric's efficiency by the size of an exchange. One efficiency per
// launch, fitted to bursts of DefaultBurstFrames frames per pair
// (FitFabricEfficiency), prices every exchange alike; but where a port's
// buffer is smaller than what the flows converging on it send at once,
// TCP loses the bursts' packets and waits out retransmission timeouts, so
// a short exchange moves at a small share of the link and a long one at
// most of it (README, issue 9: at 100 Mbit/s behind the default 250 KB
// port buffer, 4 workers' bursts of 128 KiB per pair moved at 1.1 times
// the payload rate, of 256 KiB at 0.24–0.60, of 384 KiB at 0.30, of 5.25
// MiB at 0.85). MeasureFabricCurve measures bursts of several sizes, fits
// each (sim.FabricPoint), and the simulator prices each pipeline's sends
// from one node to another at the efficiency of their total
// (sim.Profile.NICEfficiency).

// DefaultFabricSizes are bench-sim's --fabric-sizes: bytes per pair of
// workers from a sixth to twice what a query moves (DefaultBurstFrames:
// 7 x 384 KiB), in frames of at most 384 KiB.
var DefaultFabricSizes = []int64{128 << 10, 256 << 10, 384 << 10, 768 << 10, 1536 << 10, 2688 << 10, 5376 << 10}

// fabricCurveFrame is the largest frame of a curve's bursts: the engine's
// exchange frames (README: the byte-weighted median frame of q3, q5, q9
// and q18 at SF1 on 4 workers).
const fabricCurveFrame = 384 << 10

// FabricCurvePoint is one size of a fabric curve: the bursts of PairBytes
// per pair of workers, and the efficiency fitted to them.
type FabricCurvePoint struct {
	PairBytes int64       `json:"pair_bytes"`
	Burst     BurstResult `json:"burst"`
	Fit       FabricFit   `json:"fit"`
	// PayloadShare is each port's rate over the bursts against the
	// link's TCP payload rate.
	PayloadShare float64 `json:"payload_share"`
}

// MeasureFabricCurve measures all-to-all bursts of each of sizes bytes per
// pair of workers (split by PairFrames into frames of at most 384 KiB; o's
// Frames and FrameBytes are ignored) and fits each against prof, a
// profile at the link's full payload rate (FitFabricEfficiency). known,
// when not nil, is a burst already measured on the same cluster: a size it
// matches is not measured again. Each point is printed on w.
func MeasureFabricCurve(ctx context.Context, o BurstOptions, prof *sim.Profile, sizes []int64, known *BurstResult, w io.Writer) ([]FabricCurvePoint, error) {
	if len(sizes) == 0 {
		return nil, fmt.Errorf("cluster: fabric curve: no burst sizes")
	}
	var out []FabricCurvePoint
	for _, s := range sizes {
		if s <= 0 {
			return nil, fmt.Errorf("cluster: fabric curve: burst size %d bytes must be positive", s)
		}
		p := o
		p.Frames, p.FrameBytes = PairFrames(s, fabricCurveFrame)
		var b BurstResult
		if known != nil && known.Frames == p.Frames && known.FrameBytes == p.FrameBytes && known.Nodes == p.Nodes {
			b = *known
		} else {
			var err error
			if b, err = MeasureBurst(ctx, p); err != nil {
				return nil, err
			}
		}
		fit, err := FitFabricEfficiency(ctx, prof, b)
		if err != nil {
			return nil, err
		}
		pt := FabricCurvePoint{PairBytes: int64(b.Frames) * benchBatchBytes(b.FrameBytes), Burst: b, Fit: fit,
			PayloadShare: b.Rate / (float64(o.Link.Rate) / 8 * TCPPayloadShare)}
		if slices.ContainsFunc(out, func(q FabricCurvePoint) bool { return q.PairBytes == pt.PairBytes }) {
			return nil, fmt.Errorf("cluster: fabric curve: %d bytes per pair given twice", pt.PairBytes)
		}
		fmt.Fprintf(w, "fabric curve: %d x %d KiB per pair took %.4g s (median of %d rounds), %.3f of the payload rate; %s\n",
			b.Frames, b.FrameBytes>>10, b.Median, len(b.Seconds), pt.PayloadShare, fit.describe(prof.NIC.Bandwidth))
		out = append(out, pt)
	}
	return out, nil
}

// fabricCurveYAML is the profile's nic_efficiency block for curve, on
// link, each point with its measurement in a comment.
func fabricCurveYAML(curve []FabricCurvePoint, link Link) string {
	s := fmt.Sprintf("nic_efficiency:  # the share of nic.bandwidth a pipeline's sends from one worker to another move at, by their total: all-to-all bursts of that many bytes per pair of workers on --link %s, fitted (bench-sim --fabric-sizes)\n", link)
	for _, p := range curve {
		s += fmt.Sprintf("  - {pair_bytes: %d, efficiency: %.4g}  # %d x %d KiB per pair: %.4g s, %.3f of the payload rate\n",
			p.PairBytes, p.Fit.Efficiency, p.Burst.Frames, p.Burst.FrameBytes>>10, p.Burst.Median, p.PayloadShare)
	}
	return s
}

// knownBurst is f's burst, if any (MeasureFabricCurve's known).
func knownBurst(f *FabricBenchResult) *BurstResult {
	if f == nil {
		return nil
	}
	return &f.Burst
}
