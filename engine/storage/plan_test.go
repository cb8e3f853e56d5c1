package storage

import (
	"reflect"
	"testing"
)

func TestAlignMath(t *testing.T) {
	for _, tc := range []struct{ x, a, down, up int64 }{
		{0, 4096, 0, 0}, {1, 4096, 0, 4096}, {4095, 4096, 0, 4096}, {4096, 4096, 4096, 4096},
		{4097, 4096, 4096, 8192}, {1000, 512, 512, 1024}, {1 << 40, 4096, 1 << 40, 1 << 40},
	} {
		if d, u := alignDown(tc.x, tc.a), alignUp(tc.x, tc.a); d != tc.down || u != tc.up {
			t.Errorf("align(%d, %d) = %d,%d want %d,%d", tc.x, tc.a, d, u, tc.down, tc.up)
		}
	}
}

func TestMakePlan(t *testing.T) {
	const K, M = 1024, 1 << 20
	on := CombineOptions{Combine: true, MaxGap: 8 * K, MaxRequest: 1 * M}
	off := CombineOptions{Combine: false, MaxGap: 8 * K, MaxRequest: 1 * M}
	s := func(key int, o, n int64) span { return span{key: key, align: 4096, off: o, n: n} }
	for _, tc := range []struct {
		name   string
		spans  []span
		opt    CombineOptions
		ios    []planIO
		slices []bufSlice
		size   int64
	}{
		{"aligned single", []span{s(0, 0, 8*K)}, on,
			[]planIO{{0, 0, 8 * K, 0, 8 * K}}, []bufSlice{{0, 8 * K}}, 8 * K},
		{"unaligned single reads aligned superset", []span{s(0, 100, 5000)}, on,
			[]planIO{{0, 0, 8 * K, 0, 5100}}, []bufSlice{{100, 5000}}, 8 * K},
		{"adjacent combine", []span{s(0, 0, 4*K), s(0, 4*K, 4*K)}, on,
			[]planIO{{0, 0, 8 * K, 0, 8 * K}}, []bufSlice{{0, 4 * K}, {4 * K, 4 * K}}, 8 * K},
		{"gap within MaxGap read through", []span{s(0, 0, 4*K), s(0, 12*K, 4*K)}, on,
			[]planIO{{0, 0, 16 * K, 0, 16 * K}}, []bufSlice{{0, 4 * K}, {12 * K, 4 * K}}, 16 * K},
		{"gap over MaxGap stays apart", []span{s(0, 0, 4*K), s(0, 16*K, 4*K)}, on,
			[]planIO{{0, 0, 4 * K, 0, 4 * K}, {1, 16 * K, 4 * K, 4 * K, 4 * K}}, []bufSlice{{0, 4 * K}, {4 * K, 4 * K}}, 8 * K},
		{"combining off keeps adjacent apart", []span{s(0, 0, 4*K), s(0, 4*K, 4*K)}, off,
			[]planIO{{0, 0, 4 * K, 0, 4 * K}, {1, 4 * K, 4 * K, 4 * K, 4 * K}}, []bufSlice{{0, 4 * K}, {4 * K, 4 * K}}, 8 * K},
		{"long range split at MaxRequest", []span{s(0, 0, 2*M+100)}, on,
			[]planIO{{0, 0, M, 0, M}, {0, M, M, M, M}, {0, 2 * M, 4 * K, 2 * M, 100}}, []bufSlice{{0, 2*M + 100}}, 2*M + 4*K},
		{"merge stops at MaxRequest", []span{s(0, 0, 768*K), s(0, 768*K, 512*K)}, on,
			[]planIO{{0, 0, 768 * K, 0, 768 * K}, {1, 768 * K, 512 * K, 768 * K, 512 * K}}, []bufSlice{{0, 768 * K}, {768 * K, 512 * K}}, 1280 * K},
		{"different files never merge", []span{s(0, 0, 4*K), s(1, 4*K, 4*K)}, on,
			[]planIO{{0, 0, 4 * K, 0, 4 * K}, {1, 4 * K, 4 * K, 4 * K, 4 * K}}, []bufSlice{{0, 4 * K}, {4 * K, 4 * K}}, 8 * K},
		{"unsorted input sorted, slices in caller order", []span{s(0, 8*K, 4*K), s(0, 0, 4*K), s(0, 4*K, 100)}, on,
			[]planIO{{1, 0, 12 * K, 0, 12 * K}}, []bufSlice{{8 * K, 4 * K}, {0, 4 * K}, {4 * K, 100}}, 12 * K},
		{"overlapping ranges share bytes", []span{s(0, 0, 6*K), s(0, 2*K, 2*K)}, on,
			[]planIO{{0, 0, 8 * K, 0, 6 * K}}, []bufSlice{{0, 6 * K}, {2 * K, 2 * K}}, 8 * K},
		{"zero-length range: empty slice, no I/O", []span{s(0, 4*K, 0), s(0, 4*K, 10)}, on,
			[]planIO{{1, 4 * K, 4 * K, 0, 10}}, []bufSlice{{0, 0}, {0, 10}}, 4 * K},
		{"unaligned MaxRequest rounds down", []span{s(0, 0, 12*K)}, CombineOptions{Combine: true, MaxRequest: 5000},
			[]planIO{{0, 0, 4 * K, 0, 4 * K}, {0, 4 * K, 4 * K, 4 * K, 4 * K}, {0, 8 * K, 4 * K, 8 * K, 4 * K}}, []bufSlice{{0, 12 * K}}, 12 * K},
		{"second extent at aligned buffer offset", []span{s(0, 100, 10), s(0, 1*M, 10)}, on,
			[]planIO{{0, 0, 4 * K, 0, 110}, {1, 1 * M, 4 * K, 4 * K, 10}}, []bufSlice{{100, 10}, {4 * K, 10}}, 8 * K},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p plan
			makePlan(tc.spans, tc.opt, &p)
			if !reflect.DeepEqual(p.IOs, tc.ios) {
				t.Errorf("IOs\n got %+v\nwant %+v", p.IOs, tc.ios)
			}
			if !reflect.DeepEqual(p.Slices, tc.slices) {
				t.Errorf("slices\n got %+v\nwant %+v", p.Slices, tc.slices)
			}
			if p.Size != tc.size {
				t.Errorf("size %d, want %d", p.Size, tc.size)
			}
		})
	}
}
