package main

import (
	"github.com/vugu/vugu"
	"github.com/vugu/vugu/js"
)

// The quick form on the page (ui/quick.go has its logic). The form keeps
// no state of its own: it is read from the editor's config, once per text.
var quickPage struct {
	text, msg string
	edited    string // the YAML the last accepted edit wrote
	trace     bool
	bad, has  bool
	form      QuickForm
}

// traceSelected reports whether Run replays a trace (a sample or a file),
// which replaces the config's source.
func (c *Root) traceSelected() bool { return c.TraceFile.Truthy() || c.Sample != "" }

// Quick is the form for the editor's config. While the YAML does not
// parse, the fields keep their last values, disabled.
func (c *Root) Quick() *QuickForm {
	p, tr := &quickPage, c.traceSelected()
	if p.has && p.text == c.Config && p.trace == tr {
		return &p.form
	}
	if p.has && c.Config != p.text && c.Config != p.edited {
		p.msg, p.bad = "", false // the YAML changed since: the message is stale
	}
	f := ReadQuick(c.Config, tr)
	if f.Err != "" && p.has {
		last := p.form
		for _, k := range quickKeys {
			fl := last.Field(k)
			fl.Disabled, fl.Title = true, f.Err
		}
		last.Err = f.Err
		f = last
	}
	p.text, p.trace, p.has, p.form = c.Config, tr, true, f
	return &p.form
}

// QuickMsg is the line under the form: what an edit also changed, or why
// it was refused. QuickBad marks a refusal.
func (c *Root) QuickMsg() string { return quickPage.msg }

// QuickBad reports whether QuickMsg is a refusal.
func (c *Root) QuickBad() bool { return quickPage.bad }

// OnQuick applies an edit of the field key to the editor's YAML.
func (c *Root) OnQuick(event vugu.DOMEvent, key string) {
	res, err := ApplyQuick(c.Config, key, event.PropString("target", "value"), c.traceSelected())
	if err != nil {
		quickPage.msg, quickPage.bad = err.Error(), true
		return
	}
	quickPage.msg, quickPage.bad, quickPage.edited = res.Note, false, res.YAML
	if res.ToSynthetic {
		c.Sample, c.TraceFile, c.TraceName, c.Notice = "", js.Undefined(), "", ""
	}
	if res.YAML != c.Config {
		c.Config, c.Preset = res.YAML, ""
		c.scheduleValidate(0)
	}
}

// syncQuick puts the form's values in its fields after a render. Vugu
// sets attributes, which a field the user has typed in no longer shows,
// so the values are set as properties, and only when the config's value
// changed (a field being typed in is left alone). The sample select and
// the trace file input follow a switch to a synthetic workload the same way.
func (c *Root) syncQuick() {
	doc := js.Global().Get("document")
	if !doc.Truthy() {
		return
	}
	f := c.Quick()
	for _, k := range quickKeys {
		el := doc.Call("getElementById", "quick-"+k)
		if !el.Truthy() {
			continue
		}
		v := f.Field(k).Value
		if last := el.Get("dynosimQuick"); last.Type() != js.TypeString || last.String() != v {
			el.Set("value", v)
			el.Set("dynosimQuick", v)
		}
	}
	if el := doc.Call("getElementById", "sample-select"); el.Truthy() && el.Get("value").String() != c.Sample {
		el.Set("value", c.Sample)
	}
	if el := doc.Call("getElementById", "trace-input"); el.Truthy() && !c.TraceFile.Truthy() && el.Get("value").String() != "" {
		el.Set("value", "")
	}
}
