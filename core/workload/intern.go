package workload

import "github.com/dynosim/dynosim-web/internal/idmap"

// interner numbers a trace's hash ids densely in first-seen order (issue
// 34 item 1). Mooncake traces number their hash blocks 0, 1, 2, … as they
// first appear, so ids below denseMax index a slice, read in order and
// four bytes each, where a hash table (16-byte entries, at most half full,
// rehashed as it grows) missed the cache on almost every id; larger ids go
// to the table. Which side a key takes depends on the key alone, so each
// key has one home and the numbering is the table's.
type interner struct {
	dense  []int32 // dense[v] is key v's number + 1; 0: not seen
	sparse idmap.Map
	n      int
}

// denseMax bounds the slice at 16 MiB, whatever a trace's ids.
const denseMax = 1 << 22

// id returns v's number, giving it the next one if v is new.
func (t *interner) id(v uint64) uint32 {
	if v >= denseMax {
		id, found := t.sparse.GetOrPut(v, int32(t.n))
		if !found {
			t.n++
		}
		return uint32(id)
	}
	if v >= uint64(len(t.dense)) {
		size := min(max(int(v)+1, 2*len(t.dense), 1024), denseMax)
		t.dense = append(t.dense, make([]int32, size-len(t.dense))...)
	}
	if d := t.dense[v]; d != 0 {
		return uint32(d - 1)
	}
	t.n++
	t.dense[v] = int32(t.n)
	return uint32(t.n - 1)
}

// Len is how many keys have a number.
func (t *interner) Len() int { return t.n }
