package dbgen

import "testing"

// TestTextPoolCheckpoints checks the 300 MiB text pool against independent
// reference points: for sentence k of a set of byte positions p = k<<18, the
// offset where the sentence covering p starts and the state of random stream
// 5 at that sentence, as published with DuckDB's TPC-H dbgen
// (extension/tpch/dbgen/include/dbgen/text_pool_checkpoints.h). Every
// comment column of TPC-H is a slice of this pool.
func TestTextPoolCheckpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the whole 300 MiB pool")
	}
	want := map[int64][2]int64{
		1:    {262123, 889213480},
		100:  {26214399, 1648135726},
		300:  {78643151, 1014458716},
		500:  {131071994, 438559907},
		620:  {162529248, 869479262},
		1199: {314310595, 111671767},
		1200: {314572735, 1571921449},
	}
	d := loadDists()
	s := newStreams(tNone, 0)
	var pos int64
	sentence := make([]byte, 0, 256)
	found := 0
	for pos <= textPoolSize {
		start, seed := pos, s.value[textPoolStream]
		sentence = s.sentence(d, sentence[:0], textPoolStream)
		pos += int64(len(sentence)) + 1
		for k, w := range want {
			if p := k << 18; start <= p && p < pos {
				found++
				if start != w[0] || seed != w[1] {
					t.Errorf("checkpoint %d: sentence starts at %d with seed %d, reference %d with seed %d", k, start, seed, w[0], w[1])
				}
			}
		}
	}
	if found != len(want) {
		t.Fatalf("reached %d of %d checkpoints", found, len(want))
	}
	if pool := getShared().pool; len(pool) != textPoolSize {
		t.Fatalf("pool has %d bytes, want %d", len(pool), textPoolSize)
	}
}
