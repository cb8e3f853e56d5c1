package cluster

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// DefaultPort is the rendezvous port when the launcher names none
// (SLURM, Open MPI without MASTER_PORT).
const DefaultPort = 29500

// Rendezvous is where a worker stands in the cluster: its rank, the number
// of workers, and rank 0's address (host:port), as a launcher describes
// them.
type Rendezvous struct {
	Rank, World int
	Addr        string
	// Source names the convention the values came from ("torchrun",
	// "slurm", "openmpi").
	Source string
	// Local is how many of the workers run on this machine, where the
	// launcher says (torchrun LOCAL_WORLD_SIZE, SLURM
	// SLURM_NTASKS_PER_NODE, Open MPI OMPI_COMM_WORLD_LOCAL_SIZE; `gostachio
	// cluster` sets the first); 0: not said.
	Local int
}

// FromEnv reads the rendezvous from the environment of a launched worker
// (getenv is os.Getenv in production), trying in order:
//
//   - torchrun: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT;
//   - SLURM: SLURM_PROCID, SLURM_NTASKS, rank 0 on the first host of
//     SLURM_NODELIST (or SLURM_JOB_NODELIST); MASTER_ADDR / MASTER_PORT
//     override the host / port;
//   - Open MPI: OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, with
//     MASTER_ADDR (required) and MASTER_PORT.
//
// and the workers on this machine (Rendezvous.Local) where the launcher
// gives them. The port defaults to DefaultPort. Missing or malformed
// values are an error naming the variable.
func FromEnv(getenv func(string) string) (Rendezvous, error) {
	port := DefaultPort
	if p := getenv("MASTER_PORT"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return Rendezvous{}, fmt.Errorf("cluster: MASTER_PORT=%q is not a port", p)
		}
		port = n
	}
	var r Rendezvous
	var err error
	switch {
	case getenv("RANK") != "" || getenv("WORLD_SIZE") != "":
		r.Source = "torchrun"
		if r.Rank, r.World, err = rankWorld(getenv, "RANK", "WORLD_SIZE"); err != nil {
			return r, err
		}
		host := getenv("MASTER_ADDR")
		if host == "" {
			return r, fmt.Errorf("cluster: RANK and WORLD_SIZE are set but MASTER_ADDR is not")
		}
		if getenv("MASTER_PORT") == "" {
			return r, fmt.Errorf("cluster: RANK and WORLD_SIZE are set but MASTER_PORT is not")
		}
		r.Addr = net.JoinHostPort(host, strconv.Itoa(port))
	case getenv("SLURM_PROCID") != "":
		r.Source = "slurm"
		if r.Rank, r.World, err = rankWorld(getenv, "SLURM_PROCID", "SLURM_NTASKS"); err != nil {
			return r, err
		}
		host := getenv("MASTER_ADDR")
		if host == "" {
			list := getenv("SLURM_NODELIST")
			if list == "" {
				list = getenv("SLURM_JOB_NODELIST")
			}
			if list == "" {
				return r, fmt.Errorf("cluster: SLURM_PROCID is set but neither SLURM_NODELIST nor MASTER_ADDR is")
			}
			hosts, err := ExpandNodeList(list)
			if err != nil {
				return r, err
			}
			host = hosts[0]
		}
		r.Addr = net.JoinHostPort(host, strconv.Itoa(port))
	case getenv("OMPI_COMM_WORLD_RANK") != "":
		r.Source = "openmpi"
		if r.Rank, r.World, err = rankWorld(getenv, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"); err != nil {
			return r, err
		}
		host := getenv("MASTER_ADDR")
		if host == "" {
			return r, fmt.Errorf("cluster: Open MPI gives no rendezvous host: set MASTER_ADDR (e.g. mpirun -x MASTER_ADDR=host)")
		}
		r.Addr = net.JoinHostPort(host, strconv.Itoa(port))
	default:
		return r, fmt.Errorf("cluster: no launcher environment: set RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (torchrun), or run under SLURM (srun) or Open MPI (mpirun)")
	}
	localVar := map[string]string{"torchrun": "LOCAL_WORLD_SIZE", "slurm": "SLURM_NTASKS_PER_NODE", "openmpi": "OMPI_COMM_WORLD_LOCAL_SIZE"}[r.Source]
	if v := getenv(localVar); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > r.World {
			return r, fmt.Errorf("cluster: %s=%q is not a number of workers from 1 to the world's %d", localVar, v, r.World)
		}
		r.Local = n
	}
	return r, nil
}

func rankWorld(getenv func(string) string, rankVar, worldVar string) (int, int, error) {
	rank, err := strconv.Atoi(getenv(rankVar))
	if err != nil {
		return 0, 0, fmt.Errorf("cluster: %s=%q is not a number", rankVar, getenv(rankVar))
	}
	world, err := strconv.Atoi(getenv(worldVar))
	if err != nil {
		return 0, 0, fmt.Errorf("cluster: %s=%q is not a number", worldVar, getenv(worldVar))
	}
	if world < 1 || rank < 0 || rank >= world {
		return 0, 0, fmt.Errorf("cluster: %s=%d outside %s=%d", rankVar, rank, worldVar, world)
	}
	return rank, world, nil
}

// ExpandNodeList expands a SLURM host list: comma-separated entries, each
// a host name or a prefix with one bracketed range list, e.g.
// "node[01-04,07],login1" -> node01 node02 node03 node04 node07 login1.
// Zero padding of a range's bounds is kept.
func ExpandNodeList(s string) ([]string, error) {
	var out []string
	for i := 0; i < len(s); {
		j := i
		depth := 0
		for j < len(s) && (s[j] != ',' || depth > 0) {
			switch s[j] {
			case '[':
				depth++
			case ']':
				depth--
			}
			j++
		}
		hosts, err := expandHost(s[i:j])
		if err != nil {
			return nil, fmt.Errorf("cluster: node list %q: %w", s, err)
		}
		out = append(out, hosts...)
		i = j + 1
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cluster: node list %q names no host", s)
	}
	return out, nil
}

func expandHost(e string) ([]string, error) {
	e = strings.TrimSpace(e)
	open := strings.IndexByte(e, '[')
	if open < 0 {
		if e == "" || strings.ContainsAny(e, "]") {
			return nil, fmt.Errorf("bad host %q", e)
		}
		return []string{e}, nil
	}
	close := strings.IndexByte(e, ']')
	if close < open {
		return nil, fmt.Errorf("unbalanced brackets in %q", e)
	}
	prefix, body, suffix := e[:open], e[open+1:close], e[close+1:]
	if strings.ContainsAny(suffix, "[]") {
		return nil, fmt.Errorf("more than one bracketed range in %q (not supported)", e)
	}
	var out []string
	for _, part := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a > b || a < 0 {
			return nil, fmt.Errorf("bad range %q in %q", part, e)
		}
		if b-a > 1<<16 {
			return nil, fmt.Errorf("range %q in %q is too large", part, e)
		}
		width := len(lo)
		for n := a; n <= b; n++ {
			out = append(out, fmt.Sprintf("%s%0*d%s", prefix, width, n, suffix))
		}
	}
	return out, nil
}
