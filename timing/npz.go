package timing

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Limits that keep a hostile .npz from exhausting memory. A profile grid is
// a few hundred points per axis; these bounds are orders of magnitude above
// any real one.
const (
	maxNPYEntryBytes = 64 << 20 // uncompressed bytes of one array
	maxNPYElems      = 4 << 20  // elements of one array
)

// array is one float64 NumPy array read from an .npz archive, in C order.
type array struct {
	shape []int
	data  []float64
}

// npzArchive is an .npz archive opened from bytes.
type npzArchive struct {
	name  string // file name used in errors
	files map[string]*zip.File
}

func openNPZ(data []byte, name string) (*npzArchive, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%s: not an .npz archive: %v", name, err)
	}
	a := &npzArchive{name: name, files: make(map[string]*zip.File, len(zr.File))}
	for _, f := range zr.File {
		a.files[f.Name] = f
	}
	return a, nil
}

// read returns the named array ("key" or "key.npy" in the archive),
// converted to float64. Errors name the file and the key.
func (a *npzArchive) read(key string) (arr array, err error) {
	f := a.files[key+".npy"]
	if f == nil {
		f = a.files[key]
	}
	if f == nil {
		return arr, fmt.Errorf("%s: %s: missing array", a.name, key)
	}
	fail := func(format string, args ...any) (array, error) {
		return array{}, fmt.Errorf("%s: %s: %s", a.name, key, fmt.Sprintf(format, args...))
	}
	if f.UncompressedSize64 > maxNPYEntryBytes {
		return fail("array too large (%d bytes)", f.UncompressedSize64)
	}
	rc, err := f.Open()
	if err != nil {
		return fail("%v", err)
	}
	raw, err := io.ReadAll(io.LimitReader(rc, maxNPYEntryBytes+1))
	rc.Close()
	if err != nil {
		return fail("%v", err)
	}
	if len(raw) > maxNPYEntryBytes {
		return fail("array too large")
	}
	if len(raw) < 10 || string(raw[:6]) != "\x93NUMPY" {
		return fail("not a NumPy array")
	}
	var hdrStart, hdrEnd int
	switch raw[6] {
	case 1:
		hdrStart, hdrEnd = 10, 10+int(binary.LittleEndian.Uint16(raw[8:10]))
	case 2, 3:
		if len(raw) < 12 {
			return fail("truncated header")
		}
		hdrStart, hdrEnd = 12, 12+int(binary.LittleEndian.Uint32(raw[8:12]))
	default:
		return fail("unsupported .npy version %d", raw[6])
	}
	if hdrEnd > len(raw) || hdrEnd < hdrStart {
		return fail("truncated header")
	}
	h, err := parseNPYHeader(string(raw[hdrStart:hdrEnd]))
	if err != nil {
		return fail("malformed header: %v", err)
	}
	n := 1
	for _, d := range h.shape {
		if d < 0 || (d > 0 && n > maxNPYElems/d) {
			return fail("bad shape %s", shapeString(h.shape))
		}
		n *= d
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if h.descr[0] == '>' {
		bo = binary.BigEndian
	}
	var esize int
	switch h.descr {
	case "<f8", ">f8", "<i8", ">i8":
		esize = 8
	case "<f4", ">f4", "<i4", ">i4":
		esize = 4
	default:
		return fail("dtype %q, want float64", h.descr)
	}
	body := raw[hdrEnd:]
	if n*esize > len(body) {
		return fail("truncated data: shape %s needs %d bytes, have %d", shapeString(h.shape), n*esize, len(body))
	}
	out := make([]float64, n)
	for i := range out {
		switch b := body[i*esize:]; h.descr[1:] {
		case "f8":
			out[i] = math.Float64frombits(bo.Uint64(b))
		case "f4":
			out[i] = float64(math.Float32frombits(bo.Uint32(b)))
		case "i8":
			out[i] = float64(int64(bo.Uint64(b)))
		case "i4":
			out[i] = float64(int32(bo.Uint32(b)))
		}
	}
	if h.fortran && len(h.shape) == 2 {
		r, c := h.shape[0], h.shape[1]
		t := make([]float64, n)
		for j := range c {
			for i := range r {
				t[i*c+j] = out[j*r+i]
			}
		}
		out = t
	}
	return array{shape: h.shape, data: out}, nil
}

// npyDict is the header dictionary of an .npy array.
type npyDict struct {
	descr   string // dtype, e.g. "<f8"
	fortran bool   // column-major data
	shape   []int
}

// parseNPYHeader reads the Python dict literal NumPy writes as an .npy
// header, e.g. {'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }.
// It takes exactly that grammar: the three keys, string, boolean and
// integer-tuple values, optional trailing commas, padding spaces.
func parseNPYHeader(s string) (npyDict, error) {
	var h npyDict
	p := pyLit{s: s}
	if !p.eat('{') {
		return h, errors.New("want a dict")
	}
	seen := map[string]bool{}
	for !p.eat('}') {
		key, ok := p.str()
		if !ok || !p.eat(':') {
			return h, errors.New("want 'key': value")
		}
		if seen[key] {
			return h, fmt.Errorf("key %q twice", key)
		}
		seen[key] = true
		switch key {
		case "descr":
			if h.descr, ok = p.str(); !ok || h.descr == "" {
				return h, errors.New("descr: want a string")
			}
		case "fortran_order":
			if h.fortran, ok = p.boolean(); !ok {
				return h, errors.New("fortran_order: want True or False")
			}
		case "shape":
			if h.shape, ok = p.tuple(); !ok {
				return h, errors.New("shape: want a tuple of integers")
			}
		default:
			return h, fmt.Errorf("unknown key %q", key)
		}
		if !p.eat(',') && p.peek() != '}' {
			return h, errors.New("want , or }")
		}
	}
	if len(seen) != 3 {
		return h, errors.New("want the keys descr, fortran_order and shape")
	}
	if p.peek() != 0 {
		return h, errors.New("text after the dict")
	}
	return h, nil
}

// pyLit scans a Python literal.
type pyLit struct {
	s string
	i int
}

func (p *pyLit) peek() byte {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
	if p.i == len(p.s) {
		return 0
	}
	return p.s[p.i]
}

func (p *pyLit) eat(c byte) bool {
	if p.peek() != c {
		return false
	}
	p.i++
	return true
}

// str reads a quoted string without escapes.
func (p *pyLit) str() (string, bool) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", false
	}
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 || strings.IndexByte(p.s[p.i+1:p.i+1+end], '\\') >= 0 {
		return "", false
	}
	v := p.s[p.i+1 : p.i+1+end]
	p.i += end + 2
	return v, true
}

