package cuda

import (
	"encoding/json"
	"fmt"
	"io"
)

// InfoReport is what `gostachio gpu info --json` prints.
type InfoReport struct {
	// Available: a driver loaded and sees at least one device; otherwise
	// Message says why the CPU is used and Detail what the loader said.
	Available   bool         `json:"available"`
	Message     string       `json:"message,omitempty"`
	Detail      string       `json:"detail,omitempty"`
	Driver      string       `json:"driver,omitempty"`
	CUDAVersion string       `json:"cuda_version,omitempty"`
	Devices     []DeviceInfo `json:"devices,omitempty"`
	// PTXModules are the embedded kernel modules (none until `make ptx`
	// has run on a GPU machine).
	PTXModules []string `json:"ptx_modules"`
}

// Report loads the system driver and describes it. A missing or unusable
// driver is not an error: the report says the CPU is used. Errors are
// failures of a loaded driver to describe its devices.
func Report() (*InfoReport, error) {
	r := &InfoReport{PTXModules: PTXNames()}
	if r.PTXModules == nil {
		r.PTXModules = []string{}
	}
	d, err := Load()
	if err != nil {
		r.Message = err.Error()
		if le, ok := err.(*LoadError); ok {
			r.Detail = le.Detail
		}
		return r, nil
	}
	r.Driver, r.CUDAVersion = d.Path(), VersionString(d.Version())
	if r.Devices, err = d.Info(); err != nil {
		return nil, err
	}
	r.Available = len(r.Devices) > 0
	if !r.Available {
		r.Message = "CUDA driver found but no CUDA device: running on the CPU"
	}
	return r, nil
}

// WriteInfo writes Report's answer to w as text or (asJSON) one JSON
// object.
func WriteInfo(w io.Writer, asJSON bool) error {
	r, err := Report()
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	if r.Driver == "" {
		_, err := fmt.Fprintln(w, r.Message)
		return err
	}
	fmt.Fprintf(w, "CUDA driver %s: CUDA %s, %d device(s)\n", r.Driver, r.CUDAVersion, len(r.Devices))
	if !r.Available {
		fmt.Fprintln(w, r.Message)
	}
	for _, dv := range r.Devices {
		fmt.Fprintf(w, "device %d: %s, compute capability %s, %d SMs, %.1f GiB, %d-bit memory bus, %d MiB L2, %d copy engines, PCI %s\n",
			dv.Ordinal, dv.Name, dv.ComputeCapability(), dv.SMs, float64(dv.TotalMem)/(1<<30), dv.MemBusBits,
			dv.L2Bytes>>20, dv.CopyEngines, dv.PCI)
	}
	if len(r.PTXModules) == 0 {
		_, err = fmt.Fprintln(w, "kernels: no PTX built yet (GPU validation pending)")
	} else {
		_, err = fmt.Fprintf(w, "kernels: %d PTX modules embedded (%v)\n", len(r.PTXModules), r.PTXModules)
	}
	return err
}
