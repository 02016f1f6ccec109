package timing

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"codeberg.org/sbinet/npyio/npy"
	"codeberg.org/sbinet/npyio/npz"
	"gonum.org/v1/gonum/mat"
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
	// Check the header length ourselves: npyio allocates it blindly.
	if len(raw) < 10 || string(raw[:6]) != "\x93NUMPY" {
		return fail("not a NumPy array")
	}
	var hdrEnd int
	switch raw[6] {
	case 1:
		hdrEnd = 10 + int(binary.LittleEndian.Uint16(raw[8:10]))
	case 2, 3:
		if len(raw) < 12 {
			return fail("truncated header")
		}
		hdrEnd = 12 + int(binary.LittleEndian.Uint32(raw[8:12]))
	default:
		return fail("unsupported .npy version %d", raw[6])
	}
	if hdrEnd > len(raw) || hdrEnd < 0 {
		return fail("truncated header")
	}
	defer func() {
		// npyio panics on some malformed headers; turn that into an error.
		if r := recover(); r != nil {
			arr, err = array{}, fmt.Errorf("%s: %s: malformed array (%v)", a.name, key, r)
		}
	}()
	rd, err := npy.NewReader(bytes.NewReader(raw))
	if err != nil {
		return fail("%v", err)
	}
	shape := rd.Header.Descr.Shape
	n := 1
	for _, d := range shape {
		if d < 0 || (d > 0 && n > maxNPYElems/d) {
			return fail("bad shape %s", shapeString(shape))
		}
		n *= d
	}
	dtype := strings.Trim(rd.Header.Descr.Type, `'" `)
	var esize int
	switch dtype {
	case "<f8", ">f8", "<i8", ">i8":
		esize = 8
	case "<f4", ">f4", "<i4", ">i4":
		esize = 4
	default:
		return fail("dtype %q, want float64", dtype)
	}
	if n*esize > len(raw)-hdrEnd {
		return fail("truncated data: shape %s needs %d bytes, have %d", shapeString(shape), n*esize, len(raw)-hdrEnd)
	}
	out := make([]float64, n)
	if n > 0 {
		switch dtype {
		case "<f8", ">f8":
			err = rd.Read(&out)
		case "<f4", ">f4":
			v := make([]float32, n)
			if err = rd.Read(&v); err == nil {
				for i, x := range v {
					out[i] = float64(x)
				}
			}
		case "<i8", ">i8":
			v := make([]int64, n)
			if err = rd.Read(&v); err == nil {
				for i, x := range v {
					out[i] = float64(x)
				}
			}
		case "<i4", ">i4":
			v := make([]int32, n)
			if err = rd.Read(&v); err == nil {
				for i, x := range v {
					out[i] = float64(x)
				}
			}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fail("%v", err)
		}
	}
	if rd.Header.Descr.Fortran && len(shape) == 2 {
		r, c := shape[0], shape[1]
		t := make([]float64, n)
		for j := range c {
			for i := range r {
				t[i*c+j] = out[j*r+i]
			}
		}
		out = t
	}
	return array{shape: append([]int(nil), shape...), data: out}, nil
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
	w := npz.NewWriter(&buf)
	for _, a := range arrays {
		var v any
		switch len(a.Shape) {
		case 0:
			v = append([]float64(nil), a.Data...)
		case 1:
			if a.Shape[0] != len(a.Data) {
				return nil, fmt.Errorf("%s: shape %s does not match %d values", a.Name, shapeString(a.Shape), len(a.Data))
			}
			v = append([]float64(nil), a.Data...)
		case 2:
			if a.Shape[0]*a.Shape[1] != len(a.Data) || a.Shape[0] <= 0 || a.Shape[1] <= 0 {
				return nil, fmt.Errorf("%s: shape %s does not match %d values", a.Name, shapeString(a.Shape), len(a.Data))
			}
			v = mat.NewDense(a.Shape[0], a.Shape[1], append([]float64(nil), a.Data...))
		default:
			return nil, fmt.Errorf("%s: %d-D arrays are not supported", a.Name, len(a.Shape))
		}
		for _, x := range a.Data {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("%s: non-finite value %v", a.Name, x)
			}
		}
		if err := w.Write(a.Name+".npy", v); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
