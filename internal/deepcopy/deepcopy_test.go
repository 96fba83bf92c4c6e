package deepcopy

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

type node struct {
	name  string
	next  *node
	vals  []int
	inner struct{ p *int }
}

type state struct {
	a, b    *node
	items   []item
	head    *item // points into items
	window  []item
	flat    []int
	parts   [][]int // carved out of flat
	byName  map[string]*node
	again   map[string]*node // the same map as byName
	iface   any
	ifaceP  any
	arr     [2]*node
	f       func() int
	counter int
}

type item struct {
	id  int
	tag *string
}

func build() *state {
	n1 := &node{name: "one", vals: []int{1, 2, 3}}
	n2 := &node{name: "two", next: n1}
	n1.next = n2 // a cycle
	x := 7
	n1.inner.p = &x
	tag := "t"
	s := &state{a: n1, b: n1, items: make([]item, 3, 8)}
	for i := range s.items {
		s.items[i] = item{id: i, tag: &tag}
	}
	s.head = &s.items[1]
	s.window = s.items[1:3]
	s.flat = make([]int, 6)
	s.parts = [][]int{s.flat[0:2:2], s.flat[2:6]}
	s.byName = map[string]*node{"one": n1, "two": n2}
	s.again = s.byName
	s.iface = item{id: 9, tag: &tag}
	s.ifaceP = n2
	s.arr = [2]*node{n2, n1}
	return s
}

