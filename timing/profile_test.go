package timing

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"codeberg.org/sbinet/npyio/npy"
	"gonum.org/v1/gonum/mat"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// small.npz (see testdata/make_fixtures.py):
//
//	prefill_isl     [100 200 400]   prefill_ttft_ms [10 20 30]
//	active KV       [0 1000 3000]   context [100 200]
//	decode_itl      [[6 7] [8 9.5] [12 14.5]]
func TestInterpolatedExactness(t *testing.T) {
	for _, file := range []string{"small.npz", "small_fortran.npz"} {
		p, err := LoadProfile(readTestdata(t, file), file)
		if err != nil {
			t.Fatal(err)
		}
		prefill := []struct {
			name               string
			batch, isl, prefix int
			want               float64
		}{
			{"grid first", 1, 100, 0, 10},
			{"grid mid", 2, 150, 50, 20}, // T = 2×100
			{"grid last", 4, 100, 0, 30},
			{"between", 1, 150, 0, 15},
			{"between upper", 1, 300, 0, 25},
			{"extrapolate below", 1, 50, 0, 5}, // slope 0.1 of the first segment
			{"extrapolate below to 0", 1, 1, 0, 0.1},
			{"extrapolate above", 1, 600, 0, 40}, // slope 0.05 of the last segment
			{"no work", 1, 100, 100, 0},
			{"no batch", 0, 100, 0, 0},
		}
		for _, c := range prefill {
			if got := p.PrefillMs(c.batch, c.isl, c.prefix); math.Abs(got-c.want) > 1e-12 {
				t.Errorf("%s: %s: PrefillMs(%d,%d,%d) = %v, want %v", file, c.name, c.batch, c.isl, c.prefix, got, c.want)
			}
		}
		decode := []struct {
			name        string
			active, ctx int
			want        float64
		}{
			{"grid (0,100)", 0, 100, 6},
			{"grid (1000,200)", 1000, 200, 9.5},
			{"grid (3000,200)", 3000, 200, 14.5},
			{"between ctx", 1000, 150, 8.75},
			{"between kv", 2000, 100, 10},
			{"between both", 500, 150, (6.5 + 8.75) / 2}, // rows 0,1 at ctx 150: 6.5, 8.75
			{"extrapolate kv above", 4000, 100, 14},      // row slope (12−8)/2000
			{"extrapolate kv above, ctx above", 4000, 300, 14 + 2*(16.75-14)/1},
			{"extrapolate ctx below", 0, 50, 5.5},
			{"extrapolate both below", -1000, 0, 6 - 2 - 1 - 0.5*1 - 0.5*1}, // see below
		}
		// (−1000, 0): cell (0..1000)×(100..200): z = 6 + 0.002·kv + 0.01·(ctx−100) + 0.5e-5·kv·(ctx−100)
		//   = 6 − 2 − 1 + 0.5e-5·(−1000)(−100) = 3.5
		decode[len(decode)-1].want = 3.5
		// (4000, 300): last cell (1000..3000)×(100..200) continued:
		//   ctx 300 on row 1000: 8 + 2·1.5 = 11; row 3000: 12 + 2·2.5 = 17; kv 4000: 17 + (17−11)/2 = 20
		decode[len(decode)-3].want = 20
		for _, c := range decode {
			if got := p.DecodeMs(1, c.active, c.ctx, 0); math.Abs(got-c.want) > 1e-12 {
				t.Errorf("%s: %s: DecodeMs(%d,%d) = %v, want %v", file, c.name, c.active, c.ctx, got, c.want)
			}
		}
		if got := p.DecodeMs(0, 1000, 100, 0); got != 0 {
			t.Errorf("empty batch: got %v", got)
		}
	}
}

