package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/metrics"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// requestColumns is the display order of per-request fields; unknown fields
// follow in the order they first appear.
var requestColumns = []string{
	schema.RecordUUID, schema.RecordWorker, schema.RecordArrivalTimeMs, schema.RecordInputLength, schema.RecordOutputLength,
	schema.RecordReusedInputTokens, schema.RecordTTFTMs, schema.RecordITLMs, schema.RecordE2ELatencyMs, schema.RecordTerminalStatus,
}

// breakdownField is the per-request TTFT breakdown: an object of parts
// (null without a first token). It is no column: the table would show one
// huge cell. The selected request's bar reads it, and the CSV flattens it
// into one column per part.
const breakdownField = schema.RecordTTFTBreakdownMs

// RequestTable holds parsed per-request records for the paged, sortable
// table. Only one page of rows is ever put in the DOM.
type RequestTable struct {
	Columns []string
	Rows    [][]cell
	SortCol int
	SortAsc bool
	Page    int
	UUIDCol int // the uuid column, -1 without one

	// Breakdown is each request's ttft_breakdown_ms by uuid (a nil map:
	// no first token); parts lists their keys in first-seen order.
	Breakdown map[string]map[string]float64
	parts     []string
}

type cell struct {
	s   string
	num float64
	isN bool
}

// PageSize is the number of rows rendered at once.
const PageSize = 50

// parseRequests reads the per-request JSONL the simulator emits.
func parseRequests(jsonl []byte) (*RequestTable, error) { return parseRequestsText(string(jsonl)) }

// parseRequestsText reads the per-request JSONL from a string; the cells
// are substrings of it (see reqscan.go). The columns are the first
// record's keys: the known ones in requestColumns' order, then the others
// in theirs.
func parseRequestsText(jsonl string) (*RequestTable, error) {
	t := &RequestTable{SortCol: -1, SortAsc: true, UUIDCol: -1}
	var (
		fields, sub []jsonField
		colOf       map[string]int
		err         error
	)
	n := 0
	for rest := jsonl; rest != ""; {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		n++
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if fields, err = scanObject(line, fields); err != nil {
			return nil, fmt.Errorf("requests.jsonl:%d: %v", n, err)
		}
		if colOf == nil {
			colOf = t.columnsOf(fields)
		}
		row := make([]cell, len(t.Columns))
		bd := ""
		for _, f := range fields {
			if i, ok := colOf[f.key]; ok {
				row[i] = scanCell(f.raw)
			} else if f.key == breakdownField {
				bd = f.raw
			}
		}
		t.Rows = append(t.Rows, row)
		if bd != "" && t.UUIDCol >= 0 {
			var parts map[string]float64
			if parts, sub, err = scanParts(bd, sub); err != nil {
				return nil, fmt.Errorf("requests.jsonl:%d: %s: %v", n, breakdownField, err)
			}
			if t.Breakdown == nil {
				t.Breakdown = map[string]map[string]float64{}
			}
			t.Breakdown[row[t.UUIDCol].s] = parts
			for _, f := range sub {
				if !slices.Contains(t.parts, f.key) {
					t.parts = append(t.parts, f.key)
				}
			}
		}
	}
	// the parts in the order they happen (map iteration order is random)
	slices.SortStableFunc(t.parts, func(a, b string) int {
		_, i := partInfo(a)
		_, j := partInfo(b)
		if i == j {
			return strings.Compare(a, b)
		}
		return i - j
	})
	return t, nil
}

// columnsOf sets t's columns from the first record's fields and returns
// each column's index by key.
func (t *RequestTable) columnsOf(fields []jsonField) map[string]int {
	has := func(k string) bool {
		return slices.ContainsFunc(fields, func(f jsonField) bool { return f.key == k })
	}
	for _, c := range requestColumns {
		if has(c) {
			t.Columns = append(t.Columns, c)
		}
	}
	for _, f := range fields {
		if !slices.Contains(t.Columns, f.key) && f.key != breakdownField {
			t.Columns = append(t.Columns, f.key)
		}
	}
	t.UUIDCol = slices.Index(t.Columns, schema.RecordUUID)
	colOf := make(map[string]int, len(t.Columns))
	for i, c := range t.Columns {
		colOf[c] = i
	}
	return colOf
}

