package calibrate

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"gostachio/costmodel"
	"gostachio/sim"
)

// TestFitProfileWritesTypedProfile: the profile FitProfile writes, loaded
// back, is field by field the typed profile its fits built, for the
// samples saved beside the shipped calibrated profiles (CPU and GPU), and
// its header names where it comes from.
func TestFitProfileWritesTypedProfile(t *testing.T) {
	files, _ := filepath.Glob("../sim/profiles/*.samples.csv")
	if len(files) < 2 {
		t.Fatalf("samples files %v", files)
	}
	for _, file := range files {
		r, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		samples, err := ReadSamples(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		pv := fixedProvenance()
		pv.GPU = "Test GPU"
		opts := ProfileOptions{Name: "typed", Devices: 2, HostCores: 8, Provenance: pv}
		fit, err := FitProfile(samples, opts)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		// The same steps, to the typed profile.
		g, err := groupSamples(samples)
		if err != nil {
			t.Fatal(err)
		}
		var m fitted
		var f Fit
		if err := m.fitMachine(g, &f); err != nil {
			t.Fatal(err)
		}
		if err := m.fitCopies(g, &f); err != nil {
			t.Fatal(err)
		}
		m.fitDispatch(g, &f)
		if err := m.fitOperators(g, &f); err != nil {
			t.Fatal(err)
		}
		built := m.profile(opts)
		loaded, err := sim.ParseProfile(file, fit.YAML)
		if err != nil {
			t.Fatalf("%s: the written profile does not load: %v", file, err)
		}
		compareFields(t, file, reflect.ValueOf(*built), reflect.ValueOf(*loaded), "")
		if !reflect.DeepEqual(built, fit.Profile) {
			t.Errorf("%s: Fit.Profile differs from the typed profile", file)
		}
		if len(f.Components) != len(fit.Components) {
			t.Errorf("%s: %d components, FitProfile reports %d", file, len(f.Components), len(fit.Components))
		}
		head := "# Calibrated by `gostachio calibrate"
		if !strings.HasPrefix(string(fit.YAML), head) || !strings.Contains(string(fit.YAML), "\nname: typed\n") {
			t.Errorf("%s: written as\n%s", file, fit.YAML)
		}
		if m.onGPU != (built.GPU.Fused != nil) || built.Provenance.GPU != "Test GPU" {
			t.Errorf("%s: GPU %v, fused %v", file, m.onGPU, built.GPU.Fused)
		}
		for _, r := range []costmodel.Rate{built.NVMe.Bandwidth, built.PCIe.H2D, built.Host.Ops[2].ByteRate} {
			if float64(r) != costmodel.Round6(float64(r)) {
				t.Errorf("%s: rate %v not rounded to 6 digits", file, float64(r))
			}
		}
	}
}

// compareFields reports every field (by path) where a and b differ.
func compareFields(t *testing.T, file string, a, b reflect.Value, path string) {
	t.Helper()
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			compareFields(t, file, a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name)
		}
	case reflect.Pointer:
		if a.IsNil() != b.IsNil() {
			t.Errorf("%s: %s: nil %v, read back nil %v", file, path, a.IsNil(), b.IsNil())
		} else if !a.IsNil() {
			compareFields(t, file, a.Elem(), b.Elem(), path)
		}
	case reflect.Array:
		for i := range a.Len() {
			compareFields(t, file, a.Index(i), b.Index(i), path+"["+strconv.Itoa(i)+"]")
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			t.Errorf("%s: %s: built %v, read back %v", file, path, a.Interface(), b.Interface())
		}
	}
}
