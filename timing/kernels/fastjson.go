package kernels

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// decodeFast reads a table in the form tools/aictables writes it
// (encoding/json's compact output of Table: known keys, each once, plain
// strings, numbers, null only for a nil slice) without encoding/json's reflection, which
// took 30 ms of a 1 MB table, most of what a replay priced from the
// tables spends before its first pass. Everything it accepts it decodes
// to what json.Unmarshal would (strconv.ParseFloat and ParseInt, as
// encoding/json parses numbers into float64 and int fields;
// TestItem33_3FastDecode); ok is false at anything else (an escape, an
// unknown or repeated key, a null, a malformed number, trailing bytes),
// and Decode then falls back to json.Unmarshal, whose semantics and
// errors stay the reference.
func decodeFast(b []byte) (t Table, ok bool) {
	s := &scan{b: b}
	s.object(func(k string) int {
		switch k {
		case "format":
			t.Format = s.int()
		case "gpu":
			t.GPU = s.str()
		case "aic_system":
			t.AICSystem = s.str()
		case "engine":
			t.Engine = s.str()
		case "provenance":
			s.provenance(&t.Provenance)
		case "peak":
			s.object(func(k string) int {
				switch k {
				case "bf16_flops":
					t.Peak.BF16FLOPS = s.float()
					return 0
				case "fp8_flops":
					t.Peak.FP8FLOPS = s.float()
					return 1
				case "mem_bw":
					t.Peak.MemBW = s.float()
					return 2
				}
				return -1
			})
		case "gemm":
			if s.null() {
				break
			}
			t.GEMM = []GEMM{}
			s.array(func() {
				t.GEMM = append(t.GEMM, GEMM{})
				s.gemm(&t.GEMM[len(t.GEMM)-1])
			})
		case "context_attention":
			if s.null() {
				break
			}
			t.Context = []Context{}
			s.array(func() {
				t.Context = append(t.Context, Context{})
				c := &t.Context[len(t.Context)-1]
				c.Rows = s.attention(&c.Heads, &c.KVHeads, &c.HeadDim, &c.KVDType)
			})
		case "generation_attention":
			if s.null() {
				break
			}
			t.Generation = []Gen{}
			s.array(func() {
				t.Generation = append(t.Generation, Gen{})
				g := &t.Generation[len(t.Generation)-1]
				g.Rows = s.attention(&g.Heads, &g.KVHeads, &g.HeadDim, &g.KVDType)
			})
		case "moe":
			if s.null() {
				break
			}
			t.MoE = []MoE{}
			s.array(func() {
				t.MoE = append(t.MoE, MoE{})
				s.moe(&t.MoE[len(t.MoE)-1])
			})
		case "fp8_quant":
			if s.null() {
				break
			}
			t.Quant = []Quant{}
			s.array(func() {
				t.Quant = append(t.Quant, Quant{})
				q := &t.Quant[len(t.Quant)-1]
				s.object(func(k string) int {
					switch k {
					case "op":
						q.Op = s.str()
						return 0
					case "k":
						q.K = s.int()
						return 1
					case "curve":
						q.Curve = s.series()
						return 2
					}
					return -1
				})
			})
		default:
			return -1
		}
		return topKeys[k]
	})
	s.ws()
	return t, !s.bad && s.i == len(b)
}

// topKeys numbers Table's keys for the repeated-key check.
var topKeys = map[string]int{"format": 0, "gpu": 1, "aic_system": 2, "engine": 3, "provenance": 4, "peak": 5,
	"gemm": 6, "context_attention": 7, "generation_attention": 8, "moe": 9, "fp8_quant": 10}

// scan is decodeFast's cursor; bad, once set, stops every read.
type scan struct {
	b   []byte
	i   int
	bad bool
}

func (s *scan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// lit consumes byte c after whitespace, or reports false (not bad).
func (s *scan) lit(c byte) bool {
	s.ws()
	if !s.bad && s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scan) want(c byte) {
	if !s.lit(c) {
		s.bad = true
	}
}

// str reads a string without escapes or control characters, valid UTF-8.
func (s *scan) str() string {
	s.want('"')
	start := s.i
	for !s.bad && s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			if !utf8.Valid(v) {
				s.bad = true
			}
			return string(v)
		case c == '\\' || c < 0x20:
			s.bad = true
		default:
			s.i++
		}
	}
	s.bad = true
	return ""
}

// number returns the bytes of a JSON number (RFC 8259 grammar).
func (s *scan) number() []byte {
	s.ws()
	b, i := s.b, s.i
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		s.bad = true
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			s.bad = true
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			s.bad = true
		}
	}
	v := b[s.i:i]
	s.i = i
	return v
}

