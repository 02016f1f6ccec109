package kernels_test

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/timing/kernels"
	"github.com/dynosim/dynosim-web/timing/kernels/kerneldata"
)

// TestItem33_3FastDecode: the tables' fast reader (fastjson.go) decodes
// every embedded table, and its indented form, to exactly the Table
// json.Unmarshal builds, and hands everything outside the form
// tools/aictables writes (escapes, unknown, repeated or differently cased
// keys, nulls, numbers an int field or JSON refuses, trailing bytes,
// invalid UTF-8) back to json.Unmarshal, so Decode's result and errors are
// encoding/json's.
func TestItem33_3FastDecode(t *testing.T) {
	for _, name := range kerneldata.Names() {
		if !strings.HasSuffix(name, ".json.gz") {
			continue
		}
		z, err := os.ReadFile("kerneldata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := kerneldata.Gunzip(z)
		if err != nil {
			t.Fatal(err)
		}
		var ind bytes.Buffer
		if err := json.Indent(&ind, b, "", "\t"); err != nil {
			t.Fatal(err)
		}
		for form, in := range map[string][]byte{"compact": b, "indented": ind.Bytes()} {
			checkFastDecode(t, name+" "+form, in, true)
		}
	}
	const base = `{"format":1,"gpu":"h100_sxm","aic_system":"h100_sxm","engine":"vllm",` +
		`"provenance":{"repository":"r","commit":"c","licence":"Apache-2.0","notice":"n ± — ok","sources":[{"table":"gemm_perf","path":"p","blob":"b","version":"0.24.0"}]},` +
		`"peak":{"bf16_flops":9.89e14,"fp8_flops":1.979E15,"mem_bw":3.35e12},` +
		`"gemm":[{"dtype":"bf16","n":4096,"k":4096,"site":"measured","m":[1,2,-0,1e-7],"ms":[0.01,0.02,0.03,0.04]}],` +
		`"context_attention":[{"heads":32,"kv_heads":8,"head_dim":128,"kv_dtype":"bf16","rows":[{"key":128,"x":[1,2],"ms":[0.1,0.2]}]}],` +
		`"generation_attention":[{"heads":32,"kv_heads":8,"head_dim":128,"kv_dtype":"bf16","rows":[{"key":1,"x":[2,4],"ms":[0.01,0.02]},{"key":2,"x":[],"ms":[]}]}],` +
		`"moe":[{"dtype":"fp8","hidden":5120,"inter":8192,"topk":1,"experts":16,"moe_tp":2,"moe_ep":1,"distribution":"power_law_1.01","curve":{"key":0,"x":[1,16],"ms":[0.2,0.3]}}],` +
		`"fp8_quant":[{"op":"compute_scale","k":4096,"curve":{"key":0,"x":[1],"ms":[-2.5e+3]}}]}`
	edit := func(old, new string) []byte {
		if !strings.Contains(base, old) {
			t.Fatalf("%q not in the base table", old)
		}
		return []byte(strings.Replace(base, old, new, 1))
	}
	for _, c := range []struct {
		name string
		in   []byte
		fast bool // the fast reader takes it
	}{
		{"base", []byte(base), true},
		{"spaces", []byte(" \n\t" + strings.ReplaceAll(strings.ReplaceAll(base, ":", " : "), ",", " ,\r\n ") + " \n"), true},
		{"empty object and arrays", []byte(`{"peak":{},"gemm":[],"moe":[]}`), true},
		{"escape", edit(`"gpu":"h100_sxm"`, `"gpu":"h100\u005fsxm"`), false},
		{"escaped quote", edit(`"notice":"n`, `"notice":"\"n`), false},
		{"unknown key", edit(`"format":1,`, `"format":1,"extra":[1,{"a":null}],`), false},
		{"unknown nested key", edit(`"site":"measured",`, `"site":"measured","note":"x",`), false},
		{"repeated key", edit(`"engine":"vllm",`, `"engine":"vllm","gpu":"b200",`), false},
		{"repeated nested key", edit(`"n":4096,`, `"n":4096,"n":1,`), false},
		{"key case", edit(`"gpu":`, `"GPU":`), false},
		{"null", edit(`"moe":[`, `"fp8_flops":null,"moe":[`), false},
		{"unknown key beside nulls", edit(`"ms":[0.01,0.02,0.03,0.04]`, `"ms":null,"x":null`), false},
		{"repeated key, one null", edit(`"moe":[`, `"gemm":null,"moe":[`), false},
		{"null arrays", []byte(`{"gemm":null,"context_attention":null,"provenance":{"sources":null},"moe":[{"curve":{"x":null}}],"generation_attention":[{"rows":null}]}`), true},
		{"null top-level slice", []byte(`{"fp8_quant" : null }`), true},
		{"float into int", edit(`"format":1`, `"format":1.0`), false},
		{"exponent into int", edit(`"n":4096`, `"n":4e3`), false},
		{"int overflow", edit(`"k":4096,"site"`, `"k":99999999999999999999,"site"`), false},
		{"leading zero", edit(`"m":[1,`, `"m":[01,`), false},
		{"bare point", edit(`"m":[1,`, `"m":[.5,`), false},
		{"plus sign", edit(`"m":[1,`, `"m":[+1,`), false},
		{"float overflow", edit(`"m":[1,`, `"m":[1e400,`), false},
		{"NaN", edit(`"m":[1,`, `"m":[NaN,`), false},
		{"string for number", edit(`"n":4096`, `"n":"4096"`), false},
		{"number for string", edit(`"engine":"vllm"`, `"engine":7`), false},
		{"trailing bytes", []byte(base + "x"), false},
		{"two values", []byte(base + "{}"), false},
		{"truncated", []byte(base[:len(base)/2]), false},
		{"trailing comma", edit(`"ms":[0.01,0.02,0.03,0.04]`, `"ms":[0.01,0.02,0.03,0.04,]`), false},
		{"invalid UTF-8", edit(`"notice":"n`, "\"notice\":\"\xff"), false},
		{"control character", edit(`"notice":"n`, "\"notice\":\"\x01"), false},
		{"array at top", []byte(`[]`), false},
		{"null at top", []byte(`null`), false},
	} {
		checkFastDecode(t, c.name, c.in, c.fast)
	}
}

// checkFastDecode fails unless the fast reader takes in exactly when fast
// and then builds what json.Unmarshal builds, and Decode's outcome is the
// one json.Unmarshal's result leads to.
func checkFastDecode(t *testing.T, name string, in []byte, fast bool) {
	t.Helper()
	var want kernels.Table
	jerr := json.Unmarshal(in, &want)
	got, ok := kernels.DecodeFast(in)
	if ok != fast {
		t.Fatalf("%s: fast reader took it %v, want %v (json.Unmarshal error %v)", name, ok, fast, jerr)
	}
	if ok && (jerr != nil || !reflect.DeepEqual(*got, want)) {
		t.Fatalf("%s: fast reader's table differs from json.Unmarshal's (error %v)", name, jerr)
	}
	d, derr := kernels.Decode(in)
	switch {
	case jerr != nil && (derr == nil || !strings.Contains(derr.Error(), jerr.Error())):
		t.Fatalf("%s: Decode error %v, json.Unmarshal's %v", name, derr, jerr)
	case jerr == nil && derr == nil && d.GPU != want.GPU:
		t.Fatalf("%s: Decode read gpu %q, json.Unmarshal %q", name, d.GPU, want.GPU)
	}
}