func TestLoadProfileErrors(t *testing.T) {
	good := readTestdata(t, "small.npz")
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"bad_shape.npz", readTestdata(t, "bad_shape.npz"), "bad_shape.npz: decode_itl: shape (3,4), want (3,2)"},
		{"nan.npz", readTestdata(t, "nan.npz"), "nan.npz: prefill_ttft_ms: value 1 is NaN"},
		{"decreasing.npz", readTestdata(t, "decreasing.npz"), "decreasing.npz: decode_context_length: not strictly increasing"},
		{"missing.npz", readTestdata(t, "missing.npz"), "missing.npz: decode_itl: missing array"},
		{"empty.npz", nil, "empty.npz: not an .npz archive"},
		{"text.npz", []byte("hello"), "text.npz: not an .npz archive"},
		{"truncated.npz", good[:len(good)/2], "truncated.npz:"},
		{"notnpy.npz", zipOf(t, map[string][]byte{"prefill_isl.npy": []byte("garbage")}), "notnpy.npz: prefill_isl: not a NumPy array"},
		{"hugehdr.npz", zipOf(t, map[string][]byte{"prefill_isl.npy": []byte("\x93NUMPY\x02\x00\xff\xff\xff\x7f{}")}), "hugehdr.npz: prefill_isl: truncated header"},
		{"hugeshape.npz", zipOf(t, map[string][]byte{"prefill_isl.npy": npyHeader("<f8", "(1000000000,)")}), "hugeshape.npz: prefill_isl: bad shape"},
		{"short.npz", zipOf(t, map[string][]byte{"prefill_isl.npy": npyHeader("<f8", "(3,)")}), "short.npz: prefill_isl: truncated data"},
		{"dtype.npz", zipOf(t, map[string][]byte{"prefill_isl.npy": npyHeader("|b1", "(3,)")}), `dtype.npz: prefill_isl: dtype "|b1", want float64`},
		{"matrix.npz", zipOf(t, map[string][]byte{"prefill_isl.npy": append(npyHeader("<f8", "(1, 1)"), make([]byte, 8)...)}), "matrix.npz: prefill_isl: shape (1,1), want a vector"},
		{"version3.npz", zipOf(t, map[string][]byte{"prefill_isl.npy": []byte("\x93NUMPY\x03\x00\x00\x00\x00\x00")}), "version3.npz: prefill_isl: unsupported .npy version 3"},
		{"nonewline.npz", zipOf(t, map[string][]byte{"prefill_isl.npy": []byte("\x93NUMPY\x01\x00\x02\x00{}")}), "nonewline.npz: prefill_isl: malformed header"},
		{"nokeys.npz", zipOf(t, map[string][]byte{"prefill_isl.npy": []byte("\x93NUMPY\x01\x00\x03\x00{}\n")}), "nokeys.npz: prefill_isl: malformed header"},
		{"keyorder.npz", zipOf(t, map[string][]byte{"prefill_isl.npy": npyDictHeader("{'shape': (3,), 'fortran_order': False, 'descr': '<f8', }")}), "keyorder.npz: prefill_isl: malformed header"},
		{"order.npz", zipOf(t, map[string][]byte{"prefill_isl.npy": npyDictHeader("{'descr': '<f8', 'fortran_order': Maybe, 'shape': (3,), }")}), "order.npz: prefill_isl: malformed header: npy: invalid 'fortran_order' value"},
		{"negshape.npz", zipOf(t, map[string][]byte{"prefill_isl.npy": npyHeader("<f8", "(-3,)")}), "negshape.npz: prefill_isl: bad shape (-3,)"},
		{"overflow.npz", zipOf(t, map[string][]byte{"prefill_isl.npy": npyHeader("<f8", "(99999999999999999999,)")}), "overflow.npz: prefill_isl: malformed header"},
		{"object.npz", zipOf(t, map[string][]byte{"prefill_isl.npy": npyHeader("|O", "(3,)")}), `object.npz: prefill_isl: dtype "|O", want float64`},
		{"quoted.npz", zipOf(t, map[string][]byte{"prefill_isl.npy": npyDictHeader("{'descr': '<f8' , 'fortran_order': False, 'shape': (3,), }")}), "quoted.npz: prefill_isl: dtype"},
		{"many.npz", manyEntries(t, maxNPZEntries+1), "many.npz: 1025 arrays, more than 1024"},
		{"bomb.npz", zipOf(t, map[string][]byte{"prefill_isl.npy": make([]byte, maxNPYEntryBytes+1)}), "bomb.npz: prefill_isl: array too large"},
	}
	for _, c := range cases {
		_, err := LoadProfile(c.data, c.name)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want prefix %q", c.name, err, c.want)
		}
	}
}

