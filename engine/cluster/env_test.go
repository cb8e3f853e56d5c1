package cluster

import (
	"reflect"
	"strings"
	"testing"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestFromEnv(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		want Rendezvous
		err  string
	}{
		{"torchrun", []string{"RANK", "3", "WORLD_SIZE", "4", "MASTER_ADDR", "10.0.0.1", "MASTER_PORT", "1234"},
			Rendezvous{Rank: 3, World: 4, Addr: "10.0.0.1:1234", Source: "torchrun"}, ""},
		{"torchrun ipv6", []string{"RANK", "0", "WORLD_SIZE", "1", "MASTER_ADDR", "::1", "MASTER_PORT", "80"},
			Rendezvous{Rank: 0, World: 1, Addr: "[::1]:80", Source: "torchrun"}, ""},
		{"torchrun no port", []string{"RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "h"}, Rendezvous{}, "MASTER_PORT is not"},
		{"torchrun no addr", []string{"RANK", "0", "WORLD_SIZE", "2", "MASTER_PORT", "1"}, Rendezvous{}, "MASTER_ADDR"},
		{"rank out of range", []string{"RANK", "4", "WORLD_SIZE", "4", "MASTER_ADDR", "h", "MASTER_PORT", "1"}, Rendezvous{}, "RANK=4 outside WORLD_SIZE=4"},
		{"bad rank", []string{"RANK", "x", "WORLD_SIZE", "4", "MASTER_ADDR", "h", "MASTER_PORT", "1"}, Rendezvous{}, `RANK="x"`},
		{"bad port", []string{"RANK", "0", "WORLD_SIZE", "4", "MASTER_ADDR", "h", "MASTER_PORT", "99999"}, Rendezvous{}, "not a port"},
		{"slurm range", []string{"SLURM_PROCID", "1", "SLURM_NTASKS", "4", "SLURM_NODELIST", "gpu[07-10],login"},
			Rendezvous{Rank: 1, World: 4, Addr: "gpu07:29500", Source: "slurm"}, ""},
		{"slurm job nodelist and port", []string{"SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_JOB_NODELIST", "a,b", "MASTER_PORT", "777"},
			Rendezvous{Rank: 0, World: 2, Addr: "a:777", Source: "slurm"}, ""},
		{"slurm master override", []string{"SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_NODELIST", "a,b", "MASTER_ADDR", "c"},
			Rendezvous{Rank: 0, World: 2, Addr: "c:29500", Source: "slurm"}, ""},
		{"slurm no list", []string{"SLURM_PROCID", "0", "SLURM_NTASKS", "2"}, Rendezvous{}, "SLURM_NODELIST"},
		{"openmpi", []string{"OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "3", "MASTER_ADDR", "head", "MASTER_PORT", "4000"},
			Rendezvous{Rank: 2, World: 3, Addr: "head:4000", Source: "openmpi"}, ""},
		{"openmpi default port", []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "3", "MASTER_ADDR", "head"},
			Rendezvous{Rank: 0, World: 3, Addr: "head:29500", Source: "openmpi"}, ""},
		{"openmpi no addr", []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "3"}, Rendezvous{}, "MASTER_ADDR"},
		{"nothing", nil, Rendezvous{}, "no launcher environment"},
		{"torchrun local", []string{"RANK", "1", "WORLD_SIZE", "4", "LOCAL_WORLD_SIZE", "4", "MASTER_ADDR", "h", "MASTER_PORT", "1"},
			Rendezvous{Rank: 1, World: 4, Addr: "h:1", Source: "torchrun", Local: 4}, ""},
		{"slurm local", []string{"SLURM_PROCID", "1", "SLURM_NTASKS", "4", "SLURM_NODELIST", "a,b", "SLURM_NTASKS_PER_NODE", "2"},
			Rendezvous{Rank: 1, World: 4, Addr: "a:29500", Source: "slurm", Local: 2}, ""},
		{"openmpi local", []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "3", "OMPI_COMM_WORLD_LOCAL_SIZE", "3", "MASTER_ADDR", "head"},
			Rendezvous{Rank: 0, World: 3, Addr: "head:29500", Source: "openmpi", Local: 3}, ""},
		{"local over world", []string{"RANK", "1", "WORLD_SIZE", "4", "LOCAL_WORLD_SIZE", "8", "MASTER_ADDR", "h", "MASTER_PORT", "1"}, Rendezvous{}, `LOCAL_WORLD_SIZE="8"`},
		{"bad local", []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "3", "OMPI_COMM_WORLD_LOCAL_SIZE", "x", "MASTER_ADDR", "head"}, Rendezvous{}, `OMPI_COMM_WORLD_LOCAL_SIZE="x"`},
	}
	for _, c := range cases {
		got, err := FromEnv(envOf(c.env...))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err = %v, want one containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestExpandNodeList(t *testing.T) {
	cases := map[string][]string{
		"node01":                {"node01"},
		"a,b":                   {"a", "b"},
		"node[01-04]":           {"node01", "node02", "node03", "node04"},
		"n[8-11]":               {"n8", "n9", "n10", "n11"},
		"gpu[1,3-4,9],cpu[007]": {"gpu1", "gpu3", "gpu4", "gpu9", "cpu007"},
		"rack[1-2]-ib":          {"rack1-ib", "rack2-ib"},
		"x[098-101]":            {"x098", "x099", "x100", "x101"},
	}
	for in, want := range cases {
		got, err := ExpandNodeList(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %v, want %v", in, got, want)
		}
	}
	for _, bad := range []string{"", "n[1-", "n[3-1]", "n[a-b]", "n]1[", "n[1-2][3-4]", ","} {
		if got, err := ExpandNodeList(bad); err == nil {
			t.Errorf("%q: got %v, want an error", bad, got)
		}
	}
}