// UUID is the uuid of a displayed row ("" without a uuid column).
func (t *RequestTable) UUID(row []string) string {
	if t.UUIDCol < 0 || t.UUIDCol >= len(row) {
		return ""
	}
	return row[t.UUIDCol]
}

func parseCell(raw json.RawMessage) cell {
	if len(raw) == 0 {
		return cell{}
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return cell{s: s}
	}
	if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
		return cell{s: string(raw), num: f, isN: true}
	}
	return cell{s: string(raw)}
}

// HasUUID reports whether a request of the table has uuid id.
func (t *RequestTable) HasUUID(id string) bool {
	if t.UUIDCol < 0 {
		return false
	}
	for _, r := range t.Rows {
		if r[t.UUIDCol].s == id {
			return true
		}
	}
	return false
}

// UUIDRange says which ids the table has: "its ids go from 1 to 1,000".
func (t *RequestTable) UUIDRange() string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range t.Rows {
		if c := r[max(0, t.UUIDCol)]; c.isN {
			lo, hi = math.Min(lo, c.num), math.Max(hi, c.num)
		}
	}
	if lo > hi {
		return "it has no requests"
	}
	return "its ids go from " + metrics.Format(lo) + " to " + metrics.Format(hi)
}

// Sort orders rows by column col; sorting by the same column again flips
// the direction. The sort is stable, so ties keep their previous order.
func (t *RequestTable) Sort(col int) {
	if col == t.SortCol {
		t.SortAsc = !t.SortAsc
	} else {
		t.SortCol, t.SortAsc = col, true
	}
	asc := t.SortAsc
	slices.SortStableFunc(t.Rows, func(a, b []cell) int {
		x, y := a[col], b[col]
		var r int
		if x.isN && y.isN {
			switch {
			case x.num < y.num:
				r = -1
			case x.num > y.num:
				r = 1
			}
		} else {
			r = strings.Compare(x.s, y.s)
		}
		if !asc {
			r = -r
		}
		return r
	})
	t.Page = 0
}

// Pages is the number of pages.
func (t *RequestTable) Pages() int { return max(1, (len(t.Rows)+PageSize-1)/PageSize) }

// PageRows returns the rows of the current page as display strings.
func (t *RequestTable) PageRows() [][]string {
	lo := min(t.Page*PageSize, len(t.Rows))
	hi := min(lo+PageSize, len(t.Rows))
	out := make([][]string, 0, hi-lo)
	for _, r := range t.Rows[lo:hi] {
		row := make([]string, len(r))
		for i, c := range r {
			if c.isN && c.num != float64(int64(c.num)) {
				row[i] = strconv.FormatFloat(c.num, 'f', 3, 64)
			} else {
				row[i] = c.s
			}
		}
		out = append(out, row)
	}
	return out
}

// SetPage moves to page p, clamped to the valid range.
func (t *RequestTable) SetPage(p int) { t.Page = max(0, min(p, t.Pages()-1)) }

// CSV renders every row (in the current order) as CSV, the TTFT breakdown
// as one ttft_breakdown_ms.<part> column per part (empty without a first
// token).
func (t *RequestTable) CSV() string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	head := slices.Clone(t.Columns)
	for _, p := range t.parts {
		head = append(head, breakdownField+"."+p)
	}
	_ = w.Write(head)
	for _, r := range t.Rows {
		rec := make([]string, len(r), len(head))
		for i, c := range r {
			rec[i] = c.s
		}
		if len(t.parts) > 0 {
			bd := t.Breakdown[r[t.UUIDCol].s]
			for _, p := range t.parts {
				v, ok := bd[p]
				if !ok {
					rec = append(rec, "")
					continue
				}
				rec = append(rec, strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
		_ = w.Write(rec)
	}
	w.Flush()
	return b.String()
}
