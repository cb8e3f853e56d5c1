// Package machine names the host a measurement came from, the same way in
// every report, trace and figure.
package machine

import (
	"fmt"
	"os"
	"runtime"
)

// Name is "host, N CPUs, os/arch".
func Name() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown host"
	}
	return fmt.Sprintf("%s, %d CPUs, %s/%s", host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
}
