package kv

// idHeap is a binary min-heap of element ids (pool slots, radix nodes)
// ordered by (key, tie). It remembers where each id sits, so an element can
// leave or be re-keyed in O(log n): the lineage pool and the radix cache
// keep their evictable leaves in one, keyed by insertion tick or last access.
type idHeap struct {
	items []heapItem
	pos   []int32 // pos[id] = index in items, -1 when absent
}

type heapItem struct {
	key, tie uint64
	id       int32
}

func (h *idHeap) len() int { return len(h.items) }

// min returns the id with the smallest (key, tie); the heap must not be empty.
func (h *idHeap) min() int32 { return h.items[0].id }

func (h *idHeap) has(id int32) bool { return int(id) < len(h.pos) && h.pos[id] >= 0 }

// push adds id unless it is already in.
func (h *idHeap) push(id int32, key, tie uint64) {
	for int(id) >= len(h.pos) {
		h.pos = append(h.pos, -1)
	}
	if h.pos[id] >= 0 {
		return
	}
	h.items = append(h.items, heapItem{key: key, tie: tie, id: id})
	i := len(h.items) - 1
	h.pos[id] = int32(i)
	h.up(i)
}

// remove takes id out if it is in.
func (h *idHeap) remove(id int32) {
	if !h.has(id) {
		return
	}
	i, last := int(h.pos[id]), len(h.items)-1
	if i != last {
		h.swap(i, last)
	}
	h.items = h.items[:last]
	h.pos[id] = -1
	if i != last {
		h.fix(i)
	}
}

// rekey changes id's key if it is in.
func (h *idHeap) rekey(id int32, key uint64) {
	if !h.has(id) {
		return
	}
	i := int(h.pos[id])
	h.items[i].key = key
	h.fix(i)
}

func (h *idHeap) less(i, j int) bool {
	a, b := &h.items[i], &h.items[j]
	return a.key < b.key || a.key == b.key && a.tie < b.tie
}

func (h *idHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i].id] = int32(i)
	h.pos[h.items[j].id] = int32(j)
}

func (h *idHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *idHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.swap(i, p)
		i = p
	}
}

func (h *idHeap) down(i0 int) bool {
	i, n := i0, len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(r, l) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}
