package gpu

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gostachio/kernels/cpu"
	"gostachio/plan"
)

// strMain runs one of strings.cu's predicates, as strPred launches it,
// over a string column read from stdin (n, n+1 offsets, bytes) and prints
// the flags. Its arguments: kernel, then per kernel what strPred passes
// (like: pattern negate; cmp: op literal; in: start0 len negate list...).
const strMain = `
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
int main(int argc, char **argv) {
	int n;
	if (fread(&n, 4, 1, stdin) != 1) return 2;
	std::vector<int> off(n + 1);
	if (fread(off.data(), 4, n + 1, stdin) != (size_t)(n + 1)) return 2;
	std::vector<unsigned char> bytes(off[n] + 1);
	if (off[n] > 0 && fread(bytes.data(), 1, off[n], stdin) != (size_t)off[n]) return 2;
	std::vector<unsigned char> flags(n + 1);
	blockDim.x = gridDim.x = 1;
	const char *k = argv[1];
	if (!strcmp(k, "like")) {
		str_like(off.data(), bytes.data(), n, (const unsigned char *)argv[2], (int)strlen(argv[2]), atoi(argv[3]), flags.data(), 0);
	} else if (!strcmp(k, "cmp")) {
		str_cmp(off.data(), bytes.data(), n, atoi(argv[2]), (const unsigned char *)argv[3], (int)strlen(argv[3]), flags.data(), 0);
	} else {
		std::vector<int> loff(1, 0);
		std::string lb;
		for (int a = 5; a < argc; a++) { lb += argv[a]; loff.push_back((int)lb.size()); }
		str_in(off.data(), bytes.data(), n, atoi(argv[2]), atoi(argv[3]), loff.data(), (const unsigned char *)lb.data(),
		       argc - 5, atoi(argv[4]), flags.data(), 0);
	}
	for (int i = 0; i < n; i++) putchar('0' + flags[i]);
	putchar('\n');
	return 0;
}
`

// TestStringPredicatesOnHost compiles strings.cu's predicates with the
// host C++ compiler (CUDA's qualifiers as no-ops, one thread) and runs
// each TPC-H string predicate of the row path, with the arguments strPred
// gives it, over values that hit and miss it: the rows it keeps equal
// cpu.Filter's. Skipped without a C++ compiler.
func TestStringPredicatesOnHost(t *testing.T) {
	cxx, err := exec.LookPath("c++")
	if err != nil {
		t.Skip("no C++ compiler")
	}
	src, err := os.ReadFile("../../kernels/cuda/strings.cu")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	common, err := os.ReadFile("../../kernels/cuda/common.cuh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "common.cuh"), common, 0o644); err != nil {
		t.Fatal(err)
	}
	cc := filepath.Join(dir, "strings.cc")
	if err := os.WriteFile(cc, []byte(cudaStubs+string(src)+strMain), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "strpred")
	if out, err := exec.Command(cxx, "-O1", "-w", "-std=c++17", "-I", dir, "-o", bin, cc).CombinedOutput(); err != nil {
		t.Fatalf("c++: %v\n%s", err, out)
	}
	values := []string{"", "B", "BUILDING", "BUILDINGS", "AUTOMOBILE", "Brand#23", "Brand#45", "Brand#4", "MED BOX", "MED BOXES",
		"LARGE BRUSHED BRASS", "BRASS", "xBRASSy", "forest green", "forestgreen", "Forest", "dark green tomato", "gree",
		"no special requests", "specialrequests", "special deposits requests x", "13-555-1234", "31", "3", "29-", "MAIL", "SHIP", "AIR REG", "AIR",
		"MEDIUM POLISHED TIN", "MEDIUM POLISHEDx", "Customer xx Complaints", "Complaints Customer", "SAUDI ARABIA", "F", "O", "R"}
	col := cpu.Vec{Type: cpu.TString, Off: []int32{0}}
	for _, v := range values {
		col.Str = append(col.Str, v...)
		col.Off = append(col.Off, int32(len(col.Str)))
	}
	var in bytes.Buffer
	binary.Write(&in, binary.LittleEndian, int32(len(values)))
	binary.Write(&in, binary.LittleEndian, col.Off)
	in.Write(col.Str)
	batch := &cpu.Batch{Names: []string{"s"}, Cols: []cpu.Vec{col}, Rows: len(values)}
	s := plan.Col("s")
	preds := []plan.Expr{
		plan.Eq(s, plan.Str("BUILDING")), plan.Ne(s, plan.Str("Brand#45")), plan.Lt(s, plan.Str("Brand#4")),
		plan.Ge(plan.Str("MED BOX"), s), plan.Eq(s, plan.Str("")),
		plan.In(s, plan.Str("MAIL"), plan.Str("SHIP")), plan.NotIn(s, plan.Str("AIR"), plan.Str("AIR REG")),
		plan.In(plan.Substr(s, 1, 2), plan.Str("13"), plan.Str("31"), plan.Str("29")),
		plan.In(plan.Substr(s, 2, 1), plan.Str("1"), plan.Str("")),
		plan.Like(s, "%BRASS"), plan.Like(s, "forest%"), plan.Like(s, "%green%"), plan.NotLike(s, "%special%requests%"),
		plan.NotLike(s, "MEDIUM POLISHED%"), plan.Like(s, "%Customer%Complaints%"), plan.Like(s, "B_RASS"), plan.Like(s, "%"),
	}
	for _, e := range preds {
		c := e.(plan.Call)
		if !stringPredicate(c) {
			t.Fatalf("%s: not a string predicate", c)
		}
		args, err := hostStrArgs(c)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, args...)
		cmd.Stdin = bytes.NewReader(in.Bytes())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		want, err := cpu.Filter(batch, c)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, f := range strings.TrimSpace(string(out)) {
			if f == '1' {
				got = append(got, values[i])
			}
		}
		var kept []string
		for i := 0; i < want.Rows; i++ {
			kept = append(kept, want.Cols[0].Format(i))
		}
		if fmt.Sprint(got) != fmt.Sprint(kept) {
			t.Errorf("%s: kernel keeps %q, the CPU %q", c, got, kept)
		}
	}
}

// hostStrArgs are strMain's arguments for predicate c: what strPred
// passes the kernel.
func hostStrArgs(c plan.Call) ([]string, error) {
	switch c.Fn {
	case plan.FnLike, plan.FnNotLike:
		return []string{"like", c.Args[1].(plan.Lit).S, strconv.Itoa(btoi(c.Fn == plan.FnNotLike))}, nil
	case plan.FnIn, plan.FnNotIn:
		start0, length := int64(0), int64(-1)
		if sub, ok := c.Args[0].(plan.Call); ok {
			_, start0, length, _ = substrArgs(sub)
		}
		args := []string{"in", strconv.FormatInt(start0, 10), strconv.FormatInt(length, 10), strconv.Itoa(btoi(c.Fn == plan.FnNotIn))}
		for _, a := range c.Args[1:] {
			args = append(args, a.(plan.Lit).S)
		}
		return args, nil
	}
	op, _ := cmpOp(c.Fn)
	lit := c.Args[1]
	if _, ok := c.Args[0].(plan.Col); !ok {
		lit, op = c.Args[0], swapped(op)
	}
	return []string{"cmp", strconv.Itoa(int(op)), lit.(plan.Lit).S}, nil
}