func TestCopyPreservesAliasing(t *testing.T) {
	s := build()
	c, err := Copy(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c == s || c.a == s.a || c.a != c.b || c.a.next.next != c.a || c.arr[1] != c.a || c.arr[0] != c.a.next {
		t.Fatal("pointers: not copied, or aliasing lost")
	}
	if c.ifaceP.(*node) != c.a.next || c.byName["one"] != c.a || c.byName["two"] != c.a.next {
		t.Fatal("interface or map pointers do not point into the copy")
	}
	if c.head != &c.items[1] || &c.window[0] != &c.items[1] || cap(c.items) != 8 || len(c.items) != 3 {
		t.Fatal("a pointer into a slice, or a subslice, does not alias the copied array")
	}
	if &c.parts[1][0] != &c.flat[2] || cap(c.parts[0]) != 2 {
		t.Fatal("slices carved from one array do not share the copy")
	}
	if *c.a.inner.p != 7 || c.a.inner.p == s.a.inner.p || *c.items[0].tag != "t" || c.items[0].tag == s.items[0].tag || c.items[0].tag != c.items[2].tag {
		t.Fatal("nested pointers")
	}
	// The copy is independent: writing one leaves the other alone, and a
	// write through one alias is seen through the other.
	c.head.id = 100
	c.flat[3] = 5
	c.byName["three"] = c.a
	c.items = append(c.items, item{id: 3})
	if s.items[1].id != 1 || s.flat[3] != 0 || len(s.byName) != 2 || c.items[1].id != 100 || c.window[0].id != 100 || c.parts[1][1] != 5 || len(c.again) != 3 {
		t.Fatal("the copy is not independent, or its aliases diverged")
	}
	if !reflect.DeepEqual(c.iface, item{id: 9, tag: c.iface.(item).tag}) || *c.iface.(item).tag != "t" {
		t.Fatalf("interface value %+v", c.iface)
	}
	if len(s.items) != 3 || len(c.items) != 4 || &c.items[0] == &s.items[0] {
		t.Fatal("append on the copy")
	}
}

func TestCopyFuncs(t *testing.T) {
	s := build()
	s.f = func() int { return s.counter }
	if _, err := Copy(s, Options{}); err == nil {
		t.Fatal("a closure was copied without DropFuncs")
	}
	c, err := Copy(s, Options{DropFuncs: true})
	if err != nil || c.f != nil {
		t.Fatalf("DropFuncs: %v, f nil %v", err, c.f == nil)
	}
	type withChan struct{ ch chan int }
	if _, err := Copy(&withChan{ch: make(chan int)}, Options{DropFuncs: true}); err == nil {
		t.Fatal("a channel was copied")
	}
}

// On random graphs of slices, subslices and pointers into them, the copy
// mirrors the original: the same values, and two references alias in the
// copy exactly when they alias in the original.
func TestCopyMirrorsRandomGraphs(t *testing.T) {
	type holder struct {
		slices [][]int
		ptrs   []*int
	}
	rapid.Check(t, func(t *rapid.T) {
		h := &holder{}
		nArr := rapid.IntRange(1, 4).Draw(t, "arrays")
		var arrays [][]int
		for range nArr {
			arrays = append(arrays, make([]int, rapid.IntRange(1, 10).Draw(t, "len")))
		}
		for range rapid.IntRange(0, 8).Draw(t, "slices") {
			a := arrays[rapid.IntRange(0, nArr-1).Draw(t, "array")]
			lo := rapid.IntRange(0, len(a)-1).Draw(t, "lo")
			hi := rapid.IntRange(lo, len(a)).Draw(t, "hi")
			mx := rapid.IntRange(hi, len(a)).Draw(t, "max")
			h.slices = append(h.slices, a[lo:hi:mx])
		}
		for range rapid.IntRange(0, 8).Draw(t, "pointers") {
			a := arrays[rapid.IntRange(0, nArr-1).Draw(t, "array")]
			h.ptrs = append(h.ptrs, &a[rapid.IntRange(0, len(a)-1).Draw(t, "at")])
		}
		for i, a := range arrays {
			for j := range a {
				a[j] = 100*i + j
			}
		}
		c, err := Copy(h, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Write a distinct value through every reference of the copy in
		// turn, and check that the same reference of the original sees the
		// same other references change.
		refs := func(x *holder) []*int {
			var out []*int
			for _, s := range x.slices {
				s = s[:cap(s)]
				for k := range s {
					out = append(out, &s[k])
				}
			}
			return append(out, x.ptrs...)
		}
		ro, rc := refs(h), refs(c)
		for i := range ro {
			if *ro[i] != *rc[i] || ro[i] == rc[i] {
				t.Fatalf("reference %d: %d in the original, %d in the copy (same address %v)", i, *ro[i], *rc[i], ro[i] == rc[i])
			}
			for j := range ro {
				if (ro[i] == ro[j]) != (rc[i] == rc[j]) {
					t.Fatalf("references %d and %d: aliased %v in the original, %v in the copy", i, j, ro[i] == ro[j], rc[i] == rc[j])
				}
			}
		}
	})
}

// recursive is a type no other test copies first, so that the copy
// plans below are built by the racing copies themselves.
type recursive struct {
	kids []*recursive
	up   *recursive
	tags map[string][]int
}

// Copies made at once from several goroutines share the process's copy
// plans (plans): each is whole and right, and under -race the plans'
// publication is checked for data races.
func TestCopyConcurrent(t *testing.T) {
	root := &recursive{tags: map[string][]int{"a": {1, 2}}}
	for range 3 {
		root.kids = append(root.kids, &recursive{up: root, tags: map[string][]int{"b": {3}}})
	}
	const n = 8
	errs := make(chan error, n)
	copies := make(chan *recursive, n)
	for range n {
		go func() {
			c, err := Copy(root, Options{})
			errs <- err
			copies <- c
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		c := <-copies
		if c == root || len(c.kids) != 3 || c.kids[0].up != c || c.kids[2].tags["b"][0] != 3 || c.tags["a"][1] != 2 || c.kids[1] == root.kids[1] {
			t.Fatalf("a concurrent copy is wrong: %+v", c)
		}
	}
}

// Replace: a graph that hangs off an object the caller copies itself
// points to the caller's copy, and the replaced object is not copied.
func TestCopyReplaces(t *testing.T) {
	type owner struct{ n int }
	type part struct {
		own  *owner
		also *owner
		vals []int
	}
	o, o2 := &owner{n: 1}, &owner{n: 2}
	p := &part{own: o, also: o, vals: []int{1, 2}}
	c, err := Copy(p, Options{Replace: map[any]any{o: o2}})
	if err != nil {
		t.Fatal(err)
	}
	if c.own != o2 || c.also != o2 || o.n != 1 || &c.vals[0] == &p.vals[0] {
		t.Fatalf("replaced pointers %p %p, want %p", c.own, c.also, o2)
	}
	if _, err := Copy(p, Options{Replace: map[any]any{o: 3}}); err == nil {
		t.Fatal("a replacement of another type was accepted")
	}
}