func TestNPZWriteRoundTrip(t *testing.T) {
	p, err := LoadProfile(readTestdata(t, "small.npz"), "small.npz")
	if err != nil {
		t.Fatal(err)
	}
	b, err := WriteNPZ(p.Arrays())
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := WriteNPZ(p.Arrays())
	if !bytes.Equal(b, b2) {
		t.Error("WriteNPZ is not deterministic")
	}
	q, err := LoadProfile(b, "rt.npz")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]int{{0, 100}, {1500, 170}, {5000, 10}} {
		if a, b := p.DecodeMs(1, c[0], c[1], 0), q.DecodeMs(1, c[0], c[1], 0); a != b {
			t.Errorf("decode %v: %v vs %v", c, a, b)
		}
	}
	if _, err := WriteNPZ([]NPZArray{{Name: "x", Shape: []int{2, 2}, Data: []float64{1}}}); err == nil {
		t.Error("want shape error")
	}
	if _, err := WriteNPZ([]NPZArray{{Name: "x", Data: []float64{math.NaN()}}}); err == nil {
		t.Error("want NaN error")
	}
	if _, err := WriteNPZ([]NPZArray{{Name: "x"}}); err == nil || err.Error() != "x: no values" {
		t.Errorf("empty array: %v, want x: no values", err)
	}
}

