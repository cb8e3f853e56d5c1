package cuda

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// NVRTC compiles CUDA C to PTX at run time (libnvrtc, from the CUDA
// toolkit): the GPU backend generates one kernel per pipeline from the
// plan's expressions (engine/gpu) instead of interpreting them. Loaded
// like the driver, through dlopen at run time; without it the backend
// interprets (LoadNVRTC's error says why). Safe for concurrent use.
type NVRTC struct {
	path         string
	major, minor int
	api          nvrtcAPI
}

type nvrtcAPI struct {
	nvrtcVersion           func(major, minor *int32) int32
	nvrtcCreateProgram     func(prog *uintptr, src, name *byte, numHeaders int32, headers, includeNames unsafe.Pointer) int32
	nvrtcCompileProgram    func(prog uintptr, numOptions int32, options unsafe.Pointer) int32
	nvrtcGetPTXSize        func(prog uintptr, size *uint64) int32
	nvrtcGetPTX            func(prog uintptr, ptx *byte) int32
	nvrtcGetProgramLogSize func(prog uintptr, size *uint64) int32
	nvrtcGetProgramLog     func(prog uintptr, log *byte) int32
	nvrtcDestroyProgram    func(prog *uintptr) int32
}

// nvrtcErrors names nvrtcResult values (nvrtc.h).
var nvrtcErrors = []string{"NVRTC_SUCCESS", "NVRTC_ERROR_OUT_OF_MEMORY", "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
	"NVRTC_ERROR_INVALID_INPUT", "NVRTC_ERROR_INVALID_PROGRAM", "NVRTC_ERROR_INVALID_OPTION",
	"NVRTC_ERROR_COMPILATION", "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
	"NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION", "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
	"NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID", "NVRTC_ERROR_INTERNAL_ERROR"}

func nvrtcError(r int32, call string) error {
	name := fmt.Sprintf("nvrtcResult(%d)", r)
	if r >= 0 && int(r) < len(nvrtcErrors) {
		name = nvrtcErrors[r]
	}
	return fmt.Errorf("cuda: %s: %s", call, name)
}

// NVRTCEnv names a libnvrtc to load before the usual places.
const NVRTCEnv = "GOSTACHIO_NVRTC"

// nvrtcCandidates are the places libnvrtc is looked for: NVRTCEnv, the
// loader's path, the CUDA toolkit's lib64 folders, and the CUDA wheels of
// a Python environment.
func nvrtcCandidates() []string {
	var out []string
	if p := os.Getenv(NVRTCEnv); p != "" {
		out = append(out, p)
	}
	out = append(out, "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12")
	for _, pat := range []string{"/usr/local/cuda/lib64/libnvrtc.so*", "/usr/local/cuda-*/lib64/libnvrtc.so*",
		"/usr/local/cuda/targets/*/lib/libnvrtc.so*", "/usr/lib/x86_64-linux-gnu/libnvrtc.so*",
		"/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib/libnvrtc.so*",
		"/usr/local/lib/python3*/dist-packages/nvidia/*/lib/libnvrtc.so*"} {
		m, _ := filepath.Glob(pat)
		for _, f := range m {
			if !strings.Contains(filepath.Base(f), "builtins") {
				out = append(out, f)
			}
		}
	}
	return out
}

var nvrtcLoaded struct {
	once sync.Once
	n    *NVRTC
	err  error
}

// LoadNVRTC opens libnvrtc once per process (see nvrtcCandidates).
func LoadNVRTC() (*NVRTC, error) {
	nvrtcLoaded.once.Do(func() {
		var tried []string
		for _, path := range nvrtcCandidates() {
			lib, err := openLibrary(path)
			if err != nil {
				tried = append(tried, path)
				continue
			}
			n := &NVRTC{path: path}
			if err := n.bind(lib); err != nil {
				nvrtcLoaded.err = fmt.Errorf("cuda: %s: %w", path, err)
				return
			}
			var major, minor int32
			if r := n.api.nvrtcVersion(&major, &minor); r != 0 {
				nvrtcLoaded.err = nvrtcError(r, "nvrtcVersion")
				return
			}
			n.major, n.minor = int(major), int(minor)
			nvrtcLoaded.n = n
			return
		}
		nvrtcLoaded.err = fmt.Errorf("cuda: NVRTC not found (tried %s; set %s)", strings.Join(tried, ", "), NVRTCEnv)
	})
	return nvrtcLoaded.n, nvrtcLoaded.err
}

