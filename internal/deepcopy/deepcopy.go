// Package deepcopy copies a graph of Go values reachable from one pointer,
// preserving its aliasing: two pointers to one object in the original point
// to one object in the copy, two slices over one backing array share one
// array in the copy (at the same offsets, so that appending or reslicing
// behaves alike), a pointer into a slice's array points into the copied
// array, and a map referenced twice is copied once.
//
// It exists so that a policy's whole state — a pure state machine without
// goroutines, channels or clocks — can be forked: trace's fair start times
// (docs/studies.md §4.4, §6.17) run a copy of the policy on from a job's
// submit time with later arrivals withheld, instead of replaying from the
// start for every sampled job.
//
// The copy is made in two passes. The first walks the graph and records
// every memory region a pointer or a slice refers to (its address, its
// extent and its type); overlapping regions are merged into one object (a
// containing struct or array, or an array over the union of slices of one
// element type). The second allocates one new object per merged region and
// copies every value into it, mapping each old address to the same offset
// in the new object. Strings are shared (they are immutable). Channels and
// unsafe pointers are refused; functions are refused unless DropFuncs
// asks for them to be left nil in the copy (a closure bound to the old
// state would alias it).
package deepcopy

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"unsafe"
)

// Options are the copy's knobs.
type Options struct {
	// DropFuncs leaves every non-nil function nil in the copy instead of
	// refusing it: for state whose closures are caches rebuilt on demand.
	DropFuncs bool
}

// Copy returns a deep copy of the graph reachable from p.
func Copy[T any](p *T, opt Options) (*T, error) {
	if p == nil {
		return nil, nil
	}
	c := &copier{opt: opt, seen: map[seenKey]bool{}, maps: map[uintptr]reflect.Value{}, deep: map[reflect.Type]bool{}}
	root := reflect.ValueOf(p)
	if err := c.walk(root); err != nil {
		return nil, err
	}
	if err := c.merge(); err != nil {
		return nil, err
	}
	for i := range c.groups {
		g := &c.groups[i]
		src := reflect.NewAt(g.typ, g.old).Elem()
		dst := reflect.NewAt(g.typ, g.base).Elem()
		c.copyInto(dst, src)
	}
	out := reflect.New(root.Type()).Elem()
	c.copyInto(out, root)
	return out.Interface().(*T), nil
}

// region is memory a pointer or a slice refers to.
type region struct {
	ptr        unsafe.Pointer // the old object (addr, as a pointer)
	addr, size uintptr
	typ        reflect.Type // the object there: T for a *T, [cap]E for a slice
	elem       reflect.Type // E for a slice (or a pointer to one element), else nil
}

// group is a merged region: one object of the copy.
type group struct {
	old        unsafe.Pointer
	addr, size uintptr
	typ        reflect.Type
	base       unsafe.Pointer // the new object
}

type seenKey struct {
	addr uintptr
	typ  reflect.Type
}

type copier struct {
	opt     Options
	regions []region
	groups  []group
	seen    map[seenKey]bool
	maps    map[uintptr]reflect.Value // old map → its copy (pass 2), or a mark (pass 1)
	deep    map[reflect.Type]bool
}

// isDeep reports whether a value of type t holds references that need
// copying (pointers, slices, maps, interfaces, functions, channels).
func (c *copier) isDeep(t reflect.Type) bool {
	if d, ok := c.deep[t]; ok {
		return d
	}
	c.deep[t] = true // a recursive type refers to itself through a pointer
	d := false
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer:
		d = true
	case reflect.Array:
		d = t.Len() > 0 && c.isDeep(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if c.isDeep(t.Field(i).Type) {
				d = true
				break
			}
		}
	}
	c.deep[t] = d
	return d
}

// open makes v readable and, if addressable, writable even where it was
// reached through an unexported field.
func open(v reflect.Value) reflect.Value {
	if v.CanAddr() && !v.CanInterface() {
		return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	}
	return v
}

