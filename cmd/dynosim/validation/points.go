// Package validation replays public end-to-end serving measurements through
// the whole simulator (config → engines → report) and compares the
// predicted mean TTFT and TPOT with the measured ones. It writes
// docs/validation.md; its test fails when that file is stale.
//
// The measurements are AIConfigurator's silicon_sample.csv (fixed-concurrency
// runs with fixed ISL/OSL; testdata/aic_silicon_dense.csv holds its rows for
// the dense models our catalog prices, byte-identical) and BLIS's 15 H100
// open-loop runs (blis.go). The Llama-3.1-70B rows are InferenceMAX's and
// are also replayed with its published protocol (inferencemax.go).
package validation

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

//go:embed testdata/aic_silicon_dense.csv
var aicCSV []byte

// Point is one measured serving point at fixed concurrency.
type Point struct {
	ID          string
	Provenance  string // silicon_data_source: the measurement's origin (source_file, model, measured date)
	Model       string // our catalog name
	Checkpoint  string // the measured model_path
	GPU         string // our catalog name
	Backend     string // vllm | sglang | trtllm
	Version     string // engine version ("" when the row does not say)
	DType       string // weights and GEMMs: bf16 | fp8 | fp4
	TP          int
	ISL, OSL    int
	Concurrency int
	TTFTMs      float64 // measured mean TTFT
	TPOTMs      float64 // measured mean TPOT
}

// Group is the key docs/validation.md aggregates by.
func (p Point) Group() string {
	return fmt.Sprintf("%s · %s · %s %s · %s · TP%d", p.GPU, p.Model, p.Backend, p.Version, p.DType, p.TP)
}

// checkpoints maps a measured model_path to our catalog name and the
// checkpoint's own dtype.
var checkpoints = map[string]struct{ model, dtype string }{
	"meta-llama/Llama-3.1-8B-Instruct": {"llama-3.1-8b", "bf16"},
	"nvidia/Llama-3.1-8B-Instruct-FP8": {"llama-3.1-8b", "fp8"},
	"meta-llama/Llama-3.1-70B":         {"llama-3.1-70b", "bf16"},
	"Qwen/Qwen3-32B":                   {"qwen3-32b", "bf16"},
	"nvidia/Qwen3-32B-NVFP4":           {"qwen3-32b", "fp4"},
}

var systems = map[string]string{"h100_sxm": "h100_sxm", "h200_sxm": "h200_sxm", "b200_sxm": "b200"}

// AICPoints parses the embedded AIConfigurator rows.
func AICPoints() ([]Point, error) { return parseAIC("aic_silicon_dense.csv", aicCSV) }

func parseAIC(name string, data []byte) ([]Point, error) {
	r := csv.NewReader(bytes.NewReader(data))
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, k := range []string{"id", "silicon_data_source", "backend", "backend_version", "model_path", "system", "precision", "gemm_quant_mode", "isl", "osl", "batch_size", "tp_size", "silicon_ttft_ms", "silicon_tpot_ms"} {
		if _, ok := col[k]; !ok {
			return nil, fmt.Errorf("%s: no column %q", name, k)
		}
	}
	var out []Point
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err != nil {
			if err == io.EOF {
				return out, nil
			}
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		get := func(k string) string { return rec[col[k]] }
		ck, ok := checkpoints[get("model_path")]
		if !ok {
			return nil, fmt.Errorf("%s:%d: model_path: %q is not priced", name, line, get("model_path"))
		}
		gpu, ok := systems[get("system")]
		if !ok {
			return nil, fmt.Errorf("%s:%d: system: %q is not in the catalog", name, line, get("system"))
		}
		p := Point{ID: get("id"), Provenance: get("silicon_data_source"), Model: ck.model, Checkpoint: get("model_path"), GPU: gpu,
			Backend: get("backend"), Version: get("backend_version"), DType: ck.dtype}
		switch q := get("precision"); q {
		case "":
		case "fp8", "fp4", "bf16":
			p.DType = q
		default:
			return nil, fmt.Errorf("%s:%d: precision: %q is not priced", name, line, q)
		}
		ints := []struct {
			k string
			v *int
		}{{"isl", &p.ISL}, {"osl", &p.OSL}, {"batch_size", &p.Concurrency}, {"tp_size", &p.TP}}
		for _, f := range ints {
			if *f.v, err = strconv.Atoi(get(f.k)); err != nil || *f.v < 1 {
				return nil, fmt.Errorf("%s:%d: %s: want an integer ≥ 1, got %q", name, line, f.k, get(f.k))
			}
		}
		for _, f := range []struct {
			k string
			v *float64
		}{{"silicon_ttft_ms", &p.TTFTMs}, {"silicon_tpot_ms", &p.TPOTMs}} {
			if *f.v, err = strconv.ParseFloat(get(f.k), 64); err != nil || !(*f.v > 0) {
				return nil, fmt.Errorf("%s:%d: %s: want a time > 0, got %q", name, line, f.k, get(f.k))
			}
		}
		out = append(out, p)
	}
}
