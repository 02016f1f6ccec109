package report

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/metrics"
)

// The parts metrics.TTFTParts names are the breakdown's JSON fields, in
// order: one list for the report, the table and the page.
func TestTTFTPartsAreTheBreakdownFields(t *testing.T) {
	x := 1.0
	b, err := json.Marshal(Breakdown{Onboarding: &x, KVTransferWait: &x, KVTransfer: &x, DecodeQueue: &x})
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		fields = append(fields, k.(string))
		var v any
		dec.Decode(&v)
	}
	var keys []string
	for _, p := range metrics.TTFTParts {
		keys = append(keys, p.Key)
	}
	if !slices.Equal(fields, keys) || len(keys) != nParts {
		t.Fatalf("Breakdown fields %v, metrics.TTFTParts %v", fields, keys)
	}
}
