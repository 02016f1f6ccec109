package timing

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"codeberg.org/sbinet/npyio/npy"
	"codeberg.org/sbinet/npyio/npz"
	"gonum.org/v1/gonum/mat"
)

// Limits that keep a hostile .npz from exhausting memory. A profile grid is
// a few hundred points per axis; these bounds are orders of magnitude above
// any real one. They are checked before npyio sees the bytes: npyio
// allocates whatever a header declares.
const (
	maxNPZEntries    = 1024     // arrays in one archive
	maxNPYEntryBytes = 64 << 20 // uncompressed bytes of one array
	maxNPYElems      = 4 << 20  // elements of one array
)

// npyElemSize is the element size of each dtype read (and converted to
// float64); any other dtype is refused before npyio reads the data.
var npyElemSize = map[string]int{
	"<f8": 8, ">f8": 8, "<i8": 8, ">i8": 8,
	"<f4": 4, ">f4": 4, "<i4": 4, ">i4": 4,
}

// array is one float64 NumPy array read from an .npz archive, in C order.
type array struct {
	shape []int
	data  []float64
}

// npzArchive is an .npz archive opened from bytes.
type npzArchive struct {
	name string // file name used in errors
	r    *npz.Reader
	keys map[string]bool
}

func openNPZ(data []byte, name string) (*npzArchive, error) {
	r, err := npz.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%s: not an .npz archive: %v", name, cause(err))
	}
	if n := len(r.Keys()); n > maxNPZEntries {
		return nil, fmt.Errorf("%s: %d arrays, more than %d", name, n, maxNPZEntries)
	}
	a := &npzArchive{name: name, r: r, keys: make(map[string]bool, len(r.Keys()))}
	for _, k := range r.Keys() {
		a.keys[k] = true
	}
	return a, nil
}

// read returns the named array ("key" or "key.npy" in the archive),
// converted to float64. Errors name the file and the key.
func (a *npzArchive) read(key string) (arr array, err error) {
	entry := key + ".npy"
	if !a.keys[entry] {
		entry = key
	}
	if !a.keys[entry] {
		return arr, fmt.Errorf("%s: %s: missing array", a.name, key)
	}
	raw, err := a.entryBytes(entry)
	if err == nil {
		err = checkNPYHeader(raw)
	}
	if err == nil {
		arr, err = decodeNPY(raw)
	}
	if err != nil {
		return array{}, fmt.Errorf("%s: %s: %s", a.name, key, err.Error())
	}
	return arr, nil
}

// entryBytes inflates one archive entry, at most one byte past the limit
// whatever the zip declares.
func (a *npzArchive) entryBytes(entry string) ([]byte, error) {
	rc, err := a.r.Open(entry)
	if err != nil {
		return nil, cause(err)
	}
	raw, err := io.ReadAll(io.LimitReader(rc, maxNPYEntryBytes+1))
	rc.Close()
	if err != nil {
		return nil, err
	}
	if len(raw) > maxNPYEntryBytes {
		return nil, errors.New("array too large")
	}
	return raw, nil
}

// checkNPYHeader checks that raw is an .npy file whose header fits in it:
// npyio allocates the header length it reads.
func checkNPYHeader(raw []byte) error {
	if len(raw) < 10 || string(raw[:6]) != string(npy.Magic[:]) {
		return errors.New("not a NumPy array")
	}
	var hdrEnd int
	switch raw[6] {
	case 1:
		hdrEnd = 10 + int(binary.LittleEndian.Uint16(raw[8:10]))
	case 2:
		if len(raw) < 12 {
			return errors.New("truncated header")
		}
		hdrEnd = 12 + int(binary.LittleEndian.Uint32(raw[8:12]))
	default:
		return fmt.Errorf("unsupported .npy version %d", raw[6])
	}
	if hdrEnd > len(raw) {
		return errors.New("truncated header")
	}
	return nil
}