func (n *NVRTC) bind(lib uintptr) error {
	a := &n.api
	for _, s := range []struct {
		name string
		fptr any
	}{
		{"nvrtcVersion", &a.nvrtcVersion}, {"nvrtcCreateProgram", &a.nvrtcCreateProgram},
		{"nvrtcCompileProgram", &a.nvrtcCompileProgram}, {"nvrtcGetPTXSize", &a.nvrtcGetPTXSize},
		{"nvrtcGetPTX", &a.nvrtcGetPTX}, {"nvrtcGetProgramLogSize", &a.nvrtcGetProgramLogSize},
		{"nvrtcGetProgramLog", &a.nvrtcGetProgramLog}, {"nvrtcDestroyProgram", &a.nvrtcDestroyProgram},
	} {
		addr, err := lookupSymbol(lib, s.name)
		if err != nil || addr == 0 {
			return fmt.Errorf("lacks %s", s.name)
		}
		bindFunc(s.fptr, addr)
	}
	return nil
}

// Path is the library loaded; Version its version ("13.0").
func (n *NVRTC) Path() string    { return n.path }
func (n *NVRTC) Version() string { return fmt.Sprintf("%d.%d", n.major, n.minor) }

// Compile compiles one CUDA C source (name for messages) with options
// (e.g. "--gpu-architecture=compute_90") and returns its PTX, or an error
// that holds the compiler's log.
func (n *NVRTC) Compile(name, src string, options []string) ([]byte, error) {
	var prog uintptr
	csrc, cname := cBytes(src), cBytes(name)
	if r := n.api.nvrtcCreateProgram(&prog, &csrc[0], &cname[0], 0, nil, nil); r != 0 {
		return nil, nvrtcError(r, "nvrtcCreateProgram("+name+")")
	}
	defer n.api.nvrtcDestroyProgram(&prog)
	copts := make([][]byte, len(options))
	ptrs := make([]*byte, len(options)+1)
	for i, o := range options {
		copts[i] = cBytes(o)
		ptrs[i] = &copts[i][0]
	}
	r := n.api.nvrtcCompileProgram(prog, int32(len(options)), unsafe.Pointer(&ptrs[0]))
	runtime.KeepAlive(copts)
	runtime.KeepAlive(ptrs)
	runtime.KeepAlive(csrc)
	if r != 0 {
		var size uint64
		log := ""
		if n.api.nvrtcGetProgramLogSize(prog, &size) == 0 && size > 1 {
			buf := make([]byte, size)
			if n.api.nvrtcGetProgramLog(prog, &buf[0]) == 0 {
				log = strings.TrimRight(string(buf), "\x00\n")
			}
		}
		return nil, fmt.Errorf("%w:\n%s", nvrtcError(r, "nvrtcCompileProgram("+name+")"), log)
	}
	var size uint64
	if r := n.api.nvrtcGetPTXSize(prog, &size); r != 0 {
		return nil, nvrtcError(r, "nvrtcGetPTXSize")
	}
	ptx := make([]byte, size)
	if size > 0 {
		if r := n.api.nvrtcGetPTX(prog, &ptx[0]); r != 0 {
			return nil, nvrtcError(r, "nvrtcGetPTX")
		}
	}
	return ptx, nil
}

//go:embed common.cuh
var headers embed.FS

// CommonHeader is common.cuh, the helpers every kernel shares, for
// sources compiled at run time (NVRTC sees no files).
func CommonHeader() string {
	b, _ := headers.ReadFile("common.cuh")
	return string(b)
}
