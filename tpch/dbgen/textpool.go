package dbgen

import "sync"

// textPoolSize is dbgen's TEXT_POOL_SIZE. Comments are slices of this pool at
// random offsets, so its size is part of the value streams: it must not
// change with the scale factor.
const textPoolSize = 300 * 1024 * 1024

const textPoolStream = 5

var (
	shared     *sharedData
	sharedOnce sync.Once
)

// sharedData is what every generator reads and nobody writes after init.
type sharedData struct {
	d    *dists
	pool []byte
}

func getShared() *sharedData {
	sharedOnce.Do(func() {
		d := loadDists()
		shared = &sharedData{d: d, pool: buildTextPool(d)}
	})
	return shared
}

// buildTextPool fills the pool with sentences of dbgen's grammar drawn from
// stream 5 (init_text_pool), separated by single spaces.
func buildTextPool(d *dists) []byte {
	s := newStreams(tNone, 0)
	pool := make([]byte, 0, textPoolSize)
	sentence := make([]byte, 0, 256)
	for len(pool) < textPoolSize {
		sentence = s.sentence(d, sentence[:0], textPoolStream)
		needed := textPoolSize - len(pool)
		if needed >= len(sentence)+1 {
			pool = append(pool, sentence...)
			pool = append(pool, ' ')
		} else {
			pool = append(pool, sentence[:needed]...)
		}
	}
	return pool
}

// sentence appends one sentence (txt_sentence) to b.
func (s *streams) sentence(d *dists, b []byte, sd int) []byte {
	syntax := d.grammar.text[s.pick(d.grammar, sd)]
	for i := 0; i < len(syntax); i++ {
		c := syntax[i]
		if c == ' ' {
			continue
		}
		switch c {
		case 'V':
			b = s.phrase(d, b, d.vp, sd)
		case 'N':
			b = s.phrase(d, b, d.np, sd)
		case 'P':
			b = append(b, d.prepositions.text[s.pick(d.prepositions, sd)]...)
			b = append(b, " the "...)
			b = s.phrase(d, b, d.np, sd)
		case 'T':
			b = b[:len(b)-1] // drop the space before the terminator
			b = append(b, d.terminators.text[s.pick(d.terminators, sd)]...)
		}
		// A punctuation character may follow the token letter.
		if i+1 < len(syntax) && syntax[i+1] != ' ' {
			i++
			b = append(b, syntax[i])
		}
	}
	return b
}

// phrase appends a noun or verb phrase (txt_np / txt_vp) following the
// syntax chosen from dist (np or vp), each word followed by a space.
func (s *streams) phrase(d *dists, b []byte, dist *distribution, sd int) []byte {
	syntax := dist.text[s.pick(dist, sd)]
	for i := 0; i < len(syntax); i++ {
		c := syntax[i]
		if c == ' ' {
			continue
		}
		var src *distribution
		switch c {
		case 'A':
			src = d.articles
		case 'J':
			src = d.adjectives
		case 'D':
			src = d.adverbs
		case 'N':
			src = d.nouns
		case 'V':
			src = d.verbs
		case 'X':
			src = d.auxillaries
		}
		b = append(b, src.text[s.pick(src, sd)]...)
		if i+1 < len(syntax) && syntax[i+1] != ' ' {
			i++
			b = append(b, syntax[i])
		}
		b = append(b, ' ')
	}
	return b
}
