package handoff

import (
	"errors"
	"slices"
	"strconv"
	"testing"
)

// reply is the fact a driver reports once it performed an action.
var reply = map[Action]Fact{
	SubmitPrefill: SourceHeld, ReserveDestination: DestinationReserved,
	StartTransfer: TransferCompleted, ActivateDestination: DestinationActivated,
	ReleaseSource: SourceReleased, CancelSource: SourceCleaned, CancelDestination: DestinationCleaned,
}

// driver is a tiny fake event loop: each action queues its reply fact, and
// the trace records the normalized lifecycle of the conformance fixture.
type driver struct {
	t     *testing.T
	m     Machine
	queue []Fact
	trace []string
}

func newDriver(t *testing.T, o Order) *driver {
	d := &driver{t: t}
	m, acts := Start(o)
	d.m = m
	d.perform(acts)
	return d
}

func (d *driver) perform(acts Actions) {
	if ends := acts.Len() > 0 && acts.At(acts.Len()-1) == Complete; ends != d.m.Done() {
		d.t.Fatalf("Complete in %v but Done()=%v", acts, d.m.Done())
	}
	for i := 0; i < acts.Len(); i++ {
		switch a := acts.At(i); a {
		case Complete:
			d.trace = append(d.trace, "Completed")
		case ReserveDestination:
			d.trace = append(d.trace, "DestinationAccepted")
			d.queue = append(d.queue, reply[a])
		default:
			d.queue = append(d.queue, reply[a])
		}
	}
}

func (d *driver) feed(f Fact) {
	acts, err := d.m.Apply(f)
	if err != nil {
		d.t.Fatalf("Apply(%v) after trace %v: %v", f, d.trace, err)
	}
	switch f {
	case SourceHeld, DestinationReserved, DestinationActivated, SourceReleased:
		d.trace = append(d.trace, f.String())
	}
	d.perform(acts)
}

// step delivers one queued fact: the oldest (in-flight facts first) or the
// newest (cleanup facts before late in-flight ones).
func (d *driver) step(newest bool) {
	if len(d.queue) == 0 {
		d.t.Fatalf("stuck: nothing queued, trace %v", d.trace)
	}
	i := 0
	if newest {
		i = len(d.queue) - 1
	}
	f := d.queue[i]
	d.queue = slices.Delete(d.queue, i, i+1)
	d.feed(f)
}

// run drives until Complete; facts still queued then are dropped, as the
// package contract asks of a driver.
func (d *driver) run(newest bool) {
	for !d.m.Done() {
		d.step(newest)
	}
}

func TestCoordinatedLifecycleConformance(t *testing.T) { // §7.5 expected normalized lifecycles
	for _, tc := range []struct {
		order Order
		want  []string
	}{
		{SourceFirst, []string{"SourceHeld", "DestinationAccepted", "DestinationReserved", "DestinationActivated", "SourceReleased", "Completed"}},
		{DestinationFirst, []string{"DestinationAccepted", "DestinationReserved", "SourceHeld", "DestinationActivated", "SourceReleased", "Completed"}},
	} {
		t.Run(tc.order.String(), func(t *testing.T) {
			d := newDriver(t, tc.order)
			d.run(false)
			if !slices.Equal(d.trace, tc.want) {
				t.Errorf("lifecycle = %v, want %v", d.trace, tc.want)
			}
			if d.m.Outcome() != OutcomeSuccess || d.m.Holding() || d.m.Reserved() || len(d.queue) != 0 {
				t.Errorf("outcome %v holding %v reserved %v queue %v", d.m.Outcome(), d.m.Holding(), d.m.Reserved(), d.queue)
			}
		})
	}
}

func TestCancellationReleasesHoldsAndReservations(t *testing.T) { // §7.4/§7.5 cleanup mode
	for _, order := range []Order{SourceFirst, DestinationFirst} {
		for _, failure := range []Fact{Failed, TimedOut, Canceled} {
			for _, newest := range []bool{false, true} {
				// k facts delivered before the failure: every state short of Done.
				for k := 0; ; k++ {
					d := newDriver(t, order)
					for range k {
						d.step(false)
					}
					if d.m.Done() {
						if k != 5 { // held, reserved, transferred, activated, released
							t.Errorf("%v: Done after %d facts, want 5", order, k)
						}
						break
					}
					name := order.String() + "/" + failure.String() + "/after" + strconv.Itoa(k)
					d.feed(failure)
					d.feed(failure) // a failure during cleanup is ignored
					d.run(newest)
					if d.m.Outcome() != OutcomeCanceled || d.m.Holding() || d.m.Reserved() {
						t.Errorf("%s newest=%v: outcome %v holding %v reserved %v trace %v",
							name, newest, d.m.Outcome(), d.m.Holding(), d.m.Reserved(), d.trace)
					}
				}
			}
		}
	}
}

func TestFailureCleanupActions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		order  Order
		prefix []Fact
		want   string
	}{
		{"prefill running is canceled", SourceFirst, nil, "[CancelSource]"},
		{"source-first held, reserve pending", SourceFirst, []Fact{SourceHeld}, "[CancelSource CancelDestination]"},
		{"destination-first reserve pending", DestinationFirst, nil, "[CancelDestination]"},
		{"during transfer", DestinationFirst, []Fact{DestinationReserved, SourceHeld}, "[CancelSource CancelDestination]"},
		{"activation pending: source only", SourceFirst, []Fact{SourceHeld, DestinationReserved, TransferCompleted}, "[CancelSource]"},
		{"release pending: nothing to cancel", SourceFirst, []Fact{SourceHeld, DestinationReserved, TransferCompleted, DestinationActivated}, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := Start(tc.order)
			for _, f := range tc.prefix {
				if _, err := m.Apply(f); err != nil {
					t.Fatalf("prefix %v: %v", f, err)
				}
			}
			acts, err := m.Apply(Failed)
			if err != nil || acts.String() != tc.want {
				t.Errorf("Apply(Failed) = %v, %v; want %s", acts, err, tc.want)
			}
		})
	}
	var zero Machine // nothing was issued: Complete at once
	if acts, err := zero.Apply(Canceled); err != nil || acts.String() != "[Complete]" || zero.Outcome() != OutcomeCanceled {
		t.Errorf("zero Machine Apply(Canceled) = %v, %v, outcome %v", acts, err, zero.Outcome())
	}
}