// walk is the first pass.
func (c *copier) walk(v reflect.Value) error {
	t := v.Type()
	if !c.isDeep(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() || t.Elem().Size() == 0 {
			return nil
		}
		addr := v.Pointer()
		et := t.Elem()
		c.regions = append(c.regions, region{ptr: v.UnsafePointer(), addr: addr, size: et.Size(), typ: et})
		if k := (seenKey{addr, et}); !c.seen[k] {
			c.seen[k] = true
			return c.walk(v.Elem())
		}
	case reflect.Slice:
		if v.IsNil() || v.Cap() == 0 || t.Elem().Size() == 0 {
			return nil
		}
		et := t.Elem()
		at := reflect.ArrayOf(v.Cap(), et)
		addr := v.Pointer()
		c.regions = append(c.regions, region{ptr: v.UnsafePointer(), addr: addr, size: at.Size(), typ: at, elem: et})
		if k := (seenKey{addr, at}); !c.seen[k] && c.isDeep(et) {
			c.seen[k] = true
			full := v.Slice3(0, v.Cap(), v.Cap())
			for i := range full.Len() {
				if err := c.walk(full.Index(i)); err != nil {
					return err
				}
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			if err := c.walk(v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if err := c.walk(v.Field(i)); err != nil {
				return fmt.Errorf("%s.%s: %w", t, t.Field(i).Name, err)
			}
		}
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		if _, ok := c.maps[v.Pointer()]; ok {
			return nil
		}
		c.maps[v.Pointer()] = reflect.Value{}
		it := v.MapRange()
		for it.Next() {
			if err := c.walk(it.Key()); err != nil {
				return err
			}
			if err := c.walk(it.Value()); err != nil {
				return err
			}
		}
	case reflect.Interface:
		if !v.IsNil() {
			return c.walk(v.Elem())
		}
	case reflect.Func:
		if !v.IsNil() && !c.opt.DropFuncs {
			return fmt.Errorf("a function of type %s: a closure would alias the original (Options.DropFuncs)", t)
		}
	case reflect.Chan, reflect.UnsafePointer:
		if !v.IsNil() {
			return fmt.Errorf("a %s: cannot be copied", t)
		}
	}
	return nil
}

// merge turns the regions into groups, allocating each group's object.
func (c *copier) merge() error {
	rs := c.regions
	slices.SortFunc(rs, func(a, b region) int {
		if a.addr != b.addr {
			if a.addr < b.addr {
				return -1
			}
			return 1
		}
		// Larger first, so that the containing object comes first.
		if a.size != b.size {
			if a.size > b.size {
				return -1
			}
			return 1
		}
		return 0
	})
	for i := 0; i < len(rs); {
		start, end := rs[i].addr, rs[i].addr+rs[i].size
		j := i + 1
		for j < len(rs) && rs[j].addr < end {
			end = max(end, rs[j].addr+rs[j].size)
			j++
		}
		members := rs[i:j]
		var typ reflect.Type
		for _, r := range members {
			if r.addr == start && r.size == end-start {
				typ = r.typ
				break
			}
		}
		if typ == nil {
			// Slices of one array that overlap without one containing the
			// others: an array over their union.
			var et reflect.Type
			for _, r := range members {
				e := r.elem
				if e == nil {
					e = r.typ
				}
				if et == nil {
					et = e
				}
				if e != et || (r.addr-start)%et.Size() != 0 {
					return errors.New("deepcopy: objects overlap in memory in a way the copy cannot reproduce")
				}
			}
			typ = reflect.ArrayOf(int((end-start)/et.Size()), et)
		}
		c.groups = append(c.groups, group{old: rs[i].ptr, addr: start, size: end - start, typ: typ, base: reflect.New(typ).UnsafePointer()})
		i = j
	}
	return nil
}

// mapAddr is where the object at old address a is in the copy.
func (c *copier) mapAddr(a uintptr) unsafe.Pointer {
	i, _ := slices.BinarySearchFunc(c.groups, a, func(g group, a uintptr) int {
		switch {
		case g.addr+g.size <= a:
			return -1
		case g.addr > a:
			return 1
		}
		return 0
	})
	g := &c.groups[i] // every address was recorded in the first pass
	return unsafe.Add(g.base, a-g.addr)
}

// copyInto is the second pass: dst (settable, zero) gets a copy of src.
func (c *copier) copyInto(dst, src reflect.Value) {
	t := src.Type()
	if !src.CanAddr() && (t.Kind() == reflect.Struct || t.Kind() == reflect.Array) {
		// Unexported fields of a value that is not addressable (a map key,
		// an interface's contents) are read through an addressable copy.
		tmp := reflect.New(t).Elem()
		tmp.Set(src)
		src = tmp
	}
	if !c.isDeep(t) {
		dst.Set(src)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		if t.Elem().Size() == 0 {
			dst.Set(reflect.New(t.Elem()))
			return
		}
		dst.Set(reflect.NewAt(t.Elem(), c.mapAddr(src.Pointer())))
	case reflect.Slice:
		switch {
		case src.IsNil():
		case src.Cap() == 0 || t.Elem().Size() == 0:
			dst.Set(reflect.MakeSlice(t, src.Len(), src.Cap()))
		default:
			s := reflect.SliceAt(t.Elem(), c.mapAddr(src.Pointer()), src.Cap()).Slice(0, src.Len())
			dst.Set(s.Convert(t))
		}
	case reflect.Array:
		for i := range src.Len() {
			c.copyInto(dst.Index(i), src.Index(i))
		}
	case reflect.Struct:
		for i := range src.NumField() {
			c.copyInto(open(dst.Field(i)), open(src.Field(i)))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		if m, ok := c.maps[src.Pointer()]; ok && m.IsValid() {
			dst.Set(m)
			return
		}
		m := reflect.MakeMapWithSize(t, src.Len())
		c.maps[src.Pointer()] = m
		it := src.MapRange()
		for it.Next() {
			k := reflect.New(t.Key()).Elem()
			c.copyInto(k, it.Key())
			v := reflect.New(t.Elem()).Elem()
			c.copyInto(v, it.Value())
			m.SetMapIndex(k, v)
		}
		dst.Set(m)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		e := src.Elem()
		v := reflect.New(e.Type()).Elem()
		c.copyInto(v, e)
		dst.Set(v)
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		// nil (the first pass refused the rest, or DropFuncs drops them)
	}
}