// decodeNPY reads an .npy file of a known dtype, bounded in size, as
// float64 in C order.
func decodeNPY(raw []byte) (array, error) {
	body := bytes.NewReader(raw)
	rp, err := newNPYReader(body)
	if err != nil {
		return array{}, fmt.Errorf("malformed header: %v", err)
	}
	h := rp.Header.Descr
	descr := strings.Trim(h.Type, "'")
	esize, ok := npyElemSize[descr]
	if !ok || h.Type != "'"+descr+"'" {
		return array{}, fmt.Errorf("dtype %q, want float64", descr)
	}
	n := 1
	for _, d := range h.Shape {
		if d < 0 || (d > 0 && n > maxNPYElems/d) {
			return array{}, fmt.Errorf("bad shape %s", shapeString(h.Shape))
		}
		n *= d
	}
	if n*esize > body.Len() {
		return array{}, fmt.Errorf("truncated data: shape %s needs %d bytes, have %d", shapeString(h.Shape), n*esize, body.Len())
	}
	var out []float64
	switch descr[1:] {
	case "f8":
		out, err = readNPYAs[float64](rp, n)
	case "f4":
		out, err = readNPYAs[float32](rp, n)
	case "i8":
		out, err = readNPYAs[int64](rp, n)
	case "i4":
		out, err = readNPYAs[int32](rp, n)
	}
	if err != nil {
		return array{}, err
	}
	if h.Fortran && len(h.Shape) == 2 {
		out = transpose(out, h.Shape[0], h.Shape[1])
	}
	return array{shape: h.Shape, data: out}, nil
}

// transpose turns an r×c Fortran-order (column-major) matrix into C order.
func transpose(out []float64, r, c int) []float64 {
	t := make([]float64, len(out))
	for j := range c {
		for i := range r {
			t[i*c+j] = out[j*r+i]
		}
	}
	return t
}

// cause strips npyio's "npz: could not ..." wrapping: the callers' errors
// already name the file and the array.
func cause(err error) error {
	if e := errors.Unwrap(err); e != nil {
		return e
	}
	return err
}

// newNPYReader reads an .npy header with npyio. Its header parser slices
// the text by the positions of the keys NumPy writes and panics on some
// malformed headers (no newline, keys out of NumPy's order); a panic
// becomes an error here.
func newNPYReader(r io.Reader) (rp *npy.Reader, err error) {
	defer func() {
		if e := recover(); e != nil {
			rp, err = nil, errors.New("not the dict NumPy writes")
		}
	}()
	return npy.NewReader(r)
}

// readNPYAs reads n elements of type T (the array's dtype) and converts
// them to float64.
func readNPYAs[T float32 | float64 | int32 | int64](rp *npy.Reader, n int) ([]float64, error) {
	v := make([]T, n)
	if n > 0 {
		if err := rp.Read(&v); err != nil {
			return nil, err
		}
	}
	if out, ok := any(v).([]float64); ok {
		return out, nil
	}
	out := make([]float64, n)
	for i, x := range v {
		out[i] = float64(x)
	}
	return out, nil
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
// Arrays are not empty.
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
	zw := npz.NewWriter(&buf)
	for _, a := range arrays {
		var v any = a.Data
		switch shape := a.Shape; len(shape) {
		case 0:
			if len(a.Data) == 0 {
				// npyio would write a 0-element slice as a scalar without data.
				return nil, fmt.Errorf("%s: no values", a.Name)
			}
		case 1, 2:
			n := 1
			for _, d := range shape {
				n *= d
			}
			if n != len(a.Data) || slices.Min(shape) <= 0 {
				return nil, fmt.Errorf("%s: shape %s does not match %d values", a.Name, shapeString(shape), len(a.Data))
			}
			if len(shape) == 2 {
				v = mat.NewDense(shape[0], shape[1], a.Data)
			}
		default:
			return nil, fmt.Errorf("%s: %d-D arrays are not supported", a.Name, len(shape))
		}
		for _, x := range a.Data {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("%s: non-finite value %v", a.Name, x)
			}
		}
		if err := zw.Write(a.Name+".npy", v); err != nil {
			return nil, fmt.Errorf("%s: %v", a.Name, err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
