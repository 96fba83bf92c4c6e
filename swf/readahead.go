package swf

import "io"

// readaheadSize is the block readahead inflates at a time.
const readaheadSize = 256 << 10

// readahead inflates a gzipped log one block ahead of the parser: while
// the caller scans and parses a block, a goroutine inflates the next one
// into the other of two buffers, so that on two cores inflating (a third
// of reading the full SDSC-SP2 log) overlaps parsing. At most one read of
// the source is under way at a time, and it ends on its own (its result
// goes to a channel with room for it), so a reader left unfinished leaves
// nothing behind.
type readahead struct {
	src   io.Reader
	next  chan block
	bufs  [2][]byte
	which int
	cur   []byte // what is left of the block being read
	err   error  // the source's error after cur, once received
}

type block struct {
	b   []byte
	err error
}

func newReadahead(src io.Reader) *readahead {
	ra := &readahead{src: src, next: make(chan block, 1)}
	ra.bufs = [2][]byte{make([]byte, readaheadSize), make([]byte, readaheadSize)}
	ra.fetch()
	return ra
}

// fetch starts inflating the next block into the buffer not in use.
func (ra *readahead) fetch() {
	buf := ra.bufs[ra.which]
	ra.which ^= 1
	go func() {
		n, err := io.ReadFull(ra.src, buf)
		if err == io.ErrUnexpectedEOF {
			err = io.EOF // a short last block
		}
		ra.next <- block{buf[:n], err}
	}()
}

func (ra *readahead) Read(p []byte) (int, error) {
	for len(ra.cur) == 0 {
		if ra.err != nil {
			return 0, ra.err
		}
		blk := <-ra.next
		ra.cur, ra.err = blk.b, blk.err
		if ra.err == nil {
			ra.fetch()
		}
	}
	n := copy(p, ra.cur)
	ra.cur = ra.cur[n:]
	return n, nil
}