func (p *pyLit) boolean() (bool, bool) {
	p.peek()
	for _, w := range []string{"False", "True"} {
		if strings.HasPrefix(p.s[p.i:], w) {
			p.i += len(w)
			return w == "True", true
		}
	}
	return false, false
}

// tuple reads (), (n,) or (n, m, ...) of non-negative integers.
func (p *pyLit) tuple() ([]int, bool) {
	if !p.eat('(') {
		return nil, false
	}
	dims := []int{}
	for !p.eat(')') {
		p.peek()
		start, v := p.i, 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			v = min(v*10+int(p.s[p.i]-'0'), 1<<40) // saturate: the shape check reports it
			p.i++
		}
		if p.i == start {
			return nil, false
		}
		dims = append(dims, v)
		if !p.eat(',') && p.peek() != ')' {
			return nil, false
		}
	}
	return dims, true
}

func shapeString(shape []int) string {
	switch len(shape) {
	case 0:
		return "()"
	case 1:
		return fmt.Sprintf("(%d,)", shape[0])
	}
	s := "("
	for i, d := range shape {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(d)
	}
	return s + ")"
}

// NPZArray is one float64 array to write with WriteNPZ. Shape nil means a
// vector of len(Data); a 2-D shape stores Data in row-major (C) order.
type NPZArray struct {
	Name  string
	Shape []int
	Data  []float64
}

// WriteNPZ encodes arrays as a NumPy .npz archive (the format np.savez
// writes: one "<name>.npy" entry per array, float64, C order). The output
// is deterministic: the same arrays give the same bytes.
func WriteNPZ(arrays []NPZArray) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, a := range arrays {
		shape := a.Shape
		switch len(shape) {
		case 0:
			shape = []int{len(a.Data)}
		case 1, 2:
			n := 1
			for _, d := range shape {
				n *= d
			}
			if n != len(a.Data) || slices.Min(shape) <= 0 {
				return nil, fmt.Errorf("%s: shape %s does not match %d values", a.Name, shapeString(shape), len(a.Data))
			}
		default:
			return nil, fmt.Errorf("%s: %d-D arrays are not supported", a.Name, len(shape))
		}
		for _, x := range a.Data {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("%s: non-finite value %v", a.Name, x)
			}
		}
		f, err := zw.Create(a.Name + ".npy")
		if err != nil {
			return nil, err
		}
		if _, err := f.Write(npyBytes(shape, a.Data)); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// npyBytes is a little-endian float64 C-order .npy file (format 1.0), its
// header padded with spaces to a multiple of 64 bytes as NumPy does.
func npyBytes(shape []int, data []float64) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	h := "{'descr': '<f8', 'fortran_order': False, 'shape': (" + tuple + "), }"
	h += strings.Repeat(" ", 63-(10+len(h))%64) + "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), byte(len(h)>>8))
	b = append(b, h...)
	for _, x := range data {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}