func TestImpossibleFactsAreRejected(t *testing.T) {
	happy := []Fact{SourceHeld, DestinationReserved, TransferCompleted, DestinationActivated, SourceReleased}
	for _, tc := range []struct {
		name   string
		order  Order
		prefix []Fact
		fact   Fact
		want   error
	}{
		{"SourceHeld twice", SourceFirst, []Fact{SourceHeld}, SourceHeld, ErrImpossible},
		{"reserved before ReserveDestination", SourceFirst, nil, DestinationReserved, ErrImpossible},
		{"held before SubmitPrefill", DestinationFirst, nil, SourceHeld, ErrImpossible},
		{"TransferCompleted before StartTransfer", SourceFirst, []Fact{SourceHeld}, TransferCompleted, ErrImpossible},
		{"TransferCompleted twice", SourceFirst, happy[:3], TransferCompleted, ErrImpossible},
		{"activated before ActivateDestination", SourceFirst, happy[:2], DestinationActivated, ErrImpossible},
		{"released before ReleaseSource", SourceFirst, happy[:3], SourceReleased, ErrImpossible},
		{"SourceCleaned without CancelSource", SourceFirst, []Fact{SourceHeld}, SourceCleaned, ErrImpossible},
		{"DestinationCleaned without CancelDestination", SourceFirst, []Fact{Failed}, DestinationCleaned, ErrImpossible},
		{"zero Fact", SourceFirst, nil, 0, ErrImpossible},
		{"unknown Fact", SourceFirst, nil, 200, ErrImpossible},
		{"after Complete(Success)", SourceFirst, happy, SourceHeld, ErrDone},
		{"failure after Complete(Success)", SourceFirst, happy, TimedOut, ErrDone},
		{"after Complete(Canceled)", SourceFirst, []Fact{Failed, SourceCleaned}, Canceled, ErrDone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := Start(tc.order)
			for _, f := range tc.prefix {
				if _, err := m.Apply(f); err != nil {
					t.Fatalf("prefix %v: %v", f, err)
				}
			}
			before := m
			acts, err := m.Apply(tc.fact)
			if !errors.Is(err, tc.want) || acts.Len() != 0 || m != before {
				t.Errorf("Apply(%v) = %v, %v (state changed: %v); want %v", tc.fact, acts, err, m != before, tc.want)
			}
		})
	}
}

func TestApplyDoesNotAllocate(t *testing.T) {
	happy := []Fact{SourceHeld, DestinationReserved, TransferCompleted, DestinationActivated, SourceReleased, SourceHeld}
	if n := testing.AllocsPerRun(100, func() {
		m, _ := Start(SourceFirst)
		for _, f := range happy {
			m.Apply(f) //nolint:errcheck // the last one is ErrDone on purpose
		}
	}); n != 0 {
		t.Errorf("allocs per handoff = %v, want 0", n)
	}
}

func TestStrings(t *testing.T) {
	if s := Fact(99).String() + Action(0).String() + DestinationFirst.String() + OutcomeCanceled.String(); s != "Fact(99)Action(0)DestinationFirstCanceled" {
		t.Errorf("got %q", s)
	}
}

// FuzzMachine feeds random facts: a byte < 128 is a raw (often impossible)
// fact, a byte >= 128 delivers one queued reply of an issued action, so deep
// states are reached too.
func FuzzMachine(f *testing.F) {
	f.Add([]byte{0, 128, 128, 128, 128, 128})
	f.Add([]byte{1, 128, 6, 128, 128, 128})
	f.Add([]byte{0, 128, 128, 7, 8, 128, 129, 130})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		var queue []Fact
		check := func(m *Machine, acts Actions) {
			for i := 0; i < acts.Len(); i++ {
				if a := acts.At(i); a != Complete {
					queue = append(queue, reply[a])
				} else if i != acts.Len()-1 || !m.Done() || m.Outcome() == OutcomePending || m.Holding() || m.Reserved() {
					t.Fatalf("Complete in %v: done %v outcome %v holding %v reserved %v", acts, m.Done(), m.Outcome(), m.Holding(), m.Reserved())
				}
			}
			if m.Done() != (m.Outcome() != OutcomePending) {
				t.Fatalf("Done %v but outcome %v", m.Done(), m.Outcome())
			}
		}
		m, acts := Start(Order(data[0] & 1))
		check(&m, acts)
		for _, b := range data[1:] {
			fact := Fact(b % 12)
			if b >= 128 && len(queue) > 0 {
				i := int(b) % len(queue)
				fact = queue[i]
				queue = slices.Delete(queue, i, i+1)
			}
			wasDone, before := m.Done(), m
			acts, err := m.Apply(fact)
			if wasDone && !errors.Is(err, ErrDone) {
				t.Fatalf("Apply(%v) after Done: err %v", fact, err)
			}
			if err != nil && (m != before || acts.Len() != 0) {
				t.Fatalf("rejected Apply(%v) changed state or returned %v", fact, acts)
			}
			check(&m, acts)
		}
	})
}
