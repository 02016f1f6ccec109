package engine

// deque is a FIFO with push-front, for waiting queues.
type deque[T any] struct {
	buf  []T
	head int
}

func (d *deque[T]) len() int     { return len(d.buf) - d.head }
func (d *deque[T]) front() T     { return d.buf[d.head] }
func (d *deque[T]) at(i int) T   { return d.buf[d.head+i] }
func (d *deque[T]) items() []T   { return d.buf[d.head:] }
func (d *deque[T]) pushBack(s T) { d.buf = append(d.buf, s) }

func (d *deque[T]) popFront() T {
	var zero T
	s := d.buf[d.head]
	d.buf[d.head] = zero
	d.head++
	if d.head == len(d.buf) {
		d.buf, d.head = d.buf[:0], 0
	} else if d.head > 1024 && d.head*2 > len(d.buf) {
		n := copy(d.buf, d.buf[d.head:])
		clear(d.buf[n:])
		d.buf, d.head = d.buf[:n], 0
	}
	return s
}

// remove deletes the item at i (O(n): for rare cancellations).
func (d *deque[T]) remove(i int) {
	var zero T
	i += d.head
	copy(d.buf[i:], d.buf[i+1:])
	d.buf[len(d.buf)-1] = zero
	d.buf = d.buf[:len(d.buf)-1]
	if d.head == len(d.buf) {
		d.buf, d.head = d.buf[:0], 0
	}
}

func (d *deque[T]) pushFront(s T) {
	if d.head > 0 {
		d.head--
		d.buf[d.head] = s
		return
	}
	var zero T
	d.buf = append(d.buf, zero)
	copy(d.buf[1:], d.buf)
	d.buf[0] = s
}
