package main

import (
	"fmt"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/deploy"
	"github.com/dynosim/dynosim-web/core/recommend"
)

// deployFiles are one candidate's deploy files (core/deploy), as
// `dynosim recommend --output-dir` writes them to deploy/NNNN/ (issue 32
// item 7: the page's Deploy card downloads the best candidate's).
type deployFiles struct {
	ID     string // the candidate
	Dir    string // deploy/NNNN for a recommended candidate; "" for a best outside the view
	Launch string // launch.sh
	DGD    string // dgd.yaml
	Error  string // why the files cannot express it (the CLI's stderr note)
}

// recommendDeploys renders the deploy files of the ledger's recommended
// candidates, in the CLI's order and from the same recommendations/NNNN.yaml
// text (the CLI's makes file paths absolute, which neither file reads), and
// of its best pick when the view does not hold it (a closest candidate
// that is not ranked).
func recommendDeploys(sp *recommend.Space, l *recommend.Ledger) ([]deployFiles, error) {
	var out []deployFiles
	seen := map[string]bool{}
	for i, e := range l.Recommended() {
		y, err := sp.RecommendationYAML(l, i, e, nil)
		if err != nil {
			return nil, err
		}
		d := renderDeploy(e.ID, y)
		d.Dir = fmt.Sprintf("deploy/%04d", i+1)
		out = append(out, d)
		seen[e.ID] = true
	}
	if l.Pick != nil && !seen[l.Pick.ID] {
		for _, e := range l.Candidates {
			if e.ID == l.Pick.ID {
				y, err := sp.YAML(e.Sets)
				if err != nil {
					return nil, err
				}
				out = append(out, renderDeploy(e.ID, y))
			}
		}
	}
	return out, nil
}

// renderDeploy is recommend --output-dir's writeDeploy without the files.
func renderDeploy(id string, y []byte) deployFiles {
	d := deployFiles{ID: id}
	cfg, err := config.Parse(id+".yaml", y, nil)
	if err == nil {
		var launch, dgd []byte
		if launch, dgd, err = deploy.Render(&cfg); err == nil {
			d.Launch, d.DGD = string(launch), string(dgd)
		}
	}
	if err != nil {
		d.Error = err.Error()
	}
	return d
}

// js is d as the page reads it.
func (d deployFiles) js() map[string]any {
	return map[string]any{"id": d.ID, "dir": d.Dir, "launch": d.Launch, "dgd": d.DGD, "error": d.Error}
}
