package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
)

// The CPU a phase of a run costs, of PostgreSQL (the postmaster and every
// backend, live or ended) and of the processes that drive it (the server,
// or the driver itself for the baselines). On this machine's two cores a
// pipeline that keeps both busy is bound by its CPU per record, not by
// its longest chain; these figures say which it is.

// userHZ is the clock tick of /proc's CPU times (USER_HZ, 100 on Linux).
const userHZ = 100

// treeCPU is the CPU time of process pid and its descendants: each
// process's own, and that of its ended children (which the kernel adds
// to the parent that waited for them).
func treeCPU(pid int) time.Duration {
	procs, err := procfs.AllProcs()
	if err != nil {
		return 0
	}
	children := map[int][]procfs.ProcStat{}
	var root *procfs.ProcStat
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue // ended meanwhile
		}
		if st.PID == pid {
			root = &st
		}
		children[st.PPID] = append(children[st.PPID], st)
	}
	if root == nil {
		return 0
	}
	var ticks int
	var walk func(st procfs.ProcStat)
	walk = func(st procfs.ProcStat) {
		ticks += int(st.UTime+st.STime) + st.CUTime + st.CSTime
		for _, c := range children[st.PID] {
			walk(c)
		}
	}
	walk(*root)
	return time.Duration(ticks) * time.Second / userHZ
}

// postmasterPID is the PID of the embedded PostgreSQL in dir (the first
// line of its postmaster.pid), or 0.
func postmasterPID(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "pg", "postmaster.pid"))
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(first))
	return pid
}

// cpuMeter measures the CPU of PostgreSQL and of one other process tree
// (the server, or the driver) between start and stop.
type cpuMeter struct {
	postmaster, other int
	pg0, other0       time.Duration
}

func startCPU(dir string, other int) cpuMeter {
	m := cpuMeter{postmaster: postmasterPID(dir), other: other}
	m.pg0, m.other0 = treeCPU(m.postmaster), treeCPU(other)
	return m
}

// stop returns the CPU PostgreSQL and the other process took since start.
func (m cpuMeter) stop() cpuSpent {
	return cpuSpent{pg: treeCPU(m.postmaster) - m.pg0, other: treeCPU(m.other) - m.other0}
}

// cpuSpent is the CPU of a phase.
type cpuSpent struct{ pg, other time.Duration }

// perRecord is the phase's CPU in µs a record: PostgreSQL's, the other
// process's, and their sum.
func (c cpuSpent) perRecord(n int) (pg, other, total float64) {
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	return us(c.pg), us(c.other), us(c.pg + c.other)
}
