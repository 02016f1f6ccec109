package metrics

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/glossary.md")

// docs/glossary.md is the glossary and the table's metrics as the page
// shows them; this test keeps it generated from Glossary and Rows/Lines.
func TestGlossaryDoc(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Glossary\n\n<!-- Generated from core/report/metrics by `go test ./core/report/metrics -update`; the page's help section and tooltips show the same text. -->\n\n")
	for _, g := range Glossary {
		b.WriteString("- **" + g.Name + "**: " + g.Text + "\n")
	}
	b.WriteString("\n## The AIPerf table\n\nColumns: ")
	for i, c := range Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Head + " (`" + string(c.Prefix) + "_…`)")
	}
	b.WriteString(".\n\n| metric | summary keys | meaning |\n| --- | --- | --- |\n")
	for _, r := range Rows {
		b.WriteString("| " + r.Label + " | `*_" + r.Key + "` | " + r.Help + " |\n")
	}
	for _, r := range Lines {
		b.WriteString("| " + r.Label + " | `" + r.Key + "` | " + r.Help + " |\n")
	}
	const path = "../../../docs/glossary.md"
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != b.String() {
		t.Fatalf("%s is out of date with core/report/metrics (%v); run: go test ./core/report/metrics -update", path, err)
	}
}
