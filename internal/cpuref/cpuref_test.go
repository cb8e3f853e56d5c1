package cpuref

import "testing"

// TestReferenceAllocatesNothing: the reference's time follows the CPU's
// speed, not the heap's state, because a run allocates nothing.
func TestReferenceAllocatesNothing(t *testing.T) {
	referenceOnce() // builds the data once
	if a := testing.AllocsPerRun(3, func() { referenceOnce() }); a != 0 {
		t.Errorf("a reference run allocates %v times, want 0", a)
	}
	if ns := Ns(); ns <= 0 {
		t.Errorf("Ns() = %d, want a positive time", ns)
	}
}