func manyEntries(t testing.TB, n int) []byte {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for i := range n {
		if _, err := w.Create(fmt.Sprintf("a%d.npy", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// npyioBytes is v written as an .npy file by npyio.
func npyioBytes(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	if err := npy.Write(&buf, v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The dtypes read are converted to float64; big-endian data and Fortran
// order are honoured.
func TestNPZDtypes(t *testing.T) {
	be := append(npyHeader(">f8", "(3,)"), 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x08, 0, 0, 0, 0, 0, 0)
	for _, c := range []struct {
		name string
		npy  []byte
	}{
		{"<f8", npyioBytes(t, []float64{1, 2, 3})},
		{"<f4", npyioBytes(t, []float32{1, 2, 3})},
		{"<i8", npyioBytes(t, []int64{1, 2, 3})},
		{"<i4", npyioBytes(t, []int32{1, 2, 3})},
		{">f8", be},
	} {
		a, err := openNPZ(zipOf(t, map[string][]byte{"prefill_isl.npy": c.npy}), "d.npz")
		if err != nil {
			t.Fatal(err)
		}
		arr, err := a.read("prefill_isl")
		if err != nil || !slices.Equal(arr.shape, []int{3}) || !slices.Equal(arr.data, []float64{1, 2, 3}) {
			t.Errorf("%s: %v %v, %v", c.name, arr.shape, arr.data, err)
		}
	}
	// Fortran order: columns stored first.
	h := npyDictHeader("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }")
	var data []byte
	for _, x := range []float64{1, 4, 2, 5, 3, 6} {
		data = binary.LittleEndian.AppendUint64(data, math.Float64bits(x))
	}
	a, err := openNPZ(zipOf(t, map[string][]byte{"prefill_isl.npy": append(h, data...)}), "f.npz")
	if err != nil {
		t.Fatal(err)
	}
	arr, err := a.read("prefill_isl")
	if err != nil || !slices.Equal(arr.shape, []int{2, 3}) || !slices.Equal(arr.data, []float64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("fortran: %v %v, %v", arr.shape, arr.data, err)
	}
}

// small_oldwriter.npz is small_fortran.npz as the hand-written encoder
// (format 1.0 headers padded to 64 bytes) wrote it before npyio did the
// writing: it must keep loading, equal to the NumPy-written original.
func TestReadOldWriterNPZ(t *testing.T) {
	want, err := LoadProfile(readTestdata(t, "small.npz"), "small.npz")
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadProfile(readTestdata(t, "small_oldwriter.npz"), "small_oldwriter.npz")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.PrefillT, want.PrefillT) || !slices.Equal(got.PrefillTTFT, want.PrefillTTFT) ||
		!slices.Equal(got.ActiveKV, want.ActiveKV) || !slices.Equal(got.Context, want.Context) || !slices.Equal(got.ITL, want.ITL) {
		t.Errorf("old writer's file reads as %+v, want %+v", got, want)
	}
}

func zipOf(t testing.TB, files map[string][]byte) []byte {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, k := range []string{"prefill_isl.npy", "prefill_ttft_ms.npy"} {
		if v, ok := files[k]; ok {
			f, _ := w.Create(k)
			f.Write(v)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func npyHeader(descr, shape string) []byte {
	return npyDictHeader("{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }")
}

// npyDictHeader is a format 1.0 .npy header holding the dict text h.
func npyDictHeader(h string) []byte {
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	return append([]byte{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, byte(len(h)), byte(len(h) >> 8)}, h...)
}

func FuzzLoadProfile(f *testing.F) {
	for _, name := range []string{"small.npz", "small_fortran.npz", "bad_shape.npz", "nan.npz", "missing.npz"} {
		f.Add(readTestdata(f, name))
	}
	f.Add([]byte{})
	f.Add(zipOf(f, map[string][]byte{"prefill_isl.npy": npyHeader("<f8", "(3,)")}))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := LoadProfile(data, "fuzz.npz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.npz: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		// A profile that loads must price passes with finite numbers.
		for _, x := range []int{0, 1, 100, 1 << 20} {
			if v := p.PrefillMs(1, x+1, 0); math.IsNaN(v) {
				t.Fatalf("PrefillMs(%d) = NaN", x)
			}
			if v := p.DecodeMs(1, x, x/2+1, 0); math.IsNaN(v) {
				t.Fatalf("DecodeMs(%d) = NaN", x)
			}
		}
	})
}

// mapFS reads files from the real testdata folder, the way the CLI does.
func osRead(name string) ([]byte, error) { return os.ReadFile(filepath.FromSlash(name)) }

func TestConvertProfileRoundTrip(t *testing.T) {
	want, err := LoadProfile(readTestdata(t, "perf_data.npz"), "perf_data.npz") // numpy's conversion
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"testdata/profiler", "testdata/profiler_json"} {
		data, err := ConvertProfileDir(osRead, dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		got, err := LoadProfile(data, dir+".npz")
		if err != nil {
			t.Fatalf("%s: converted profile does not load: %v", dir, err)
		}
		cmp := func(key string, a, b []float64) {
			if len(a) != len(b) {
				t.Fatalf("%s: %s: %d values, want %d", dir, key, len(a), len(b))
			}
			for i := range a {
				if d := math.Abs(a[i] - b[i]); d > 1e-9*max(1, math.Abs(b[i])) {
					t.Fatalf("%s: %s[%d] = %.12g, numpy %.12g", dir, key, i, a[i], b[i])
				}
			}
		}
		cmp(KeyPrefillISL, got.PrefillT, want.PrefillT)
		cmp(KeyPrefillTTFTMs, got.PrefillTTFT, want.PrefillTTFT)
		cmp(KeyDecodeActiveKV, got.ActiveKV, want.ActiveKV)
		cmp(KeyDecodeContext, got.Context, want.Context)
		cmp(KeyDecodeITL, got.ITL, want.ITL)
	}
}

func TestFitProfile(t *testing.T) {
	pre := []PrefillSample{{100, 0.011}, {200, 0.012}, {400, 0.014}}
	// Exact decode plane: 5 ms + 0.1 ms/request + 1e-5 ms/token.
	var dec []DecodeSample
	for _, n := range []float64{1, 4, 16} {
		for _, ctx := range []float64{100, 1000} {
			dec = append(dec, DecodeSample{Requests: n, KVTokens: n * ctx, Context: ctx, Seconds: 0.005 + 0.0001*n + 1e-8*n*ctx})
		}
	}
	f, err := FitProfile(pre, dec)
	if err != nil {
		t.Fatal(err)
	}
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %.15g, want %g", name, got, want)
		}
	}
	near("PrefillA", f.PrefillA, 0.010)
	near("PrefillB", f.PrefillB, 1e-5)
	near("DecodeA", f.DecodeA, 0.005)
	near("DecodeB", f.DecodeB, 0.0001)
	near("DecodeC", f.DecodeC, 1e-8)

	// Negative request coefficient: clamped, refit on KV tokens.
	for i := range dec {
		dec[i].Seconds = 0.005 - 0.0001*dec[i].Requests + 1e-6*dec[i].KVTokens
	}
	f, err = FitProfile(pre, dec)
	if err != nil || !f.RequestCoefClamped || f.DecodeB != 0 || f.DecodeC <= 0 {
		t.Errorf("clamp: fit %+v, err %v", f, err)
	}
	// Negative KV coefficient: rejected.
	for i := range dec {
		dec[i].Seconds = 0.005 + 0.001*dec[i].Requests - 1e-7*dec[i].KVTokens
	}
	if _, err := FitProfile(pre, dec); err == nil || !strings.Contains(err.Error(), "negative coefficient") {
		t.Errorf("want rejection, got %v", err)
	}
	// Floors.
	if got := (ProfileFit{PrefillA: -1}).PrefillSeconds(10); got != 1e-6 {
		t.Errorf("floor: %v", got)
	}
}

func TestConvertProfileDirErrors(t *testing.T) {
	files := map[string][]byte{}
	read := func(name string) ([]byte, error) {
		if b, ok := files[name]; ok {
			return b, nil
		}
		return nil, fs.ErrNotExist
	}
	if _, err := ConvertProfileDir(read, "p"); err == nil || !strings.Contains(err.Error(), "not a profiler results folder") {
		t.Errorf("empty dir: %v", err)
	}
	files["p/prefill_raw_data.json"] = []byte(`{"prefill_isl": [1, 2], "prefill_ttft": [1]}`)
	if _, err := ConvertProfileDir(read, "p"); err == nil || !strings.Contains(err.Error(), "p/prefill_raw_data.json: prefill_ttft") {
		t.Errorf("length mismatch: %v", err)
	}
	files["p/prefill_raw_data.json"] = []byte(`{"prefill_isl": [1, 2], "prefill_ttft": [1, 2]}`)
	files["p/decode_raw_data.json"] = []byte(`{"x_kv_usage": [0.1], "y_context_length": [10], "z_itl": "x", "max_kv_tokens": 10}`)
	if _, err := ConvertProfileDir(read, "p"); err == nil || !strings.Contains(err.Error(), "p/decode_raw_data.json: z_itl") {
		t.Errorf("bad json: %v", err)
	}
	read2 := func(name string) ([]byte, error) { return nil, errors.New("permission denied") }
	if _, err := ConvertProfileDir(read2, "p"); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("read error: %v", err)
	}
}

// FuzzNPY feeds one raw .npy entry (not a whole zip, so mutations reach the
// header and data) through the archive reader: errors name the file and the
// key, and nothing panics.
func FuzzNPY(f *testing.F) {
	f.Add(append(npyHeader("<f8", "(2,)"), make([]byte, 16)...))
	f.Add(append(npyHeader(">i4", "(1, 2)"), make([]byte, 8)...))
	f.Add(npyioBytes(f, mat.NewDense(2, 2, []float64{1, 2, 3, 4})))
	f.Add([]byte("\x93NUMPY\x01\x00\x10\x00{'descr': '<f8'}"))
	f.Fuzz(func(t *testing.T, npy []byte) {
		a, err := openNPZ(zipOf(t, map[string][]byte{"prefill_isl.npy": npy}), "fuzz.npz")
		if err != nil {
			t.Fatal(err)
		}
		arr, err := a.read("prefill_isl")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.npz: prefill_isl: ") {
				t.Fatalf("error does not name the file and key: %v", err)
			}
			return
		}
		n := 1
		for _, d := range arr.shape {
			n *= d
		}
		if n != len(arr.data) {
			t.Fatalf("shape %v with %d values", arr.shape, len(arr.data))
		}
	})
}
