package main

import (
	"fmt"
	"strconv"
	"strings"
)

// sampler keeps every step-th source row (first occurrence of its key, as
// the compiled table keeps) of each kind, for timing/kernels' test that the
// compiled tables reproduce their source rows.
type sampler struct {
	step   int
	prefix string // "gpu,engine,"
	seen   map[string]int
	lines  []string
}

var samples = &sampler{step: 97, seen: map[string]int{}}

func (s *sampler) add(kind, key string, latency float64) {
	n := s.seen[kind]
	s.seen[kind] = n + 1
	if n%s.step == 0 {
		s.lines = append(s.lines, s.prefix+kind+","+key+","+strconv.FormatFloat(latency, 'g', -1, 64))
	}
}

func (s *sampler) start(gpu, engine string) {
	s.prefix = gpu + "," + engine + ","
	clear(s.seen)
}

func (s *sampler) csv() string {
	return fmt.Sprintf("gpu,engine,kind,dtype,a,b,c,d,e,f,g,latency_ms\n%s\n", strings.Join(s.lines, "\n"))
}
