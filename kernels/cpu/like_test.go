package cpu

import (
	"math/rand/v2"
	"testing"
)

// TestLikeRandom compares Matcher with a regexp translation of the pattern
// over random patterns of '%', '_' and literal runs and random strings.
func TestLikeRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(81, 82))
	for range 3000 {
		pb := make([]byte, r.IntN(9))
		for i := range pb {
			pb[i] = "ab%_"[r.IntN(4)]
		}
		p := string(pb)
		m := CompileLike(p)
		if m.String() != p {
			t.Fatalf("String() = %q, want %q", m.String(), p)
		}
		for range 40 {
			s := make([]byte, r.IntN(10))
			for i := range s {
				s[i] = "abc"[r.IntN(3)]
			}
			if got, want := m.Match(s), refLike(string(s), p); got != want {
				t.Fatalf("%q LIKE %q = %v, want %v", s, p, got, want)
			}
		}
	}
}

// TestLikeTPCH checks the TPC-H patterns on hand-picked values.
func TestLikeTPCH(t *testing.T) {
	cases := []struct {
		p, s string
		want bool
	}{
		{"PROMO%", "PROMO BRUSHED TIN", true},
		{"PROMO%", "PROMO", true},
		{"PROMO%", "STANDARD PROMO", false},
		{"%BRASS", "LARGE BRUSHED BRASS", true},
		{"%BRASS", "BRASS PLATED", false},
		{"%green%", "forest green blush", true},
		{"%green%", "gree n", false},
		{"%special%requests%", "carefully special foxes requests nag", true},
		{"%special%requests%", "requests special", false},
		{"%special%requests%", "specialrequests", true},
		{"MEDIUM POLISHED%", "MEDIUM POLISHED COPPER", true},
		{"%Customer%Complaints%", "xx Customer yy Complaints zz", true},
		{"%Customer%Complaints%", "Complaints Customer", false},
		{"forest%", "forest green", true},
		{"forest%", "Forest green", false},
		{"a_c", "abc", true},
		{"a_c", "abbc", false},
		{"%a_c%", "xxabcxx", true},
		{"%ab%ba%", "aba", false},
		{"%ab%ba%", "abba", true},
		{"", "", true},
		{"", "a", false},
		{"%", "", true},
		{"%%", "anything", true},
		{"_%_", "a", false},
		{"_%_", "ab", true},
		{"a%a", "a", false},
		{"a%a", "aa", true},
	}
	for _, c := range cases {
		if got := CompileLike(c.p).Match([]byte(c.s)); got != c.want {
			t.Errorf("%q LIKE %q = %v, want %v", c.s, c.p, got, c.want)
		}
	}
}

// TestLikeNoAlloc checks that Match does not allocate and that the cache
// returns one matcher per pattern.
func TestLikeNoAlloc(t *testing.T) {
	m := CompileLike("%special%requests%")
	s := []byte("carefully special foxes requests nag")
	w := []byte("a_c")
	mw := CompileLike("%a_c%")
	if n := testing.AllocsPerRun(100, func() { m.Match(s); mw.Match(w) }); n != 0 {
		t.Errorf("Match allocates %v times", n)
	}
	if lkMatcher("x%y") != lkMatcher("x%y") {
		t.Error("cache returned two matchers for one pattern")
	}
}

func BenchmarkLike(bm *testing.B) {
	m := CompileLike("%special%requests%")
	s := []byte("sly final accounts sleep. special accounts haggle among the requests; quickly")
	for bm.Loop() {
		m.Match(s)
	}
}
