package cpu

import (
	"testing"

	"gostachio/plan"
)

// strBatch is keys k (all 1) and s (words).
func strBatch(words ...string) *Batch {
	s := Vec{Type: TString, Off: []int32{0}}
	k := Vec{Type: TInt64}
	for _, w := range words {
		s.Str = append(s.Str, w...)
		s.Off = append(s.Off, int32(len(s.Str)))
		k.I64 = append(k.I64, 1)
	}
	return &Batch{Names: []string{"k", "s"}, Rows: len(words), Cols: []Vec{k, s}}
}

// A packed aggregate whose second key is a string packs no rows for an
// empty batch, and widens its packing when a batch brings a string of
// 8-15 bytes; neither may index past the (empty) words of no rows.
func TestAggPacksEmptyBatches(t *testing.T) {
	a := NewAggregator([]string{"k", "s"}, plan.Aggs{plan.Count("n")}, false)
	if err := a.Update(strBatch(), []*Vec{nil}); err != nil {
		t.Fatal(err)
	}
	if err := a.Update(strBatch("ten bytes!", "eleven byte", "ten bytes!"), []*Vec{nil}); err != nil {
		t.Fatal(err)
	}
	res, err := a.Result(true)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i := range res.Rows {
		got[res.Cols[1].Format(i)] = res.Cols[2].Format(i)
	}
	if res.Rows != 2 || got["ten bytes!"] != "2" || got["eleven byte"] != "1" {
		t.Errorf("groups %v (%d rows), want ten bytes! 2, eleven byte 1", got, res.Rows)
	}
}