func (s *scan) float() float64 {
	n := s.number()
	if s.bad {
		return 0
	}
	// Converted in the call: strconv does not keep its argument, so a
	// number of up to 32 bytes is not copied to the heap.
	v, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		s.bad = true
	}
	return v
}

func (s *scan) int() int {
	n := s.number()
	if s.bad {
		return 0
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || int64(int(v)) != v {
		s.bad = true
	}
	return int(v)
}

// object reads {"key": value, …}; field reads key's value and returns a
// bit (0–62) distinct among the object's keys, or −1 for an unknown key.
func (s *scan) object(field func(k string) int) {
	s.want('{')
	if s.lit('}') {
		return
	}
	var seen uint64
	for !s.bad {
		k := s.str()
		s.want(':')
		if s.bad {
			return
		}
		bit := field(k)
		if bit < 0 || seen&(1<<bit) != 0 {
			s.bad = true
			return
		}
		seen |= 1 << bit
		if !s.lit(',') {
			s.want('}')
			return
		}
	}
}

// array reads [elem, …].
func (s *scan) array(elem func()) {
	s.want('[')
	if s.lit(']') {
		return
	}
	for !s.bad {
		elem()
		if !s.lit(',') {
			s.want(']')
			return
		}
	}
}

// null consumes a null: json.Unmarshal leaves a slice nil for it, as
// json.Marshal writes a nil slice (the tables of GPUs without MoE rows).
func (s *scan) null() bool {
	s.ws()
	if !s.bad && bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

func (s *scan) floats() []float64 {
	if s.null() {
		return nil
	}
	v := []float64{}
	s.array(func() { v = append(v, s.float()) })
	return v
}

func (s *scan) provenance(p *Provenance) {
	s.object(func(k string) int {
		switch k {
		case "repository":
			p.Repository = s.str()
			return 0
		case "commit":
			p.Commit = s.str()
			return 1
		case "licence":
			p.Licence = s.str()
			return 2
		case "notice":
			p.Notice = s.str()
			return 3
		case "sources":
			if s.null() {
				return 4
			}
			p.Sources = []Source{}
			s.array(func() {
				p.Sources = append(p.Sources, Source{})
				src := &p.Sources[len(p.Sources)-1]
				s.object(func(k string) int {
					switch k {
					case "table":
						src.Table = s.str()
						return 0
					case "path":
						src.Path = s.str()
						return 1
					case "blob":
						src.Blob = s.str()
						return 2
					case "version":
						src.Version = s.str()
						return 3
					}
					return -1
				})
			})
			return 4
		}
		return -1
	})
}

func (s *scan) gemm(g *GEMM) {
	s.object(func(k string) int {
		switch k {
		case "dtype":
			g.DType = s.str()
			return 0
		case "n":
			g.N = s.int()
			return 1
		case "k":
			g.K = s.int()
			return 2
		case "site":
			g.Site = s.str()
			return 3
		case "m":
			g.M = s.floats()
			return 4
		case "ms":
			g.Lat = s.floats()
			return 5
		}
		return -1
	})
}

// attention reads a Context or Gen (the same keys) and returns its rows.
func (s *scan) attention(heads, kvHeads, headDim *int, kvDType *string) (rows []Series) {
	s.object(func(k string) int {
		switch k {
		case "heads":
			*heads = s.int()
			return 0
		case "kv_heads":
			*kvHeads = s.int()
			return 1
		case "head_dim":
			*headDim = s.int()
			return 2
		case "kv_dtype":
			*kvDType = s.str()
			return 3
		case "rows":
			if s.null() {
				return 4
			}
			rows = []Series{}
			s.array(func() { rows = append(rows, s.series()) })
			return 4
		}
		return -1
	})
	return rows
}

func (s *scan) moe(m *MoE) {
	s.object(func(k string) int {
		switch k {
		case "dtype":
			m.DType = s.str()
			return 0
		case "hidden":
			m.Hidden = s.int()
			return 1
		case "inter":
			m.Inter = s.int()
			return 2
		case "topk":
			m.TopK = s.int()
			return 3
		case "experts":
			m.Experts = s.int()
			return 4
		case "moe_tp":
			m.TP = s.int()
			return 5
		case "moe_ep":
			m.EP = s.int()
			return 6
		case "distribution":
			m.Distribution = s.str()
			return 7
		case "curve":
			m.Curve = s.series()
			return 8
		}
		return -1
	})
}

func (s *scan) series() (r Series) {
	s.object(func(k string) int {
		switch k {
		case "key":
			r.Key = s.float()
			return 0
		case "x":
			r.X = s.floats()
			return 1
		case "ms":
			r.Ms = s.floats()
			return 2
		}
		return -1
	})
	return r
}
